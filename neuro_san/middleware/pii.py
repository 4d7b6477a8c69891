"""PII detection on an agent's model traffic (LangChain's ``PIIMiddleware`` keys).

``pii_type`` names what to find (built-in detectors for ``email``, ``credit_card``,
``ip``, ``mac_address`` and ``url``, or any name with a ``detector`` regex) and
``strategy`` what to do with it: ``redact`` (``[REDACTED_<TYPE>]``), ``mask`` (keep a
recognisable tail), ``hash`` (``<type_hash:8 hex of sha256>``) or ``block`` (stop the
agent with an error answer, without calling the model).

Where: ``apply_to_input`` covers the user messages before each model call,
``apply_to_tool_results`` the tool results the model is about to read, and
``apply_to_output`` the model's answer (and so what the client gets).

Deviation from neuro-san, on purpose: input detection covers every user message of the
conversation, not only the last one, so history restored from chat_context is not sent
to the model with the PII a previous turn removed.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlparse

from neuro_san.llm.interface import LlmMessage, ModelResponse
from neuro_san.middleware.interface import AgentMiddleware, AgentStopped, Invocation, ModelTurn
from neuro_san.network.middleware_config import PiiSettings


@dataclass(frozen=True, slots=True)
class Match:
    start: int
    end: int
    value: str


Detector = Callable[[str], list[Match]]

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_CARD = re.compile(r"\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}\b")
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_MAC = re.compile(r"\b[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}\b")
_URL_WITH_SCHEME = re.compile(r"https?://[^\s<>\"{}|\\^`\[\]]+")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_BARE_URL = re.compile(rf"\b(?:www\.)?{_LABEL}(?:\.{_LABEL})+(?:/\S*)?")


def _regex(pattern: re.Pattern[str], keep: Callable[[str], bool] = lambda _: True) -> Detector:
    return lambda text: [Match(m.start(), m.end(), m.group()) for m in pattern.finditer(text) if keep(m.group())]


def _luhn(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for position, digit in enumerate(reversed(digits)):
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _urls(text: str) -> list[Match]:
    found = [
        Match(m.start(), m.end(), m.group())
        for m in _URL_WITH_SCHEME.finditer(text)
        if urlparse(m.group()).netloc
    ]
    for m in _BARE_URL.finditer(text):
        overlaps = any(f.start <= m.start() < f.end or f.start < m.end() <= f.end for f in found)
        # A bare host in prose ("example.com") is not flagged; a path or www. is.
        if not overlaps and ("/" in m.group() or m.group().startswith("www.")):
            found.append(Match(m.start(), m.end(), m.group()))
    return sorted(found, key=lambda f: f.start)


BUILTIN_DETECTORS: dict[str, Detector] = {
    "email": _regex(_EMAIL),
    "credit_card": _regex(_CARD, _luhn),
    "ip": _regex(_IPV4, _is_ipv4),
    "mac_address": _regex(_MAC),
    "url": _urls,
}


def _mask(pii_type: str, value: str) -> str:
    digits = "".join(c for c in value if c.isdigit())
    if pii_type == "email":
        local, _, domain = value.partition("@")
        return f"{local}@****.{domain.rsplit('.', 1)[-1]}" if "." in domain else f"{local}@****"
    if pii_type == "credit_card":
        separator = "-" if "-" in value else " " if " " in value else ""
        return separator.join(["****"] * 3) + separator + digits[-4:] if separator else "*" * 12 + digits[-4:]
    if pii_type == "ip":
        return "*.*.*." + value.rsplit(".", 1)[-1]
    if pii_type == "mac_address":
        separator = ":" if ":" in value else "-"
        return separator.join(["**"] * 5) + separator + value[-2:]
    if pii_type == "url":
        return "[MASKED_URL]"
    return "****" + value[-4:] if len(value) > 4 else "****"


class PiiBlocked(AgentStopped):
    pass


class PiiRule:
    """Detection plus one strategy, usable on any text."""

    def __init__(self, settings: PiiSettings) -> None:
        self.settings = settings
        detector = settings.detector
        self._detect = _regex(re.compile(detector)) if detector else BUILTIN_DETECTORS[settings.pii_type]

    def apply(self, text: str) -> str:
        matches = self._detect(text)
        if not matches:
            return text
        pii_type, strategy = self.settings.pii_type, self.settings.strategy
        if strategy == "block":
            raise PiiBlocked(f"Detected {len(matches)} instance(s) of {pii_type} in text content")
        for match in sorted(matches, key=lambda m: m.start, reverse=True):
            if strategy == "redact":
                replacement = f"[REDACTED_{pii_type.upper()}]"
            elif strategy == "hash":
                replacement = f"<{pii_type}_hash:{hashlib.sha256(match.value.encode()).hexdigest()[:8]}>"
            else:
                replacement = _mask(pii_type, match.value)
            text = text[: match.start] + replacement + text[match.end :]
        return text


class PiiMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, settings: PiiSettings) -> None:
        super().__init__(invocation)
        self.settings = settings
        self.rule = PiiRule(settings)

    async def before_model(self, turn: ModelTurn) -> None:
        messages = turn.messages
        last_assistant = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
        for index, message in enumerate(messages):
            if message.role == "user" and self.settings.apply_to_input:
                messages[index] = self._cleaned(message)
            elif message.role == "tool" and index > last_assistant and self.settings.apply_to_tool_results:
                messages[index] = self._cleaned(message)

    async def after_model(self, turn: ModelTurn, response: ModelResponse) -> ModelResponse:
        if not self.settings.apply_to_output or not response.text:
            return response
        return replace(response, text=self.rule.apply(response.text))

    def _cleaned(self, message: LlmMessage) -> LlmMessage:
        content = self.rule.apply(message.content)
        return message if content == message.content else replace(message, content=content)
