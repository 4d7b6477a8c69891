"""The runtime's modules import each other one way only (no circle): the tool kinds
depend on the loop and the interface, never the other way round. Imports under
``if TYPE_CHECKING:`` are for annotations only and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "neuro_san" / "runtime"
PREFIX = "neuro_san.runtime."


def _runtime_imports(path: Path) -> set[str]:
    """Runtime modules ``path`` imports when it is executed (any depth, TYPE_CHECKING aside)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            found.add(node.module.removeprefix(PREFIX))
        elif isinstance(node, ast.ImportFrom) and node.module == "neuro_san.runtime":
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix(PREFIX) for a in node.names if a.name.startswith(PREFIX))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def test_runtime_modules_form_no_import_circle() -> None:
    graph = {p.stem: _runtime_imports(p) for p in RUNTIME.glob("*.py") if p.stem != "__init__"}
    assert graph["agent_loop"] >= {"tools", "context"}  # the scan sees real imports
    done: set[str] = set()

    def walk(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import circle: {' -> '.join((*path, module))}"
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            walk(target, (*path, module))
        done.add(module)

    for module in sorted(graph):
        walk(module, ())


def test_the_loop_and_the_call_wrapper_know_no_tool_kind() -> None:
    kinds = {"tool_kinds", "tool_binding", "coded_tools", "external", "mcp_server_tools", "mcp_sessions"}
    for module in ("agent_loop", "tools", "tool_interface", "context"):
        assert not _runtime_imports(RUNTIME / f"{module}.py") & kinds, module
