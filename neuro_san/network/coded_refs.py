"""Where a coded tool's ``class: module.Class`` is looked for, and the load-time check
that it is there.

The lookup order is neuro-san's, described in :mod:`neuro_san.runtime.coded_tools`
(which imports the class at its first call, from :func:`candidate_files`). The check at
load imports nothing of the tool's own code: a file found is read with ``ast`` for a
definition of the class; a module found only as a dotted name is taken as it is.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import neuro_san

#: The coded tools of the bundled example networks, a root after AGENT_TOOL_PATH's.
BUNDLED_TOOLS = Path(neuro_san.__file__).resolve().parent / "coded_tools"


def folders(network: str) -> list[str]:
    """The network's folders under a root, most specific first: every prefix of its
    path parts (neuro-san's walk up), then its base name (ours)."""
    parts = network.split("/")
    found = ["/".join(parts[:count]) for count in range(len(parts), 0, -1)]
    return list(dict.fromkeys([*found, parts[-1]]))


def candidate_files(roots: Sequence[Path], network: str, class_name: str) -> list[Path]:
    """The files that may hold ``class_name``'s module, in the order they are tried."""
    module_name = class_name.rpartition(".")[0]
    relative = Path(*module_name.split(".")).with_suffix(".py")
    candidates = [root / folder / relative for root in roots for folder in folders(network)]
    return candidates + [root / relative for root in roots]


def coded_tool_problem(roots: Sequence[Path], network: str, class_name: str) -> str | None:
    """Why ``class_name`` would not be found at its first call, or None."""
    module_name, _, attr = class_name.rpartition(".")
    candidates = candidate_files(roots, network, class_name)
    for path in candidates:
        if path.is_file():
            return None if _defines(path, attr) else f"coded tool {class_name!r}: {path} defines no {attr!r}"
    try:
        if importlib.util.find_spec(module_name) is not None:
            return None
    except (ImportError, ValueError):
        pass
    except Exception as error:  # a parent package that fails to import: it would at chat time too
        return f"coded tool {class_name!r}: importing {module_name!r} failed: {error}"
    where = ", ".join(str(path) for path in candidates) or "(no AGENT_TOOL_PATH)"
    package = module_name.partition(".")[0]
    if package != module_name and not _installed(package):
        # A class of a package (neuro-san-studio's toolbox names ``neuro_san_studio.…``):
        # what is missing is most likely the package, not a tool file.
        return (
            f"coded tool {class_name!r} not found: looked in {where} and for an importable module "
            f"{module_name!r}, but the package {package!r} is not installed in this server's environment "
            "(install it there, or set AGENT_TOOL_PATH or --tool-path to the folder of your coded tools)"
        )
    return (
        f"coded tool {class_name!r} not found: looked in {where} and for an importable module "
        f"{module_name!r} (set AGENT_TOOL_PATH or --tool-path to the folder of your coded tools)"
    )


def _installed(package: str) -> bool:
    """Whether a top-level package can be imported (found, not imported)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def _defines(path: Path, name: str) -> bool:
    """Whether the module in ``path`` may define ``name`` (lenient: a syntax error, a
    ``*`` import or a module ``__getattr__`` count as yes; the import will tell)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name in (name, "__getattr__"):
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.rpartition(".")[2]) in (name, "*"):
            return True
    return False
