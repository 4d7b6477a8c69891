"""neuro-san's error detector: an LLM agent's answer that holds an error fragment is
rewritten by the agent's ``error_formatter``.

Every answer containing ``Agent stopped`` (what an agent ended by an exception or a
middleware says) or one of the agent's ``error_fragments`` becomes, with ``string`` (the
default), ``Error from <origin>: <answer>``, and with ``json`` a fenced JSON block
``{"error": <answer>, "tool": <origin>}`` (keys sorted, indented by 4), as neuro-san
0.7's ``StringErrorFormatter`` and ``JsonErrorFormatter`` write them. ``<origin>`` is the
dotted origin of the agent (``front.sub-02``).
"""

from __future__ import annotations

import json

from neuro_san.core.messages import OriginPath, origin_str
from neuro_san.network.spec import AgentSpec

#: neuro-san's system error fragment: always an error, whatever the agent lists.
SYSTEM_FRAGMENTS = ("Agent stopped",)


def is_error(agent: AgentSpec, answer: str) -> bool:
    return any(fragment in answer for fragment in (*SYSTEM_FRAGMENTS, *agent.error_fragments))


def format_error(agent: AgentSpec, origin: OriginPath, answer: str) -> str:
    """``answer`` as it leaves the agent: rewritten when it holds an error fragment."""
    if not is_error(agent, answer):
        return answer
    name = origin_str(origin)
    if agent.error_formatter == "json":
        pretty = json.dumps({"error": answer, "tool": name}, sort_keys=True, indent=4)
        return f"```json\n{pretty}\n```"
    return f"Error from {name}: {answer}"
