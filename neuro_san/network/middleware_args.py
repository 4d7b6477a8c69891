"""Typed reads of one middleware entry's ``args``, each failure a :class:`NetworkLoadError`
with the key path; keys nobody read are refused at the end (``finish``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError

#: Arguments whose values neuro-san replaces with framework objects when the key is
#: present. The native implementations need none of them, so asking is harmless.
INJECTED_ARGS = frozenset(
    {"origin", "origin_str", "sly_data", "chat_history", "activation_capsule", "journal", "progress_reporter"}
)


class MiddlewareArgs:
    """Typed reads of one entry's ``args``; unknown keys are refused at the end."""

    def __init__(self, args: dict[str, Any], file: str, key_path: str) -> None:
        self.args, self.file, self.key_path = args, file, key_path
        self.read: set[str] = set(INJECTED_ARGS)

    def fail(self, key: str, reason: str) -> NetworkLoadError:
        return NetworkLoadError(self.file, f"{self.key_path}.{key}", reason)

    def get(self, key: str, default: Any, accept: Callable[[Any], bool], expected: str) -> Any:
        self.read.add(key)
        value = self.args.get(key, default)
        if value is default or accept(value):
            return value
        raise self.fail(key, f"must be {expected}, not {value!r}")

    def flag(self, key: str, default: bool) -> bool:
        return bool(self.get(key, default, lambda v: isinstance(v, bool), "true or false"))

    def finish(self) -> None:
        for key in self.args:
            if key not in self.read:
                raise self.fail(key, "unknown argument for this middleware")
