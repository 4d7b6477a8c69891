"""What ``neuro-san serve`` needs to know about A2A before loading it: whether
``AGENT_A2A_ENABLE`` turns it on (importing the front-end pulls in the a2a-sdk, which is
left to its first request), and whether the SDK opens spans of its own."""

from __future__ import annotations

from collections.abc import Mapping

from neuro_san.core.env_settings import env_flag
from neuro_san.settings import hand_down, process_env

A2A_ENABLE_ENV = "AGENT_A2A_ENABLE"


def a2a_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``AGENT_A2A_ENABLE``: on unless switched off; anything that is not a switch is refused,
    since a misspelt "off" must not leave A2A served."""
    return env_flag(process_env() if env is None else env, A2A_ENABLE_ENV, True)


#: The a2a-sdk opens an OpenTelemetry span around most of its steps unless this says
#: false; it reads the variable once, when its telemetry module is first imported.
SDK_TRACING_ENV = "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"


def sdk_spans_follow(tracing: bool) -> None:
    """Spans from the a2a-sdk only when ours are on. With no tracer set up its spans
    record nothing, yet they cost a tenth or more of an A2A call's CPU (docs/performance.md);
    an operator's own value of the variable wins. Call before the SDK is first imported."""
    hand_down(SDK_TRACING_ENV, "true" if tracing else "false")
