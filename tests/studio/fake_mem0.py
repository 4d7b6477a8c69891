"""A fake Mem0 Platform on loopback: the few endpoints mem0ai 0.1.x's ``AsyncMemoryClient``
calls, in its wire format, over real HTTP.

- ``GET /v1/ping/``: the key check the client's constructor makes (it answers the key's
  organisation and project, which the client then sends with every call);
- ``POST /v1/memories/``: add (only ``infer: false``, the verbatim store the memory
  backend needs; an inferring add is answered 400 so a test sees it);
- ``POST /v2/memories/search/``: the ``{"AND": [...]}`` filters on ``user_id``,
  ``app_id``, ``agent_id`` and ``metadata``; the score is the share of the query's words
  found in the memory (a stand-in for Mem0's similarity), cut at ``threshold`` (Mem0's
  default 0.3) and ``top_k`` (default 10); answered as a list, as the v2 search was;
- ``PUT`` / ``DELETE /v1/memories/{id}/``.

Every request needs ``Authorization: Token <api_key>`` (else 401, as the Platform).
Requests are recorded (method, path, JSON body) and the memories are kept in
:attr:`FakeMem0Platform.memories`.
"""

from __future__ import annotations

import itertools
from typing import Any

from aiohttp import web

DEFAULT_THRESHOLD = 0.3


class FakeMem0Platform:
    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.memories: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> FakeMem0Platform:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/v1/ping/", self._ping)
        app.router.add_post("/v1/memories/", self._add)
        app.router.add_post("/v2/memories/search/", self._search)
        app.router.add_put("/v1/memories/{memory_id}/", self._update)
        app.router.add_delete("/v1/memories/{memory_id}/", self._delete)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        self.requests.append((request.method, request.path, body))
        if request.headers.get("Authorization") != f"Token {self.api_key}":
            return web.json_response({"detail": "Invalid API key"}, status=401)
        return await handler(request)

    async def _ping(self, request: web.Request) -> web.Response:
        # The client (0.1.115) refuses to start without the organisation and project it names.
        body = {"status": "ok", "org_id": "org-fake", "project_id": "project-fake", "user_email": "t@example.invalid"}
        return web.json_response(body)

    async def _add(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("infer") is not False:
            return web.json_response({"detail": "this fake stores only infer=false memories"}, status=400)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return web.json_response({"detail": "messages must be a non-empty list"}, status=400)
        memory_id = f"mem-{next(self._ids)}"
        self.memories[memory_id] = {
            "id": memory_id,
            "memory": "\n".join(str(message.get("content", "")) for message in messages),
            "user_id": body.get("user_id"),
            "app_id": body.get("app_id"),
            "agent_id": body.get("agent_id"),
            "metadata": body.get("metadata") or {},
        }
        return web.json_response({"results": [{"id": memory_id, "memory": self.memories[memory_id]["memory"],
                                               "event": "ADD"}]})  # fmt: skip

    async def _search(self, request: web.Request) -> web.Response:
        body = await request.json()
        filters = body.get("filters")
        if not isinstance(filters, dict) or not isinstance(filters.get("AND"), list):
            return web.json_response({"detail": "filters must be {'AND': [...]}"}, status=400)
        words = {word for word in str(body.get("query", "")).lower().split() if word}
        threshold = float(body.get("threshold", DEFAULT_THRESHOLD))
        hits = []
        for memory in self.memories.values():
            if not all(_matches(memory, clause) for clause in filters["AND"]):
                continue
            score = sum(word in memory["memory"].lower() for word in words) / len(words) if words else 0.0
            if score >= threshold:
                hits.append({**memory, "score": round(score, 4)})
        hits.sort(key=lambda hit: hit["score"], reverse=True)
        return web.json_response(hits[: int(body.get("top_k", 10))])

    async def _update(self, request: web.Request) -> web.Response:
        memory = self.memories.get(request.match_info["memory_id"])
        if memory is None:
            return web.json_response({"detail": "Memory not found"}, status=404)
        body = await request.json()
        if "text" in body:
            memory["memory"] = body["text"]
        if "metadata" in body:
            memory["metadata"] = body["metadata"]
        return web.json_response(memory)

    async def _delete(self, request: web.Request) -> web.Response:
        if self.memories.pop(request.match_info["memory_id"], None) is None:
            return web.json_response({"detail": "Memory not found"}, status=404)
        return web.json_response({"message": "Memory deleted successfully!"})


def _matches(memory: dict[str, Any], clause: Any) -> bool:
    if not isinstance(clause, dict) or len(clause) != 1:
        return False
    ((key, wanted),) = clause.items()
    if key == "metadata":
        return isinstance(wanted, dict) and all(memory["metadata"].get(k) == v for k, v in wanted.items())
    return key in ("user_id", "app_id", "agent_id") and memory.get(key) == wanted
