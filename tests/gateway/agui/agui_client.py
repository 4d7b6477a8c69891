"""A small AG-UI client for the tests: POST a RunAgentInput, read the event stream as it
comes, and check every event against the official ``ag-ui-protocol`` models."""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ag_ui.core import BaseEvent, Event
from pydantic import TypeAdapter

from tests.support.node_packages import node_with

EVENT = TypeAdapter(Event)
#: The official AG-UI client's test folder (``npm install`` once, node_modules git-ignored).
NODE_DIR = Path(__file__).resolve().parents[2] / "node_agui"


def node_or_skip() -> Path:
    """``node``, with @ag-ui/client installed; skips (saying why) without node, npm or the registry."""
    return Path(node_with(NODE_DIR, "@ag-ui/client", "AG-UI client"))


def run_input(text: str, thread_id: str | None = None, *, earlier: list[dict[str, Any]] | None = None,
              **extra: Any) -> dict[str, Any]:
    """A RunAgentInput whose last message is the user's ``text``."""
    messages = [*(earlier or []), {"id": uuid.uuid4().hex, "role": "user", "content": text}]
    body: dict[str, Any] = {"threadId": thread_id or uuid.uuid4().hex, "runId": uuid.uuid4().hex,
                            "messages": messages, "state": {}, "tools": [], "context": [], "forwardedProps": {}}
    body.update(extra)
    return body


def validated(raw: str) -> BaseEvent:
    """One ``data:`` payload as the protocol's event model; fails on any field it does not
    define (the models allow extras, so the event is written back and compared)."""
    event = EVENT.validate_json(raw)
    assert event.model_dump(mode="json", by_alias=True, exclude_none=True) == json.loads(raw), raw
    return event


@dataclass
class Reply:
    status: int
    headers: Mapping[str, str]
    #: The events (SSE answers) or None (a JSON error).
    events: list[BaseEvent] = field(default_factory=list)
    body: Any = None

    @property
    def types(self) -> list[str]:
        return [str(event.type.value) for event in self.events]

    def of(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type.value == kind]

    @property
    def text(self) -> str:
        return "".join(event.delta for event in self.of("TEXT_MESSAGE_CONTENT"))


def _connect(base: str, path: str, body: bytes, headers: Mapping[str, str]) -> http.client.HTTPResponse:
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    connection.request("POST", path, body=body,
                       headers={"Content-Type": "application/json", "Accept": "text/event-stream", **headers})
    return connection.getresponse()


def stream(base: str, agent: str, body: Any, headers: Mapping[str, str] | None = None
           ) -> Iterator[tuple[http.client.HTTPResponse, BaseEvent]]:
    """The events of one run as they arrive (each validated)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = _connect(base, f"/ag-ui/{agent}", raw, headers or {})
    assert response.status == 200, (response.status, response.read()[:500])
    assert response.headers["Content-Type"].startswith("text/event-stream")
    while line := response.readline():
        text = line.decode().rstrip("\r\n")
        if text.startswith("data: "):
            yield response, validated(text[len("data: "):])
    response.close()


def post(base: str, agent: str, body: Any, headers: Mapping[str, str] | None = None) -> Reply:
    """One whole run (or its JSON error)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = _connect(base, f"/ag-ui/{agent}", raw, headers or {})
    content = response.read()
    reply = Reply(response.status, {k.lower(): v for k, v in response.getheaders()})
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        for chunk in content.decode().split("\n\n"):
            if chunk.startswith("data: "):
                reply.events.append(validated(chunk[len("data: "):]))
    else:
        reply.body = json.loads(content)
    return reply


def check_order(events: list[BaseEvent]) -> None:
    """The rules AG-UI clients enforce: one run, text and reasoning inside their START/END,
    tool calls' ARGS/END/RESULT after their START, steps finished as started."""
    types = [event.type.value for event in events]
    assert types[0] == "RUN_STARTED" and types[-1] in ("RUN_FINISHED", "RUN_ERROR"), types
    assert types.count("RUN_STARTED") == 1 and types.count("RUN_FINISHED") + types.count("RUN_ERROR") == 1
    open_text: str | None = None
    calls: set[str] = set()
    steps: set[str] = set()
    for event in events:
        kind = event.type.value
        message_id = getattr(event, "message_id", None)
        if kind == "TEXT_MESSAGE_START":
            assert open_text is None, "one text message at a time"
            open_text = message_id
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert message_id == open_text and event.delta  # type: ignore[attr-defined]
        elif kind == "TEXT_MESSAGE_END":
            assert message_id == open_text
            open_text = None
        else:
            assert open_text is None, f"{kind} while a text message is open"
        if kind == "TOOL_CALL_START":
            calls.add(event.tool_call_id)  # type: ignore[attr-defined]
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"):
            assert event.tool_call_id in calls  # type: ignore[attr-defined]
        elif kind == "STEP_STARTED":
            assert event.step_name not in steps  # type: ignore[attr-defined]
            steps.add(event.step_name)  # type: ignore[attr-defined]
        elif kind == "STEP_FINISHED":
            steps.remove(event.step_name)  # type: ignore[attr-defined]
    assert not steps, f"steps never finished: {steps}"
