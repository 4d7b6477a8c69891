"""Headers and allow-lists for MCP servers: ``sly_data.http_headers`` and
``MCP_SERVERS_INFO_FILE``, as neuro-san 0.7.15 takes them.

The info file (HOCON, YAML or JSON) maps a server URL, exactly as written in the
network, to ``{"http_headers": {name: value}, "tools": [allow-list]}``. It is read once,
when the server starts; a missing file means no entries (as in neuro-san), a malformed
one stops the start with the file, key path and reason (neuro-san would ignore it).

Headers come from the first source that has an entry for the URL, used whole (never
merged): ``sly_data["http_headers"][url]``, then the info file.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name
from neuro_san.network.files import read_document

log = logging.getLogger(__name__)

ENV_VAR = "MCP_SERVERS_INFO_FILE"


@dataclass(frozen=True, slots=True)
class McpServerInfo:
    headers: Mapping[str, str] | None = None
    tools: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class McpServersInfo:
    servers: Mapping[str, McpServerInfo] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> McpServersInfo:
        path = env.get(ENV_VAR, "").strip()
        return cls.load(Path(path)) if path else cls()

    @classmethod
    def load(cls, path: Path) -> McpServersInfo:
        if not path.exists():
            log.info("%s %s does not exist: no MCP server headers or allow-lists from it", ENV_VAR, path)
            return cls()
        document = read_document(path)
        file = str(path)
        if not isinstance(document, dict):
            raise NetworkLoadError(file, "", f"must map MCP server URLs to settings, not {type_name(document)}")
        servers: dict[str, McpServerInfo] = {}
        for url, entry in document.items():
            servers[str(url).strip()] = _entry(entry, file, str(url))
        return cls(servers)

    def headers(self, url: str, sly_data: Mapping[str, Any]) -> dict[str, str]:
        """The headers for requests to ``url`` during a request with ``sly_data``."""
        given = sly_data.get("http_headers")
        if given is not None and not isinstance(given, Mapping):
            log.error("sly_data.http_headers must be a dict of URL to headers, not %s; ignored", type_name(given))
        elif given is not None and isinstance(given.get(url), Mapping):
            return {str(k): str(v) for k, v in given[url].items()}
        info = self.servers.get(url)
        return dict(info.headers) if info is not None and info.headers else {}

    def tools(self, url: str) -> tuple[str, ...] | None:
        info = self.servers.get(url)
        return info.tools if info is not None else None


def _entry(raw: Any, file: str, url: str) -> McpServerInfo:
    where = f'"{url}"'
    if not isinstance(raw, dict):
        raise NetworkLoadError(file, where, f"must be a dict with http_headers and/or tools, not {type_name(raw)}")
    unknown = sorted(str(k) for k in raw if k not in ("http_headers", "tools"))
    if unknown:
        raise NetworkLoadError(file, where, f"takes only http_headers and tools, not {', '.join(unknown)}")
    headers = raw.get("http_headers")
    if headers is not None:
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise NetworkLoadError(file, f"{where}.http_headers", "must map header names to string values")
    tools = raw.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, str) and t.strip() for t in tools):
            raise NetworkLoadError(file, f"{where}.tools", "must be a list of MCP tool names")
    return McpServerInfo(
        headers={str(k): v for k, v in headers.items()} if headers else None,
        tools=tuple(t.strip() for t in tools) if tools else None,
    )
