"""Load-time settings of neuro-san-studio's middleware classes (``middleware.…`` in a
studio project), implemented natively in this package: persistent memory, the checklist,
skills and the Agent Network Designer family (definition, validation, persistence).
:data:`CLASSES` are their entries for the network loader's registry
(:mod:`neuro_san.network.middleware_registry`).

Where studio warns about an unknown key and goes on, these refuse it at load with the key
path (a misspelt setting should not silently change nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from neuro_san.network.middleware_args import MiddlewareArgs
from neuro_san.network.middleware_registry import EntryContext, MiddlewareClass
from neuro_san.settings import SettingError, Settings, process_env
from neuro_san.studio.mem0_settings import Mem0Settings, Mem0Unavailable, mem0_settings

MEMORY_CLASS = "middleware.persistent_memory.persistent_memory_middleware.PersistentMemoryMiddleware"
CHECKLIST_CLASS = "middleware.agent_checklist_middleware.AgentChecklistMiddleware"
SKILLS_CLASS = "middleware.agent_skills_middleware.AgentSkillsMiddleware"
_VALIDATION = "middleware.agent_network_designer.validation."
STRUCTURE_CLASS = (
    _VALIDATION + "agent_network_structure_validation_middleware.AgentNetworkStructureValidationMiddleware"
)
INSTRUCTIONS_CLASS = (
    _VALIDATION + "agent_network_instructions_validation_middleware.AgentNetworkInstructionsValidationMiddleware"
)

_DESIGNER = "middleware.agent_network_designer."
DEFINITION_CLASS = _DESIGNER + "agent_network_definition_middleware.AgentNetworkDefinitionMiddleware"
PERSISTENCE_CLASS = _DESIGNER + "persistence.agent_network_persistence_middleware.AgentNetworkPersistenceMiddleware"
STUDIO_CLASSES = frozenset(
    {MEMORY_CLASS, CHECKLIST_CLASS, SKILLS_CLASS, STRUCTURE_CLASS, INSTRUCTIONS_CLASS}
    | {DEFINITION_CLASS, PERSISTENCE_CLASS}
)

MEMORY_OPERATIONS = frozenset({"create", "read", "append", "delete", "search", "list"})
MEMORY_BACKENDS = ("json_file", "markdown_file", "mem0")
CHECKLIST_STATUSES = ("pending", "in_progress", "done", "skipped")


@dataclass(frozen=True, slots=True)
class MemorySettings:
    backend: str
    #: Where the files go: relative to the server's working directory (the project root).
    folder: str
    file_name: str
    #: Topics longer than this are summarised by ``summary_model`` (0: never).
    max_topic_size: int
    summary_model: str
    personalization: str
    operations: frozenset[str]
    #: Replaces the default system-prompt text about the tool.
    preamble: str | None
    #: The ``mem0`` backend's settings (None: a file backend).
    mem0: Mem0Settings | None = None
    #: ``sly_data`` in the args: mem0's user is the request's ``sly_data["user_id"]``.
    user_from_sly_data: bool = False


@dataclass(frozen=True, slots=True)
class ChecklistSettings:
    title: str
    #: ``(item, status, notes)`` of the checklist every invocation starts with.
    initial: tuple[tuple[str, str, str], ...]
    keep_in_context: bool
    #: ``progress_reporter`` asked for: progress (0.0–1.0) is reported as AGENT_PROGRESS.
    report_progress: bool


@dataclass(frozen=True, slots=True)
class SkillsSettings:
    #: Skill folders (relative to the working directory, or absolute) and http(s) URLs.
    sources: tuple[str, ...]
    keep_in_context: bool
    http_timeout: float


@dataclass(frozen=True, slots=True)
class DesignerValidationSettings:
    #: ``structure`` or ``instructions``.
    kind: str


@dataclass(frozen=True, slots=True)
class DesignerDefinitionSettings:
    #: ``progress_reporter`` asked for: the definition is reported as AGENT_PROGRESS.
    report_progress: bool


@dataclass(frozen=True, slots=True)
class DesignerPersistenceSettings:
    #: Leaf agents get studio's demo sentence (``AGENT_NETWORK_DESIGNER_DEMO_MODE``, default true).
    demo_mode: bool
    #: The folder under the registries (``AGENT_NETWORK_DESIGNER_SUBDIRECTORY``, default ``generated``).
    subdirectory: str
    #: Times the model is sent back with validation errors (``…_MAX_VALIDATION_ATTEMPTS``, default 3).
    max_attempts: int
    #: Deploy as a temporary network instead of writing a file (``AGENT_NETWORK_DESIGNER_USE_RESERVATIONS``).
    use_reservations: bool = False
    #: The temporary network's lifetime (``AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS``, an hour).
    lifetime_seconds: float = 3600.0


StudioSettings = (
    MemorySettings
    | ChecklistSettings
    | SkillsSettings
    | DesignerValidationSettings
    | DesignerDefinitionSettings
    | DesignerPersistenceSettings
)


def parse_studio(
    class_name: str, check: MiddlewareArgs, env: Mapping[str, str] | None = None, reservations: bool = False
) -> StudioSettings:
    """The settings of a studio class; the designer's read studio's environment variables
    (``env``, the process environment by default) at load, as studio reads them at import.
    ``reservations``: the entry's ``allow.reservations`` is true."""
    if class_name in (DEFINITION_CLASS, PERSISTENCE_CLASS):
        return _designer(class_name, check, process_env() if env is None else env, reservations)
    if class_name in (STRUCTURE_CLASS, INSTRUCTIONS_CLASS):
        check.finish()  # only the injected sly_data, which the native class reads itself
        return DesignerValidationSettings("structure" if class_name == STRUCTURE_CLASS else "instructions")
    if class_name == MEMORY_CLASS:
        return _memory(check, process_env() if env is None else env)
    if class_name == SKILLS_CLASS:
        return _skills(check)
    return _checklist(check)


def _studio_class(class_name: str, reservations: bool = False) -> MiddlewareClass:
    """The registry's entry of one studio class (the registry calls :func:`parse_studio`)."""

    def parse(check: MiddlewareArgs, entry: EntryContext) -> StudioSettings:
        return parse_studio(class_name, check, reservations=entry.reservations)

    return MiddlewareClass(
        (class_name,), parse, lambda settings: class_name.rsplit(".", 1)[-1], reservations, "neuro-san-studio"
    )


#: Studio's classes as the network loader's registry takes them (registered by
#: :func:`neuro_san.studio.plugin.register`, with their implementations).
CLASSES: Mapping[str, MiddlewareClass] = MappingProxyType(
    {name: _studio_class(name, reservations=name == PERSISTENCE_CLASS) for name in sorted(STUDIO_CLASSES)}
)


def _designer(class_name: str, check: MiddlewareArgs, env: Mapping[str, str], reservations: bool) -> StudioSettings:
    style = env.get("AGENT_NETWORK_DESIGNER_PROGRESS_STYLE", "internal")
    if style != "internal":
        raise check.fail(
            "class", f"AGENT_NETWORK_DESIGNER_PROGRESS_STYLE={style!r} is not supported on this server (only internal)"
        )
    if class_name == DEFINITION_CLASS:
        settings: StudioSettings = DesignerDefinitionSettings("progress_reporter" in check.args)
        check.finish()
        return settings
    check.read.add("reservationist")  # studio's: the reservations mode needs it
    use_reservations = _switch(check, env, "AGENT_NETWORK_DESIGNER_USE_RESERVATIONS")
    if use_reservations and not (reservations and check.args.get("reservationist") is True):
        # Studio falls back to saving nothing at all; a designer that silently loses its work is worse.
        raise check.fail(
            "reservationist",
            "AGENT_NETWORK_DESIGNER_USE_RESERVATIONS=true deploys designed networks as temporary networks, which "
            'needs "allow": {"reservations": true} on this entry and "reservationist": true in its args',
        )
    raw_lifetime = env.get("AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS", "").strip()
    lifetime = _lifetime(check, raw_lifetime) if use_reservations else 3600.0  # read in that mode only, as studio
    raw = env.get("AGENT_NETWORK_DESIGNER_MAX_VALIDATION_ATTEMPTS", "3")
    try:
        attempts = max(0, int(raw))
    except ValueError:
        reason = f"AGENT_NETWORK_DESIGNER_MAX_VALIDATION_ATTEMPTS must be a whole number, not {raw!r}"
        raise check.fail("class", reason) from None
    subdirectory = env.get("AGENT_NETWORK_DESIGNER_SUBDIRECTORY", "generated").strip("/") or "generated"
    demo = _switch(check, env, "AGENT_NETWORK_DESIGNER_DEMO_MODE")
    check.finish()
    return DesignerPersistenceSettings(
        demo_mode=demo,
        subdirectory=subdirectory,
        max_attempts=attempts,
        use_reservations=use_reservations,
        lifetime_seconds=lifetime,
    )


def _switch(check: MiddlewareArgs, env: Mapping[str, str], name: str) -> bool:
    """A studio switch in the one grammar (studio takes only "true"; a typo is refused, not off)."""
    try:
        return bool(Settings(env).value(name))
    except SettingError as error:
        raise check.fail("class", str(error)) from None


def _lifetime(check: MiddlewareArgs, raw: str) -> float:
    """Studio's checks of the lifetime (made when it deploys; made at load here)."""
    if not raw:
        return 3600.0
    try:
        lifetime = float(raw)
    except ValueError:
        reason = "Value for AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS needs to be a number"
        raise check.fail("class", f"{reason}, not {raw!r}") from None
    if not 0 < lifetime < float("inf"):  # an infinite expiry is not a number in JSON
        reason = "Value for AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS needs to be > 0"
        raise check.fail("class", f"{reason} (and finite), not {raw!r}")
    return lifetime


def _skills(check: MiddlewareArgs) -> SkillsSettings:
    sources = check.get(
        "skill_sources", None, lambda v: isinstance(v, list) and all(isinstance(s, str) and s for s in v),
        "a list of skill folders or URLs",
    )  # fmt: skip
    if not sources:
        raise check.fail("skill_sources", "missing: list the skill folders or URLs (each holding a SKILL.md)")
    timeout = check.get(
        "http_timeout", 30.0, lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v > 0,
        "a positive number of seconds",
    )  # fmt: skip
    settings = SkillsSettings(tuple(sources), check.flag("keep_skill_in_context", False), float(timeout))
    check.finish()
    return settings


def _dict(check: MiddlewareArgs, parent: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise check.fail(path, f"must be a dict, not {value!r}")
    return value


def _only(check: MiddlewareArgs, block: Mapping[str, Any], known: set[str], path: str) -> None:
    for key in block:
        if key not in known:
            raise check.fail(f"{path}.{key}", f"unknown key (known: {', '.join(sorted(known))})")


def _memory(check: MiddlewareArgs, env: Mapping[str, str]) -> MemorySettings:
    origin = check.get("origin_str", True, lambda v: isinstance(v, bool | str), "true or a dotted origin")
    del origin  # the namespace is the network and the agent, known here without it
    config = check.get("memory_config", {}, lambda v: isinstance(v, dict), "a dict")
    _only(check, config, {"storage", "summarization", "enabled_operations", "preamble"}, "memory_config")
    storage = _dict(check, config, "storage", "memory_config.storage")
    _only(check, storage, {"backend", "folder_name", "file_name"}, "memory_config.storage")
    backend = str(storage.get("backend") or "json_file").strip().lower()
    if backend not in MEMORY_BACKENDS:
        known = ", ".join(MEMORY_BACKENDS)
        raise check.fail("memory_config.storage.backend", f"must be one of {known}, not {backend!r}")
    mem0 = None
    if backend == "mem0":
        try:
            mem0 = mem0_settings(env)
        except Mem0Unavailable as error:
            raise check.fail("memory_config.storage.backend", str(error)) from None
    summary = _dict(check, config, "summarization", "memory_config.summarization")
    _only(check, summary, {"max_topic_size", "model", "personalization"}, "memory_config.summarization")
    size = summary.get("max_topic_size", 0)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise check.fail("memory_config.summarization.max_topic_size", f"must be a whole number >= 0, not {size!r}")
    raw_operations = config.get("enabled_operations")
    operations = MEMORY_OPERATIONS
    if raw_operations:
        if not isinstance(raw_operations, list):
            raise check.fail("memory_config.enabled_operations", "must be a list of operation names")
        named = {str(op).strip().lower() for op in raw_operations if op}
        unknown = named - MEMORY_OPERATIONS
        if unknown:
            raise check.fail(
                "memory_config.enabled_operations",
                f"unknown operations {sorted(unknown)} (known: {', '.join(sorted(MEMORY_OPERATIONS))})",
            )
        operations = frozenset(named)
    preamble = config.get("preamble")
    settings = MemorySettings(
        backend=backend,
        folder=str(storage.get("folder_name") or "memory"),
        file_name=str(storage.get("file_name") or "memory"),
        max_topic_size=size,
        summary_model=str(summary.get("model") or "gpt-5.4-mini"),
        personalization=str(summary.get("personalization") or ""),
        operations=operations,
        preamble=preamble.strip() if isinstance(preamble, str) and preamble.strip() else None,
        mem0=mem0,
        user_from_sly_data="sly_data" in check.args,  # neuro-san injects it when the key is present
    )
    check.finish()
    return settings


def _checklist(check: MiddlewareArgs) -> ChecklistSettings:
    title = check.get("checklist_title", "Task Checklist", lambda v: isinstance(v, str), "a string")
    raw = check.get("initial_checklist", [], lambda v: isinstance(v, list), "a list of {item, status, notes}")
    initial = []
    for index, entry in enumerate(raw or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("item", ""), str):
            raise check.fail(f"initial_checklist[{index}]", "must be a dict with an 'item' string")
        status = entry.get("status", "pending")
        if status not in CHECKLIST_STATUSES:
            raise check.fail(
                f"initial_checklist[{index}].status", f"must be one of {', '.join(CHECKLIST_STATUSES)}, not {status!r}"
            )
        initial.append((str(entry.get("item", "")).strip(), str(status), str(entry.get("notes", ""))))
    settings = ChecklistSettings(
        title=title,
        initial=tuple(initial),
        keep_in_context=check.flag("keep_checklist_in_context", False),
        report_progress="progress_reporter" in check.args,
    )
    check.finish()
    return settings
