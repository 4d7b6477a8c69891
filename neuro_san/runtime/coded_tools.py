"""Finding and running coded tools (neuro-san's ``CodedTool`` interface, unchanged).

``class: module.Class`` is looked up, in order, as ``<root>/<network>/module.py`` then
``<root>/module.py`` for each root of ``AGENT_TOOL_PATH`` (``:``-separated), and last
as an importable dotted path. Modules are loaded from their files, so the roots need
not be on ``PYTHONPATH``. Classes are resolved once per network and cached; an
instance is made per call, as neuro-san does.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import logging
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from neuro_san.core.errors import ConfigurationError
from neuro_san.core.messages import MessageType, OriginPath, origin_str
from neuro_san.network.spec import AgentSpec
from neuro_san.reservations.reservationist import StoreReservationist
from neuro_san.runtime.context import RequestContext
from neuro_san.runtime.journal_shapes import coded_tool_result

log = logging.getLogger(__name__)


class CodedToolResolver:
    """Resolves ``class`` names to classes; shared by all requests."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self._roots = [Path(r) for r in roots]
        self._cache: dict[tuple[str, str], type] = {}
        self._lock = threading.Lock()

    def resolve(self, network: str, class_name: str) -> type:
        key = (network, class_name)
        found = self._cache.get(key)
        if found is None:
            with self._lock:
                found = self._cache.get(key) or self._load(network, class_name)
                self._cache[key] = found
        return found

    def _load(self, network: str, class_name: str) -> type:
        module_name, _, attr = class_name.rpartition(".")
        if not module_name:
            raise ConfigurationError(f"class {class_name!r} must be written module.Class")
        relative = Path(*module_name.split(".")).with_suffix(".py")
        # A network in a sub-folder (deep/math_guy) also finds the tools of its base name.
        folders = dict.fromkeys([network, network.rsplit("/", 1)[-1]])
        candidates = [root / folder / relative for root in self._roots for folder in folders]
        candidates += [root / relative for root in self._roots]
        for path in candidates:
            if path.is_file():
                module = _load_file(path)
                break
        else:
            try:
                module = importlib.import_module(module_name)
            except ImportError as error:
                where = ", ".join(str(p) for p in candidates) or "(no AGENT_TOOL_PATH)"
                raise ConfigurationError(
                    f"coded tool {class_name!r} not found: looked in {where} and for an "
                    f"importable module {module_name!r} ({error})"
                ) from error
        cls = getattr(module, attr, None)
        if not isinstance(cls, type):
            raise ConfigurationError(f"coded tool {class_name!r}: {module_name} has no class {attr!r}")
        return cls


def _load_file(path: Path) -> Any:
    name = "neuro_san_coded_tools." + "_".join(path.resolve().with_suffix("").parts[1:])
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot load coded tool module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise ConfigurationError(f"coded tool module {path} failed to import: {error}") from error
    return module


class _ProgressReporter:
    """``args["progress_reporter"]``: reports become AGENT_PROGRESS messages."""

    def __init__(self, ctx: RequestContext, origin: OriginPath) -> None:
        self._ctx = ctx
        self._origin = origin

    async def async_report_progress(self, structure: dict[str, Any], content: str = "") -> None:
        self._ctx.emit(MessageType.AGENT_PROGRESS, self._origin, content, structure=dict(structure))


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _result_text(result: Any) -> str:
    """A tool's result as the text the model sees: JSON for dicts and lists."""
    if isinstance(result, str):
        return result
    if isinstance(result, (dict, list)):
        return json.dumps(_json_safe(result), ensure_ascii=False)
    return str(result)


async def run_coded_tool(
    ctx: RequestContext, agent: AgentSpec, origin: OriginPath, arguments: Mapping[str, Any]
) -> str:
    assert agent.class_name is not None
    cls = ctx.coded_tools.resolve(ctx.network.name, agent.class_name)
    origin_list = [{"tool": o.tool, "instantiation_index": o.instantiation_index} for o in origin]
    # The args written in the network win over the LLM's, as in neuro-san (so a network
    # can pin a value; a default in the parameters is the way to let the LLM choose).
    args: dict[str, Any] = {**arguments, **agent.args, "origin": origin_list, "origin_str": origin_str(origin)}
    ctx.emit(
        MessageType.AGENT,
        origin,
        "Received arguments:",
        structure={"tool_start": True, "tool_args": _json_safe(args)},
    )
    args["progress_reporter"] = _ProgressReporter(ctx, origin)
    if agent.allow.reservations and ctx.reservations is not None:
        args["reservationist"] = StoreReservationist(ctx.reservations)
    error = False
    result: Any = None
    try:
        tool = cls()
        try:
            result = await tool.async_invoke(args, ctx.sly_data)
        except NotImplementedError:
            # A sync-only tool runs in a worker thread so the loop never blocks.
            result = await asyncio.to_thread(tool.invoke, args, ctx.sly_data)
        text = _result_text(result)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the model is told, and carries on
        log.info("coded tool %s raised %s", agent.name, type(exc).__name__)
        text = f"Error: {exc}"
        error = True
    ctx.emit(MessageType.AGENT, origin, "Got result:", structure=coded_tool_result(result, text, error))
    return text
