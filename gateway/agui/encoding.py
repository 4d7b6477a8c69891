"""AG-UI events as server-sent events: the text ag-ui-protocol's ``EventEncoder`` writes.

Every event model of ``ag_ui.core`` serializes through a Python wrap serializer (it leaves
out the optional fields that hold no value), 7.5 µs for a TEXT_MESSAGE_CONTENT, and a run's events are
mostly flat ones: RUN_STARTED, then one TEXT_MESSAGE_CONTENT per token. An event whose
values are all strings, whole numbers or None is written here, field by field in the
model's order under its JSON names, with the package's omission rule (an optional field
whose default is None is left out when None; any other None is ``null``). Anything else
(a nested model, a dict, a float, an extra field) goes to the ``EventEncoder`` itself.
``tests/gateway/agui/test_encoding.py`` holds the two to the same text.
"""

from __future__ import annotations

import functools
from json.encoder import encode_basestring  # type: ignore[attr-defined]  # json.dumps' own (ensure_ascii=False)

from ag_ui.core import BaseEvent
from ag_ui.encoder import EventEncoder

_ENCODER = EventEncoder()
#: The content type of the stream, the encoder's.
CONTENT_TYPE = _ENCODER.get_content_type()


@functools.cache
def _fields(event_type: type[BaseEvent]) -> tuple[tuple[str, str, bool], ...]:
    """(attribute, quoted JSON key, left out when None) per field of ``event_type``."""
    return tuple(
        (name, encode_basestring(field.serialization_alias or field.alias or name),
         not field.is_required() and field.default is None)
        for name, field in event_type.model_fields.items()
    )


def encode(event: BaseEvent) -> str:
    """``EventEncoder().encode(event)``: ``data: <the event's JSON>`` and a blank line."""
    if event.__pydantic_extra__:
        return _ENCODER.encode(event)
    members = []
    for name, key, omittable in _fields(type(event)):
        value = getattr(event, name)
        if value is None:
            if omittable:
                continue
            members.append(f"{key}:null")
        elif isinstance(value, str):  # an EventType too: a str enum is its value's text
            members.append(f"{key}:{encode_basestring(value)}")
        elif type(value) is int:
            members.append(f"{key}:{value}")
        else:
            return _ENCODER.encode(event)
    return "data: {" + ",".join(members) + "}\n\n"


def encoded(events: list[BaseEvent]) -> bytes:
    """``events`` as one piece of the stream."""
    return "".join(encode(event) for event in events).encode("utf-8")
