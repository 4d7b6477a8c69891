"""The module import graph: no circles between modules nor between packages, and no layer
reaches up.

Every module under the packages of :data:`ROOTS` is parsed with ``ast`` (nothing is
imported); every ``import`` / ``from … import`` counts, function-local ones included, so
a circle cannot hide in a function. Imports under ``if TYPE_CHECKING:`` are left out:
they never run. A package is ``root.sub`` (``neuro_san.network``, ``gateway.host``) or a
root with its own modules (``gateway``: the composition root and the CLI). The layer rules
are the table :data:`FORBIDDEN`; a rule for a new package is one row.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Top-level packages whose modules are graphed: name → folder.
ROOTS: dict[str, Path] = {"neuro_san": REPO / "neuro_san", "gateway": REPO / "gateway"}

CORE = "neuro_san.core"
#: The settings registry: every package reads its settings there; it knows only the core.
SETTINGS = "neuro_san.settings"
#: Proto <-> core conversion, below both the service and the client library.
WIRE = "neuro_san.wire"
#: neuro-san-studio's applications, plugged into the middleware registry by the composer.
STUDIO = "neuro_san.studio"
#: The LLM package's folders (docs/architecture.md): the base modules below the stream readers,
#: below the adapters (one per API), below the providers (llm_config class -> adapter).
LLM_STREAMS = "neuro_san.llm.streams"
LLM_ADAPTERS = "neuro_san.llm.adapters"
LLM_PROVIDERS = "neuro_san.llm.providers"
LLM_BASE = tuple(f"neuro_san.llm.{name}" for name in ("interface", "errors", "http", "retry", "resolved", "turns"))
BELOW_SERVICE = (
    "neuro_san.network", "neuro_san.llm", "neuro_san.runtime", "neuro_san.middleware", "neuro_san.toolbox", STUDIO,
)
ABOVE_SERVICE = ("neuro_san.client", "neuro_san.cli", "gateway")
HTTP_PORT = ("gateway",)
#: The rooms of the HTTP port (docs/architecture.md).
HOST = "gateway.host"
TRANSCODER = "gateway.transcoder"
INVOKERS = "gateway.invokers"
#: The agents facade (typed chat events) the protocol front-ends reach agents through.
AGENTS = "gateway.agents"
FRONT_ENDS = ("gateway.mcp", "gateway.a2a", "gateway.agui", "gateway.openai", "gateway.playground")
COMPOSITION = ("gateway.composition", "gateway.cli")
#: What of the transcoder a protocol front-end may use: its JSON ⇄ proto codec only.
TRANSCODER_INSIDES = tuple(f"{TRANSCODER}.{name}" for name in ("frontend", "routes", "binder", "forward", "openapi"))
INVOKER_IMPLEMENTATIONS = tuple(f"{INVOKERS}.{name}" for name in ("channel", "inprocess", "local_call"))
#: The server's insides: the HTTP port reaches agents only through an invoker.
SERVER_INSIDES = (WIRE, *BELOW_SERVICE, "neuro_san.service", "neuro_san.client", "neuro_san.cli")
#: Every package of ours but the core and the settings themselves.
ABOVE_SETTINGS = (WIRE, *BELOW_SERVICE, "neuro_san.periodic", "neuro_san.reservations", "neuro_san.registries",
                  "neuro_san.coded_tools", STUDIO, "neuro_san.service", *ABOVE_SERVICE)


@dataclass(frozen=True)
class Rule:
    """Modules under one of ``importers`` (but not under ``unless``) import nothing under
    ``forbidden``."""

    importers: tuple[str, ...]
    forbidden: tuple[str, ...]
    why: str
    unless: tuple[str, ...] = ()


FORBIDDEN: tuple[Rule, ...] = (
    Rule(
        (CORE,),
        (SETTINGS, WIRE, *BELOW_SERVICE, "neuro_san.service", *ABOVE_SERVICE),
        "the core is transport-free and knows no layer above it (its readers take the settings as a Mapping)",
    ),
    Rule((SETTINGS,), ABOVE_SETTINGS, "the settings registry sits just above the core: everything reads it"),
    Rule(
        (WIRE,),
        (*BELOW_SERVICE, "neuro_san.service", *ABOVE_SERVICE),
        "the wire conversion knows only the core and the generated API",
    ),
    Rule(BELOW_SERVICE, ("neuro_san.service", *ABOVE_SERVICE), "networks, LLMs and the runtime know no transport"),
    Rule(("neuro_san.network",), ("neuro_san.middleware", "neuro_san.runtime", "neuro_san.reservations"),
         "the network loader parses every key but knows no package that runs them"),
    Rule(("neuro_san.toolbox", "neuro_san.periodic"), ("neuro_san.network", "neuro_san.runtime"),
         "the toolbox and periodic keys' parsers sit below the network loader that calls them"),
    Rule(("neuro_san.middleware",), ("neuro_san.runtime",),
         "middleware is what the runtime calls (through middleware.chain); it knows no runtime module"),
    Rule((STUDIO,), ("neuro_san.runtime",),
         "studio's classes are middleware: the runtime reaches them through the chain; they know no runtime module"),
    Rule(("neuro_san.core", "neuro_san.wire", "neuro_san.network", "neuro_san.llm", "neuro_san.runtime",
          "neuro_san.middleware", "neuro_san.toolbox", "neuro_san.periodic", "neuro_san.reservations",
          "neuro_san.service"),
         (STUDIO,),
         "studio's classes plug into the middleware registry; only the composer (the command line) names them"),
    Rule(LLM_BASE, (LLM_STREAMS, LLM_ADAPTERS, LLM_PROVIDERS),
         "the LLM interface, errors and HTTP plumbing are what streams, adapters and providers build on"),
    Rule((LLM_STREAMS,), (LLM_ADAPTERS, LLM_PROVIDERS),
         "a stream reader reads one wire format back into a reply; it knows no adapter and no provider"),
    Rule((LLM_ADAPTERS,), (LLM_PROVIDERS, "neuro_san.llm.config", "neuro_san.llm.factory", "neuro_san.llm.checks"),
         "an adapter speaks one API; which llm_config class builds it is the providers' business"),
    Rule(("neuro_san.service",), ABOVE_SERVICE, "the gRPC service knows neither its clients nor the HTTP port"),
    Rule(
        ("neuro_san.client",),
        ("neuro_san.service", "neuro_san.cli", *HTTP_PORT),
        "the client library speaks the wire (neuro_san.wire), not the server's insides",
    ),
    Rule(
        ("neuro_san",),
        HTTP_PORT,
        "only the command line composes the HTTP port with the server",
        unless=("neuro_san.cli",),
    ),
    Rule(
        ("gateway",),
        SERVER_INSIDES,
        "the HTTP port reaches agents only through an invoker: it knows the core and the API of the server",
    ),
    Rule((HOST,), (TRANSCODER, *FRONT_ENDS, *COMPOSITION),
         "the host imports no front-end: the composition root lists them"),
    Rule((INVOKERS,), (HOST, TRANSCODER, *FRONT_ENDS, *COMPOSITION), "the invokers know only the service's API"),
    Rule((TRANSCODER,), (*FRONT_ENDS, *COMPOSITION, *INVOKER_IMPLEMENTATIONS),
         "the transcoder knows only descriptors and an invoker"),
    Rule(("gateway.state",), (HOST, TRANSCODER, INVOKERS, *FRONT_ENDS, *COMPOSITION),
         "the shared front-end state is a store the front-ends use; it knows none of them"),
    Rule((AGENTS,), (*FRONT_ENDS, *COMPOSITION, *INVOKER_IMPLEMENTATIONS, *TRANSCODER_INSIDES, "gateway.state"),
         "the agents facade serves the front-ends through the invoker seam; it knows none of them"),
    Rule((HOST, TRANSCODER, INVOKERS, "gateway.state"), (AGENTS,),
         "the agents facade is for the protocol front-ends: below it nothing uses it"),
    *(
        Rule((room,), (*(other for other in FRONT_ENDS if other != room), *COMPOSITION, *INVOKER_IMPLEMENTATIONS,
                       *TRANSCODER_INSIDES),
             "a front-end reaches agents only through the invoker seam and knows no other room")
        for room in FRONT_ENDS
    ),
)


#: Circles known and owned elsewhere, each to be removed with its fix (none today).
KNOWN_CIRCLES: tuple[frozenset[str], ...] = ()


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for root_name, folder in ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [root_name, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:  # the else branch does run
                yield from _import_nodes(ast.Module(body=[other], type_ignores=[]))
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _import_nodes(child)


def _imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules ``module`` imports: a submodule when ``from pkg import sub`` names one."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            targets.add(candidate if candidate in known else base)
    return targets


def package_of(module: str, path: Path) -> str:
    """The package a module belongs to: ``root.sub`` for anything under a sub-folder of a
    root (``neuro_san.network.builder`` → ``neuro_san.network``), the root itself for the
    root's own modules (``gateway.composition`` is in ``gateway``, which also composes the rooms)."""
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and path.name != "__init__.py"):
        return parts[0]
    return ".".join(parts[:2])


@functools.cache
def package_graph() -> dict[str, set[str]]:
    """Package → the packages its modules import (ours only; function-local imports count)."""
    modules = _modules()
    packages = {module: package_of(module, path) for module, path in modules.items()}
    graph: dict[str, set[str]] = {package: set() for package in packages.values()}
    for module, targets in import_graph().items():
        for target in targets:
            if target.partition(".")[0] not in ROOTS:
                continue
            # Not a file of ours (the generated ``neuro_san.api``): a package of its own.
            owner = packages.get(target) or ".".join(target.split(".")[:2])
            if owner != packages[module]:
                graph[packages[module]].add(owner)
    return graph


def package_edges(source: str, target: str) -> list[str]:
    """The module imports behind the package edge ``source`` → ``target`` (for messages)."""
    modules = _modules()
    return sorted(
        f"{module} imports {imported}"
        for module, imported_set in import_graph().items()
        if package_of(module, modules[module]) == source
        for imported in imported_set
        if imported in modules and package_of(imported, modules[imported]) == target
    )


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module → the modules it imports (any module, ours or not)."""
    modules = _modules()
    known = set(modules)
    return {module: _imported(module, path, known) - {module} for module, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start] & graph.keys())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target] & graph.keys()))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_graph_is_read() -> None:
    # The checks below mean something only if imports are found, function-local ones too.
    graph = import_graph()
    assert "neuro_san.llm.config" in graph["neuro_san.llm.factory"]
    assert "neuro_san.llm.adapters.scripted" in graph["neuro_san.llm.providers"]  # inside a function
    assert "neuro_san.runtime.context" not in graph["neuro_san.runtime.external"]  # under TYPE_CHECKING
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    modules = _modules()
    assert package_of("gateway.composition", modules["gateway.composition"]) == "gateway"
    assert package_of("gateway.host", modules["gateway.host"]) == "gateway.host"
    assert package_of("neuro_san.network.builder", modules["neuro_san.network.builder"]) == "neuro_san.network"
    assert "neuro_san.network" in package_graph()["neuro_san.runtime"]


def test_no_import_circles() -> None:
    cycles = [cycle for cycle in _cycles(import_graph()) if frozenset(cycle) not in KNOWN_CIRCLES]
    assert not cycles, "import circles (function-local imports count):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in cycles
    )


def test_no_package_circles() -> None:
    # Modules without a circle can still form packages that import each other (network's
    # builder importing middleware's parser while middleware imports network's files):
    # then neither package can be read, tested or moved without the other.
    graph = package_graph()
    assert {"neuro_san.network", "neuro_san.middleware", STUDIO, "gateway", "gateway.host"} <= graph.keys()
    cycles = _cycles(graph)
    assert not cycles, "package circles (function-local imports count):\n" + "\n".join(
        " <-> ".join(cycle) + "".join(_edge_line(source, target) for source in cycle for target in cycle
                                      if target in graph[source])
        for cycle in cycles
    )


def _edge_line(source: str, target: str) -> str:
    imports = package_edges(source, target)
    return f"\n    {source} -> {target}: {len(imports)} import(s), e.g. {imports[0]}"


@pytest.mark.parametrize("rule", FORBIDDEN, ids=lambda rule: rule.importers[0])
def test_no_layer_reaches_up(rule: Rule) -> None:
    graph = import_graph()
    broken = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _under(module, rule.importers) and not _under(module, rule.unless)
        for target in targets
        if _under(target, rule.forbidden)
    )
    assert not broken, f"{rule.why}:\n" + "\n".join(broken)
