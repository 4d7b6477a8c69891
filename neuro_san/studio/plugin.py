"""Plug neuro-san-studio's classes into the middleware registry (both halves).

Called by whoever composes the server (``neuro-san serve``, ``neuro-san validate``, a
test's set-up), once per process; a second call changes nothing.
"""

from __future__ import annotations

from neuro_san.middleware import registry as runtime_registry
from neuro_san.middleware.interface import AgentMiddleware, Invocation
from neuro_san.network import middleware_registry
from neuro_san.studio.checklist import ChecklistMiddleware
from neuro_san.studio.config import (
    CLASSES,
    ChecklistSettings,
    DesignerDefinitionSettings,
    DesignerPersistenceSettings,
    DesignerValidationSettings,
    MemorySettings,
    SkillsSettings,
)
from neuro_san.studio.designer_definition import DefinitionMiddleware
from neuro_san.studio.designer_persistence import PersistenceMiddleware
from neuro_san.studio.designer_validation import InstructionsValidationMiddleware, StructureValidationMiddleware
from neuro_san.studio.memory import PersistentMemoryMiddleware
from neuro_san.studio.skills import SkillsMiddleware


def _validation(invocation: Invocation, settings: DesignerValidationSettings) -> AgentMiddleware:
    if settings.kind == "structure":
        return StructureValidationMiddleware(invocation)
    return InstructionsValidationMiddleware(invocation)


def _definition(invocation: Invocation, settings: DesignerDefinitionSettings) -> AgentMiddleware:
    return DefinitionMiddleware(invocation, settings.report_progress)


#: Each settings type of :mod:`neuro_san.studio.config` and what builds its instance.
BUILDERS: tuple[tuple[type, runtime_registry.Builder], ...] = (
    (MemorySettings, PersistentMemoryMiddleware),
    (ChecklistSettings, ChecklistMiddleware),
    (SkillsSettings, SkillsMiddleware),
    (DesignerValidationSettings, _validation),
    (DesignerDefinitionSettings, _definition),
    (DesignerPersistenceSettings, PersistenceMiddleware),
)


def registered() -> bool:
    """Studio's classes are registered in this process."""
    return all(middleware_registry.lookup(name) is entry for name, entry in CLASSES.items())


def register() -> None:
    """Accept studio's class paths in network files and build their instances."""
    if not registered():
        runtime_registry.plug_in(CLASSES.values(), BUILDERS)


def unregister() -> None:
    """Undo :func:`register` (for tests of a process without studio's classes)."""
    runtime_registry.unplug(CLASSES.values(), BUILDERS)
