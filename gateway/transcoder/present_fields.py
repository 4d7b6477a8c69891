"""Fields the JSON of neuro-san 0.7.15 always carries, even when empty.

proto3 JSON leaves empty fields out; neuro-san's HTTP server does not for two of them:
every ``ChatMessage`` has ``"text"`` (``""`` for token accounting and progress) and
every Connectivity entry has ``"tools"`` (``[]`` for a leaf). The gateway adds them back
on the way out, so clients that index ``message["text"]`` or ``entry["tools"]`` work. gRPC
is unchanged (an empty proto3 field is simply absent there).

The walk is planned once per response type from its descriptor: only the paths that can
lead to one of these messages are visited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

#: message name (in the neuro-san API) → field → a factory for its empty value
ALWAYS_PRESENT: dict[str, dict[str, Callable[[], Any]]] = {
    "ChatMessage": {"text": str},
    "ConnectivityInfo": {"tools": list},
    # neuro-san lists a network without metadata description/tags with "" and [].
    "AgentInfo": {"description": str, "tags": list},
}
_API_PACKAGE = "dev.cognizant_ai.neuro_san.api"


@dataclass(slots=True)
class PresencePlan:
    defaults: dict[str, Callable[[], Any]] = field(default_factory=dict)
    nested: dict[str, PresencePlan] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.defaults or self.nested)


def presence_plan(descriptor: Descriptor) -> PresencePlan:
    return _plan(descriptor, {})


def _plan(descriptor: Descriptor, memo: dict[str, PresencePlan]) -> PresencePlan:
    existing = memo.get(descriptor.full_name)
    if existing is not None:
        return existing
    plan = PresencePlan()
    memo[descriptor.full_name] = plan  # first: message types can recurse
    if descriptor.full_name.startswith(_API_PACKAGE):
        plan.defaults.update(ALWAYS_PRESENT.get(descriptor.name, {}))
    for fd in descriptor.fields:
        if fd.type != FieldDescriptor.TYPE_MESSAGE or fd.message_type.GetOptions().map_entry:
            continue
        sub = _plan(fd.message_type, memo)
        if sub:
            plan.nested[fd.name] = sub
    return plan


def add_present_fields(data: dict[str, Any], plan: PresencePlan) -> None:
    """Add the always-present fields ``plan`` names to ``data`` (JSON of one message), in place."""
    for name, empty in plan.defaults.items():
        if name not in data:
            data[name] = empty()
    for name, sub in plan.nested.items():
        value = data.get(name)
        if type(value) is dict:
            add_present_fields(value, sub)
        elif type(value) is list:
            for item in value:
                if type(item) is dict:
                    add_present_fields(item, sub)
