"""Terminal output of the client commands: styles, messages, and network pictures.

Colour only on a terminal, and never when ``NO_COLOR`` is set or ``TERM=dumb``:
piped output is plain text that scripts can read.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from neuro_san.core.messages import ChatContext, ChatMessage, MessageType, OriginPath, origin_str
from neuro_san.settings import process_env

if TYPE_CHECKING:
    from neuro_san.client.types import Connectivity

FORMATS = ("tree", "mermaid", "dot", "json")
_DEPTH_COLOURS = ("36", "35", "33", "32", "34")  # cyan, magenta, yellow, green, blue


def wants_colour(stream: TextIO) -> bool:
    settings = process_env()
    if "NO_COLOR" in settings or settings.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Style:
    """ANSI styling that is a no-op when disabled."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def depth(self, level: int, text: str) -> str:
        return self._wrap(_DEPTH_COLOURS[level % len(_DEPTH_COLOURS)], text)


# --- messages -----------------------------------------------------------------------


def _origins_json(path: OriginPath) -> list[dict[str, Any]]:
    return [{"tool": o.tool, "instantiation_index": o.instantiation_index} for o in path]


def _context_json(context: ChatContext) -> dict[str, Any]:
    return {
        "chat_histories": [
            {"origin": _origins_json(h.origin), "messages": [message_json(m) for m in h.messages]}
            for h in context.chat_histories
        ]
    }


def message_json(message: ChatMessage) -> dict[str, Any]:
    """A message as the wire's JSON (snake_case, enum names, empty fields left out)."""
    out: dict[str, Any] = {"type": message.type.name}
    if message.text:
        out["text"] = message.text
    if message.mime_data:
        out["mime_data"] = [
            {"mime_type": m.mime_type, "mime_bytes": base64.b64encode(m.mime_bytes).decode()} for m in message.mime_data
        ]
    if message.origin:
        out["origin"] = _origins_json(message.origin)
    if message.structure is not None:
        out["structure"] = message.structure
    if message.chat_context is not None:
        out["chat_context"] = _context_json(message.chat_context)
    if message.tool_result_origin:
        out["tool_result_origin"] = _origins_json(message.tool_result_origin)
    if message.sly_data:
        out["sly_data"] = message.sly_data
    if message.delta_kind:
        out["delta_kind"] = message.delta_kind.name
    return out


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def token_usage(structure: dict[str, Any] | None) -> str | None:
    """A token-usage report in one line, or None when ``structure`` is not one."""
    if not structure or "total_tokens" not in structure or "caveats" not in structure:
        return None
    caveats = structure.get("caveats") or [""]
    scope = "request total" if "models" in structure or str(caveats[0]).startswith("Request total") else "network"
    return (f"token usage ({scope}): {structure.get('total_tokens')} tokens ({structure.get('prompt_tokens')} prompt, "
            f"{structure.get('completion_tokens')} completion) in {structure.get('successful_requests')} LLM calls, "
            f"{structure.get('time_taken_in_seconds')} s")


def thinking_text(message: ChatMessage) -> str:
    """What a MAXIMAL message says, its structure folded in: the arguments after "Invoking: … with:"
    and "Received arguments:", the output after "Got result:", token usage in one line."""
    text, structure = message.text, message.structure or {}
    if "invoking_start" in structure and "params" in structure:
        return f"{text} {compact_json(structure['params'])}"
    if structure.get("tool_start") and isinstance(structure.get("tool_args"), dict):
        args = {k: v for k, v in structure["tool_args"].items() if k not in ("origin", "origin_str")}
        return f"{text} {compact_json(args)}"
    if structure.get("tool_end") and "tool_output" in structure:
        output = structure["tool_output"]
        shown = output if isinstance(output, str) else compact_json(output)
        return f"{text} {'(error) ' if structure.get('tool_error') else ''}{shown}"
    usage = token_usage(message.structure)
    if usage is not None and not text:
        return usage
    if not text and message.structure:
        return compact_json(message.structure)
    return text


def thinking_lines(message: ChatMessage, style: Style) -> list[str]:
    """One message of a MAXIMAL stream: indented by its origin depth, prefixed by its
    dotted origin, continuation lines aligned under the text."""
    depth = max(len(message.origin) - 1, 0)
    indent = "  " * depth
    who = origin_str(message.origin) or "(framework)"
    text = thinking_text(message)
    if not text and message.type is MessageType.AGENT_PROGRESS:
        text = "…"
    label = message.type.name.lower()
    head = f"{indent}{style.depth(depth, who)} {style.dim(label + ':')} "
    lines = text.splitlines() or [""]
    pad = indent + "    "
    return [head + lines[0], *(pad + line for line in lines[1:])]


# --- connectivity -------------------------------------------------------------------


def render_connectivity(connectivity: Connectivity, agent: str, fmt: str, style: Style) -> str:
    renderers: dict[str, Callable[[Connectivity, str, Style], str]] = {
        "tree": _tree,
        "mermaid": _mermaid,
        "dot": _dot,
        "json": lambda c, _a, _s: json.dumps(c.to_dict(), indent=2, ensure_ascii=False),
    }
    return renderers[fmt](connectivity, agent, style)


def _graph(connectivity: Connectivity) -> tuple[list[str], dict[str, tuple[str, ...]], dict[str, str]]:
    """Nodes in first-seen order (front man first), edges, and each node's kind."""
    nodes: list[str] = []
    edges: dict[str, tuple[str, ...]] = {}
    kinds: dict[str, str] = {}
    for entry in connectivity.entries:
        for name in (entry.origin, *entry.tools):
            if name not in kinds:
                nodes.append(name)
                kinds[name] = ""
        edges[entry.origin] = entry.tools
        kinds[entry.origin] = entry.display_as
    return nodes, edges, kinds


def _tree(connectivity: Connectivity, agent: str, style: Style) -> str:
    nodes, edges, kinds = _graph(connectivity)
    if not nodes:
        return f"{agent}: no nodes disclosed"
    lines: list[str] = []
    shown: set[str] = set()

    def label(name: str, depth: int) -> str:
        kind = f" ({kinds[name]})" if kinds.get(name) else ""
        return style.depth(depth, name) + style.dim(kind)

    def walk(name: str, prefix: str, depth: int, path: tuple[str, ...]) -> None:
        children = edges.get(name, ())
        for i, child in enumerate(children):
            last = i == len(children) - 1
            branch = "└── " if last else "├── "
            if child in path:
                lines.append(f"{prefix}{branch}{label(child, depth + 1)}{style.dim(' ↺ (cycle)')}")
                continue
            repeated = child in shown and edges.get(child)
            lines.append(f"{prefix}{branch}{label(child, depth + 1)}{style.dim(' (see above)') if repeated else ''}")
            if not repeated:
                shown.add(child)
                walk(child, prefix + ("    " if last else "│   "), depth + 1, (*path, child))

    # The front man first; then any node it does not reach (should a network disclose one).
    for root in nodes:
        if root in shown:
            continue
        if lines:
            lines.append("")
        shown.add(root)
        lines.append(label(root, 0))
        walk(root, "", 0, (root,))
    return "\n".join(lines)


_MERMAID_SHAPES = {"coded_tool": ('[["', '"]]'), "external_agent": ('(["', '"])'), "": ('("', '")')}


def _mermaid(connectivity: Connectivity, agent: str, style: Style) -> str:
    nodes, edges, kinds = _graph(connectivity)
    ids = {name: f"n{i}" for i, name in enumerate(nodes)}
    lines = ["flowchart TD"]
    for name in nodes:
        left, right = _MERMAID_SHAPES.get(kinds[name], ('["', '"]'))
        text = name.replace('"', "#quot;")
        lines.append(f"    {ids[name]}{left}{text}{right}")
    for origin, tools in edges.items():
        lines.extend(f"    {ids[origin]} --> {ids[tool]}" for tool in tools)
    return "\n".join(lines)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_DOT_SHAPES = {"coded_tool": "box", "external_agent": "hexagon", "llm_agent": "ellipse"}


def _dot(connectivity: Connectivity, agent: str, style: Style) -> str:
    nodes, edges, kinds = _graph(connectivity)
    lines = [f"digraph {_dot_quote(agent)} {{", "    rankdir=TB;"]
    for name in nodes:
        shape = _DOT_SHAPES.get(kinds[name], "ellipse")
        lines.append(f"    {_dot_quote(name)} [shape={shape}];")
    for origin, tools in edges.items():
        lines.extend(f"    {_dot_quote(origin)} -> {_dot_quote(tool)};" for tool in tools)
    lines.append("}")
    return "\n".join(lines)
