"""``neuro-san chat AGENT``: one-shot or interactive, over gRPC or HTTP.

The interactive loop reads the prompt outside the event loop (``asyncio.Runner`` keeps
one loop, and so one channel, across turns), so reading the terminal never blocks it.
Ctrl-C during a turn cancels that turn (and the server's work) and returns to the
prompt; at the prompt, or in one-shot mode, it exits with 130.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from neuro_san.cli.render import Style, compact_json, message_json, thinking_lines, token_usage, wants_colour
from neuro_san.client.errors import AgentNotFound, ClientError, Unavailable
from neuro_san.core.messages import ChatFilter, ChatMessage, DeltaKind, MessageType

if TYPE_CHECKING:
    from neuro_san.client.api import Conversation

QUIT_WORDS = ("/quit", "/exit")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Spinner:
    """A one-line progress indicator on stderr, only on a terminal."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.status = "waiting"
        self._task: asyncio.Task[None] | None = None
        self._shown = False

    def start(self) -> None:
        if self.enabled:
            self._task = asyncio.get_running_loop().create_task(self._spin())

    async def _spin(self) -> None:
        started = time.monotonic()
        frame = 0
        while True:
            text = f"{SPINNER[frame % len(SPINNER)]} {self.status[:60]} ({time.monotonic() - started:.1f}s)"
            self.stream.write("\r\x1b[2K" + text)
            self.stream.flush()
            self._shown = True
            frame += 1
            await asyncio.sleep(0.1)

    def clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self.clear()
        yield

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.clear()


class ChatPrinter:
    """How one turn is shown: thinking, raw JSON, the answer."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.maximal: bool = args.maximal
        self.as_json: bool = args.json
        #: Ask for token deltas; None leaves it to the network's default.
        self.stream_tokens: bool | None = True if getattr(args, "stream", False) else None
        #: The front man's answer text printed so far from deltas, this turn.
        self.streamed = ""
        #: A delta left the cursor mid-line.
        self.mid_line = False
        #: The token-usage numbers shown this turn (--maximal).
        self.usage_shown: dict[str, Any] | None = None
        self.out = out
        self.style = Style(wants_colour(out))
        self.spinner = Spinner(err, enabled=wants_colour(err) and not self.as_json)

    async def turn(self, conversation: Conversation, text: str, deadline: float | None) -> ChatMessage | None:
        chat_filter = ChatFilter.MAXIMAL if self.maximal else ChatFilter.MINIMAL
        answer: ChatMessage | None = None
        self.streamed = ""
        self.usage_shown = None
        self.spinner.start()
        try:
            stream = conversation.stream(text, chat_filter, timeout=deadline, stream_tokens=self.stream_tokens)
            async for message in stream:
                if message.type is MessageType.TOKEN_DELTA and not self.as_json:
                    # The text goes on stdout as it comes: the spinner's line on stderr
                    # would overwrite it.
                    await self.spinner.stop()
                    self._show_delta(message)
                    continue
                with self.spinner.paused():
                    self._show(message)
                if message.type is MessageType.AGENT_FRAMEWORK:
                    answer = message
                elif message.origin:
                    self.spinner.status = f"{message.origin[-1].tool}: {message.text or message.type.name.lower()}"
        finally:
            await self.spinner.stop()
        return answer

    def _show_delta(self, message: ChatMessage) -> None:
        """The front man's answer text as it is written (reasoning dimmed); the other
        agents' deltas are left out: their complete messages follow (--maximal)."""
        if len(message.origin) != 1:
            return
        if message.delta_kind is DeltaKind.REASONING:
            self.out.write(self.style.dim(message.text))
        else:
            self.streamed += message.text
            self.out.write(self.style.bold(message.text))
        self.mid_line = True
        self.out.flush()

    def _show(self, message: ChatMessage) -> None:
        if self.as_json:
            self.out.write(compact_json(message_json(message)) + "\n")
        elif message.type is MessageType.AGENT_FRAMEWORK and self.streamed:
            # Already on screen as it was written; the complete answer only when it is
            # not what was shown (text before tool calls, a caveat, JSON taken out).
            self.out.write("\n")
            if message.text.strip() != self.streamed.strip():
                self.out.write(self.style.bold(message.text) + "\n")
            if message.sly_data:
                self.out.write(self.style.dim("sly_data: " + compact_json(message.sly_data)) + "\n")
        elif message.type is MessageType.AGENT_FRAMEWORK:
            if self.maximal or self.mid_line:
                self.out.write("\n")
            self.out.write(self.style.bold(message.text) + "\n")
            if message.sly_data:
                self.out.write(self.style.dim("sly_data: " + compact_json(message.sly_data)) + "\n")
        elif self.maximal:
            usage = token_usage(message.structure)
            if usage is not None and message.structure is not None:
                # The stream reports usage twice (the network's, then the request's total,
                # as neuro-san does); the same numbers are shown once.
                numbers = {k: message.structure.get(k) for k in ("total_tokens", "successful_requests")}
                if numbers == self.usage_shown:
                    self.mid_line = False
                    return
                self.usage_shown = numbers
            if self.mid_line:
                self.out.write("\n")
            self.out.write("\n".join(thinking_lines(message, self.style)) + "\n")
        self.mid_line = False
        self.out.flush()


def one_shot_text(args: argparse.Namespace, stdin: TextIO) -> str | None:
    """The text of a one-shot chat: ``-m``, or stdin when it is not a terminal."""
    if args.message is not None:
        return str(args.message)
    if not stdin.isatty():
        return stdin.read().strip()
    return None


def parse_sly_data(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"--sly-data is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ValueError("--sly-data must be a JSON object")
    return value


def run_chat(args: argparse.Namespace, make_client: Any) -> int:
    """The chat command; raises client errors for the caller to turn into exit codes."""
    stdin, out, err = sys.stdin, sys.stdout, sys.stderr
    try:
        sly_data = parse_sly_data(args.sly_data)
    except ValueError as error:
        err.write(f"neuro-san chat: error: {error}\n")
        return 2
    text = one_shot_text(args, stdin)
    if text is not None and not text:
        err.write("neuro-san chat: error: nothing to say (empty message)\n")
        return 2
    printer = ChatPrinter(args, out, err)
    with asyncio.Runner() as runner:
        client = make_client(args)
        try:
            conversation = client.conversation(args.agent, sly_data)
            if text is not None:
                runner.run(printer.turn(conversation, text, args.timeout))
                return 0
            return _interactive(runner, printer, conversation, args, err)
        finally:
            runner.run(client.close())


def _interactive(
    runner: asyncio.Runner, printer: ChatPrinter, conversation: Conversation, args: argparse.Namespace, err: TextIO
) -> int:
    style = Style(wants_colour(err))
    err.write(style.dim(f"chatting with {args.agent} on {conversation.client.description}; "
                        "/quit or Ctrl-D to leave, /reset to start over\n"))
    prompt = style.bold(f"{args.agent}> ") if style.enabled else f"{args.agent}> "
    while True:
        try:
            line = input(prompt)
        except EOFError:
            err.write("\n")
            return 0
        text = line.strip()
        if not text:
            continue
        if text in QUIT_WORDS:
            return 0
        if text == "/reset":
            conversation.reset()
            err.write(style.dim("(a new conversation)\n"))
            continue
        try:
            runner.run(printer.turn(conversation, text, args.timeout))
        except KeyboardInterrupt:
            err.write(style.dim("\n(interrupted)\n"))
        except (AgentNotFound, Unavailable) as error:
            if error.failed_upstream is not None:
                # The server is there; its model or a network it called failed this turn.
                err.write(style.red(f"error: {error.message}") + "\n")
                continue
            raise  # nothing more to say to this agent: the caller exits with its code
        except ClientError as error:
            err.write(style.red(f"error: {error.message}") + "\n")  # this turn failed; the next may not
