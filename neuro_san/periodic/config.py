"""Validating a manifest entry's ``periodic`` value into interactions (at load)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name
from neuro_san.periodic.cron import CronError, Schedule, parse_cron

DEFAULT_SCHEDULE = "*/1 * * * * 0"
DEFAULT_TEXT = "Do your thing"
INTERACTION_KEYS = frozenset({"enable", "cron_schedule", "second_at_beginning", "text", "sly_data", "metadata"})


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Interaction:
    """One scheduled chat."""

    schedule: Schedule
    cron_schedule: str
    text: str
    sly_data: Mapping[str, Any] = field(default_factory=_empty)
    #: Request metadata; ``user_id`` defaults to ``system``.
    metadata: Mapping[str, str] = field(default_factory=_empty)


def parse_periodic(value: Any, file: str, key_path: str) -> tuple[Interaction, ...]:
    """The enabled interactions of a ``periodic`` value (``false``/absent: none)."""
    if value is None or value is False:
        return ()
    if value is True:
        raws: list[Any] = [{}]
    elif isinstance(value, str):
        raws = [{"cron_schedule": value}]
    elif isinstance(value, dict) and "interactions" in value:
        raws = value["interactions"]
        if not isinstance(raws, list):
            raise NetworkLoadError(file, f"{key_path}.interactions", "must be a list of interactions")
        for key in value:
            if key != "interactions":
                raise NetworkLoadError(file, f"{key_path}.{key}", "unknown key: give 'interactions'")
    elif isinstance(value, dict):
        raws = [value]
    else:
        raise NetworkLoadError(
            file, key_path, f"must be true, a cron schedule or a dict of interactions, not {type_name(value)}"
        )
    interactions = []
    for index, raw in enumerate(raws):
        path = f"{key_path}.interactions[{index}]" if isinstance(value, dict) and "interactions" in value else key_path
        interaction = _interaction(raw, file, path)
        if interaction is not None:
            interactions.append(interaction)
    return tuple(interactions)


def _interaction(raw: Any, file: str, path: str) -> Interaction | None:
    if not isinstance(raw, dict):
        raise NetworkLoadError(file, path, f"an interaction must be a dict, not {type_name(raw)}")
    for key in raw:
        if key not in INTERACTION_KEYS:
            raise NetworkLoadError(file, f"{path}.{key}", "unknown key of a periodic interaction")
    enable = raw.get("enable", True)
    at_beginning = raw.get("second_at_beginning", False)
    for key, flag in (("enable", enable), ("second_at_beginning", at_beginning)):
        if not isinstance(flag, bool):
            raise NetworkLoadError(file, f"{path}.{key}", f"must be true or false, not {flag!r}")
    cron = raw.get("cron_schedule", DEFAULT_SCHEDULE)
    text = raw.get("text", DEFAULT_TEXT)
    sly_data = raw.get("sly_data") or {}
    metadata = raw.get("metadata") or {}
    if not isinstance(cron, str):
        raise NetworkLoadError(file, f"{path}.cron_schedule", f"must be a string, not {type_name(cron)}")
    if not isinstance(text, str) or not text:
        raise NetworkLoadError(file, f"{path}.text", "must be a non-empty string")
    if not isinstance(sly_data, dict):
        raise NetworkLoadError(file, f"{path}.sly_data", f"must be a dict, not {type_name(sly_data)}")
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise NetworkLoadError(file, f"{path}.metadata", "must be a dict of strings")
    try:
        schedule = parse_cron(cron, at_beginning)
    except CronError as error:
        raise NetworkLoadError(file, f"{path}.cron_schedule", str(error)) from None
    if not enable:
        return None
    return Interaction(
        schedule=schedule,
        cron_schedule=cron,
        text=text,
        sly_data=MappingProxyType(dict(sly_data)),
        metadata=MappingProxyType({"user_id": "system", **metadata}),
    )
