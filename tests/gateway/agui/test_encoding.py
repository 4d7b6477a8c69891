"""gateway/agui/encoding.py writes what ag-ui-protocol's EventEncoder writes, byte for byte:
for the flat events it writes itself (any text, ids, timestamps, optional fields set or
not) and for those it hands to the encoder (nested models, dicts, floats, extra fields)."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningMessageContentEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from hypothesis import given
from hypothesis import strategies as st

from gateway.agui.encoding import encode, encoded

_TEXT = st.text(max_size=12)  # any code point but lone surrogates: quotes, controls, emoji…
_ID = st.text(min_size=1, max_size=8)
_TIMESTAMP = st.none() | st.integers(-(2**53) + 1, 2**53 - 1)
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | _TEXT,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                     max_leaves=6)
_USAGE = st.builds(TokenUsage, provider=st.none() | _TEXT, model=st.none() | _TEXT,
                   input_tokens=st.none() | st.integers(0, 10**6), output_tokens=st.none() | st.integers(0, 10**6))

_EVENTS = st.one_of(
    st.builds(RunStartedEvent, thread_id=_ID, run_id=_ID, parent_run_id=st.none() | _ID, timestamp=_TIMESTAMP),
    st.builds(TextMessageStartEvent, message_id=_ID, role=st.just("assistant"), timestamp=_TIMESTAMP),
    st.builds(TextMessageContentEvent, message_id=_ID, delta=st.text(min_size=1, max_size=12), timestamp=_TIMESTAMP),
    st.builds(TextMessageEndEvent, message_id=_ID, timestamp=_TIMESTAMP),
    st.builds(RunErrorEvent, message=_TEXT, code=st.none() | _TEXT),
    st.builds(StepStartedEvent, step_name=_TEXT),
    st.builds(ToolCallStartEvent, tool_call_id=_ID, tool_call_name=_TEXT, parent_message_id=st.none() | _ID),
    st.builds(ToolCallResultEvent, message_id=_ID, tool_call_id=_ID, content=_TEXT, role=st.just("tool")),
    st.builds(ReasoningMessageContentEvent, message_id=_ID, delta=st.text(min_size=1, max_size=12)),
    # Handed to the encoder: a nested model, a dict, any JSON, a raw event.
    st.builds(RunFinishedEvent, thread_id=_ID, run_id=_ID, result=_JSON,
              usage=st.none() | st.lists(_USAGE, max_size=2)),
    st.builds(StateSnapshotEvent, snapshot=st.dictionaries(_TEXT, _JSON, max_size=3)),
    st.builds(CustomEvent, name=_TEXT, value=_JSON),
    st.builds(TextMessageEndEvent, message_id=_ID, raw_event=_JSON),
)


@given(_EVENTS)
def test_an_event_is_written_as_the_encoder_writes_it(event: BaseEvent) -> None:
    assert encode(event) == EventEncoder().encode(event)


@given(st.lists(_EVENTS, max_size=4))
def test_a_piece_of_the_stream_is_the_events_in_order(events: list[BaseEvent]) -> None:
    assert encoded(events) == "".join(EventEncoder().encode(event) for event in events).encode("utf-8")


@pytest.mark.parametrize("extra", [{"custom": 1}, {"note": None}, {"nested": {"a": [1.5]}}])
def test_an_extra_field_is_written_too(extra: dict[str, Any]) -> None:
    event = TextMessageContentEvent(message_id="m", delta="hi", **extra)
    assert encode(event) == EventEncoder().encode(event)
    assert next(iter(extra)) in encode(event)
