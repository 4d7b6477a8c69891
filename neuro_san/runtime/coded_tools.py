"""Finding and running coded tools (neuro-san's ``CodedTool`` interface, unchanged).

``class: module.Class`` is looked up as neuro-san does, walking up the network's path
parts under each root of ``AGENT_TOOL_PATH`` (``:``-separated): for the network
``experimental/mdap`` that is ``<root>/experimental/mdap/module.py``, then
``<root>/experimental/module.py``, then (our addition, kept for networks in sub-folders)
``<root>/mdap/module.py``, then ``<root>/module.py``; last as an importable dotted path.
A file that lies under a ``sys.path`` entry (studio puts the project root on
``PYTHONPATH``) is imported by its dotted name (``coded_tools.experimental.mdap.module``),
so its own ``from coded_tools.… import …`` lines share the modules it loads; other files
are loaded from their path. Classes are resolved once per network and cached; an
instance is made per call, as neuro-san does. A class that also subclasses neuro-san's
``BranchActivation`` is built with neuro-san's five arguments and may call agents.
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
from neuro_san.internals.graph.activations.branch_activation import BranchActivation
from neuro_san.network.coded_refs import candidate_files
from neuro_san.network.spec import AgentSpec
from neuro_san.reservations.reservationist import StoreReservationist
from neuro_san.runtime.branch_calls import BranchCaller, agent_tool_spec
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
        candidates = candidate_files(self._roots, network, class_name)
        for path in candidates:
            if path.is_file():
                module = _import_file(path)
                break
        else:
            try:
                module = importlib.import_module(module_name)
            except ImportError as error:
                if error.name and error.name != module_name and not module_name.startswith(f"{error.name}."):
                    raise _import_failure(module_name, error) from error
                where = ", ".join(str(p) for p in candidates) or "(no AGENT_TOOL_PATH)"
                raise ConfigurationError(
                    f"coded tool {class_name!r} not found: looked in {where} and for an "
                    f"importable module {module_name!r} ({error})"
                ) from error
        cls = getattr(module, attr, None)
        if not isinstance(cls, type):
            raise ConfigurationError(f"coded tool {class_name!r}: {module_name} has no class {attr!r}")
        return cls


def _dotted_name(path: Path) -> str | None:
    """``path``'s module name under the ``sys.path`` entry farthest up, if any."""
    resolved = path.resolve().with_suffix("")
    best: str | None = None
    for entry in sys.path:
        try:
            parts = resolved.relative_to(Path(entry or ".").resolve()).parts
        except (ValueError, OSError):
            continue
        if parts and all(part.isidentifier() for part in parts):
            name = ".".join(parts)
            if best is None or len(name) > len(best):
                best = name
    return best


def _import_file(path: Path) -> Any:
    name = _dotted_name(path)
    if name is None:
        return _load_file(path)
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise _import_failure(str(path), error) from error
    except Exception as error:
        raise ConfigurationError(f"coded tool module {path} failed to import: {error}") from error
    if Path(getattr(module, "__file__", "") or "").resolve() != path.resolve():
        return _load_file(path)  # that dotted name is another module: load this file itself
    return module


def _import_failure(module: str, error: ImportError) -> ConfigurationError:
    missing = error.name or "?"
    if missing.startswith("neuro_san.") or missing == "neuro_san":
        reason = (
            f"it imports neuro-san's {missing!r}, which this server does not provide (neuro-san's "
            "internals are not part of its interface; docs/compatibility.md lists the ones provided)"
        )
    else:
        reason = f"it imports {missing!r}, which is not installed in the server's environment ({error})"
    return ConfigurationError(f"coded tool module {module} cannot be loaded: {reason}")


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
    except ImportError as error:
        del sys.modules[name]
        raise _import_failure(str(path), error) from error
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
    try:
        cls = ctx.coded_tools.resolve(ctx.network.name, agent.class_name)
    except ConfigurationError as problem:
        # Not found or not importable: the model is told why (the module and the reason), as
        # neuro-san turns its "Could not find class" into the tool's answer.
        log.warning("coded tool %s of %s: %s", agent.name, ctx.network.name, problem)
        return f"Error: {problem}"
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
        tool: Any
        if issubclass(cls, BranchActivation):
            # neuro-san's signature for tools that call agents (run_context, factory, args, spec, sly_data).
            tool = cls(BranchCaller(ctx, agent, origin), None, args, agent_tool_spec(agent), ctx.sly_data)
        else:
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
