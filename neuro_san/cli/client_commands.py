"""The client commands: ``neuro-san chat | list | function | connectivity``.

They talk to a running server over gRPC (default, port 30011) or its HTTP gateway
(``--http``, port 8080). Only argparse is imported here; the client library, and
the transport it needs, are imported when a command runs, so ``neuro-san chat`` over
gRPC never imports aiohttp.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neuro_san.client.api import AsyncAgentClient

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNAVAILABLE = 4
EXIT_TIMEOUT = 5
EXIT_LLM = 6
EXIT_UPSTREAM = 7
EXIT_INTERRUPTED = 130
#: The client commands' names (main checks their settings before they run).
COMMANDS = ("chat", "list", "function", "connectivity")

EXIT_CODES_HELP = f"""exit status:
  {EXIT_OK}    success
  {EXIT_ERROR}    the server reported an error (the message is on stderr)
  {EXIT_USAGE}    bad usage (unknown option, bad --sly-data, nothing to say)
  {EXIT_NOT_FOUND}    no such agent on that server
  {EXIT_UNAVAILABLE}    the server cannot be reached (or is draining)
  {EXIT_TIMEOUT}    the --timeout passed
  {EXIT_LLM}    the server answered, but its LLM provider failed (key, model, quota, unreachable)
  {EXIT_UPSTREAM}    the server answered, but a network it called failed (/name, http(s)://, grpc://, A2A)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)"""


def exit_code_of(error: Any) -> int:
    """The exit status of a client error: by the server's ErrorInfo reason first (an LLM's
    failure and a called network's arrive as UNAVAILABLE, as does a server that is down)."""
    # Lazy: the client library loads when a command runs (module docstring).
    from neuro_san.client import errors

    upstream = error.failed_upstream
    if upstream is not None:
        return EXIT_LLM if upstream == "llm" else EXIT_UPSTREAM
    if isinstance(error, errors.AgentNotFound):
        return EXIT_NOT_FOUND
    if isinstance(error, errors.Unavailable):
        return EXIT_UNAVAILABLE
    if isinstance(error, errors.DeadlineExceeded):
        return EXIT_TIMEOUT
    return EXIT_ERROR


def _connection_options() -> argparse.ArgumentParser:
    """Options every client command takes."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("server")
    transport = group.add_mutually_exclusive_group()
    transport.add_argument("--grpc", dest="transport", action="store_const", const="grpc",
                           help="talk gRPC (the default)")
    transport.add_argument("--http", dest="transport", action="store_const", const="http",
                           help="talk to the HTTP gateway")
    transport.add_argument("--url", metavar="URL",
                           help="the server as a URL: grpc://host:port, grpcs://…, http://host:port or https://…")
    group.add_argument("--host", default="127.0.0.1", help="server host (default 127.0.0.1)")
    group.add_argument("--port", type=int, default=None, help="server port (default 30011 for gRPC, 8080 for HTTP)")
    group.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                       help="give up after this many seconds (default: wait)")
    group.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE",
                       help="request metadata (gRPC metadata / HTTP header); repeat for several")
    parent.set_defaults(transport="grpc")
    return parent


def add_commands(commands: Any) -> None:
    """Register the client commands on the ``neuro-san`` sub-parsers."""
    common = _connection_options()
    formatter = argparse.RawDescriptionHelpFormatter

    chat = commands.add_parser(
        "chat", parents=[common], formatter_class=formatter,
        help="chat with an agent network on a running server",
        description="Chat with AGENT. With -m TEXT, or with text piped on stdin, ask once, print the answer and "
        "exit; otherwise start an interactive conversation that carries its context from turn to turn "
        "(/quit or Ctrl-D to leave, /reset to start over).",
        epilog=EXIT_CODES_HELP,
    )
    chat.add_argument("agent", metavar="AGENT", help="the agent network, e.g. hello_world or deep/math_guy")
    chat.add_argument("-m", "--message", metavar="TEXT", help="ask this once and exit")
    chat.add_argument("--sly-data", metavar="JSON", help="private data for the network's coded tools (a JSON object)")
    chat.add_argument("--maximal", action="store_true",
                      help="show the agents' thinking as it happens, each line prefixed by its dotted origin "
                      "and indented by its depth")
    chat.add_argument("--stream", action="store_true",
                      help="print the answer as the model writes it (asks for token deltas: stream_tokens)")
    chat.add_argument("--json", action="store_true",
                      help="print the raw messages, one JSON object per line (with --maximal: all of them)")
    chat.set_defaults(func=_command(_chat))

    listing = commands.add_parser(
        "list", parents=[common], formatter_class=formatter,
        help="list the public agent networks of a running server",
        description="List the agent networks the server makes public (Concierge List), with their descriptions.",
        epilog=EXIT_CODES_HELP,
    )
    listing.add_argument("--json", action="store_true", help="print the list as JSON")
    listing.set_defaults(func=_command(_list))

    function = commands.add_parser(
        "function", parents=[common], formatter_class=formatter,
        help="show what an agent network does and which parameters it takes",
        description="Show the front man's function of AGENT: its description and the JSON schemas of its "
        "parameters and sly_data.",
        epilog=EXIT_CODES_HELP,
    )
    function.add_argument("agent", metavar="AGENT")
    function.add_argument("--json", action="store_true", help="print the function as JSON")
    function.set_defaults(func=_command(_function))

    connectivity = commands.add_parser(
        "connectivity", parents=[common], formatter_class=formatter,
        help="show how the nodes of an agent network connect",
        description="Show the nodes of AGENT and which tools each calls: a tree in the terminal, or a "
        "Mermaid flowchart, a Graphviz graph or JSON.",
        epilog=EXIT_CODES_HELP,
    )
    connectivity.add_argument("agent", metavar="AGENT")
    connectivity.add_argument("--format", choices=("tree", "mermaid", "dot", "json"), default="tree",
                              help="tree (default), mermaid, dot or json")
    connectivity.set_defaults(func=_command(_connectivity))


def make_client(args: argparse.Namespace) -> AsyncAgentClient:
    # Lazy: the client library loads when a command runs (module docstring).
    from neuro_san.client.api import DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT, AsyncAgentClient

    metadata = _metadata(args.metadata)
    if args.url:
        return AsyncAgentClient.from_url(args.url, metadata)
    host = f"[{args.host}]" if ":" in args.host else args.host
    if args.transport == "http":
        return AsyncAgentClient.http(f"http://{host}:{args.port or DEFAULT_HTTP_PORT}", metadata)
    return AsyncAgentClient.grpc(f"{host}:{args.port or DEFAULT_GRPC_PORT}", metadata=metadata)


def _metadata(pairs: list[str]) -> dict[str, str]:
    metadata = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--metadata {pair!r}: expected KEY=VALUE")
        metadata[key.strip()] = value
    return metadata


def _command(body: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command; turn client errors into a message on stderr and an exit status."""

    def run(args: argparse.Namespace) -> int:
        # Lazy: loaded when a command runs (module docstring).
        from neuro_san.cli.render import Style, wants_colour
        from neuro_san.client import errors

        red = Style(wants_colour(sys.stderr)).red
        try:
            return body(args)
        except KeyboardInterrupt:
            sys.stderr.write("\n")
            return EXIT_INTERRUPTED
        except ValueError as error:  # bad option values found after parsing
            sys.stderr.write(red(f"neuro-san {args.command}: error: {error}") + "\n")
            return EXIT_USAGE
        except errors.ClientError as error:
            sys.stderr.write(red(f"neuro-san {args.command}: {error.code.name}: {error.message}") + "\n")
            return exit_code_of(error)
        except BrokenPipeError:  # `neuro-san list | head`
            return EXIT_OK

    return run


def _run(coroutine_factory: Callable[[AsyncAgentClient], Any], args: argparse.Namespace) -> Any:
    # Lazy: loaded when a command runs (module docstring).
    import asyncio

    async def main() -> Any:
        async with make_client(args) as client:
            return await coroutine_factory(client)

    return asyncio.run(main())


def _chat(args: argparse.Namespace) -> int:
    # Lazy: loaded when a command runs (module docstring).
    from neuro_san.cli.chat_command import run_chat

    return run_chat(args, make_client)


def _list(args: argparse.Namespace) -> int:
    # Lazy: loaded when a command runs (module docstring).
    import json

    from neuro_san.cli.render import Style, wants_colour

    agents = _run(lambda client: client.list(args.timeout), args)
    if args.json:
        rows = [{"agent_name": a.agent_name, "description": a.description, "tags": list(a.tags)} for a in agents]
        print(json.dumps({"agents": rows}, indent=2, ensure_ascii=False))
        return EXIT_OK
    style = Style(wants_colour(sys.stdout))
    width = max((len(a.agent_name) for a in agents), default=0)
    for agent in agents:
        tags = style.dim(f" [{', '.join(agent.tags)}]") if agent.tags else ""
        print(f"{style.bold(agent.agent_name.ljust(width))}  {agent.description}{tags}")
    return EXIT_OK


def _function(args: argparse.Namespace) -> int:
    # Lazy: loaded when a command runs (module docstring).
    import json

    from neuro_san.cli.render import Style, wants_colour

    info = _run(lambda client: client.function(args.agent, timeout=args.timeout), args)
    if args.json:
        print(json.dumps({"function": info.to_dict()}, indent=2, ensure_ascii=False))
        return EXIT_OK
    style = Style(wants_colour(sys.stdout))
    print(f"{style.bold(args.agent)}: {info.description}")
    for key in ("parameters", "sly_data_schema", "sly_data_output_schema"):
        value = getattr(info, key)
        if value is not None:
            print(style.dim(f"{key}:"))
            print(json.dumps(value, indent=2, ensure_ascii=False))
    return EXIT_OK


def _connectivity(args: argparse.Namespace) -> int:
    # Lazy: loaded when a command runs (module docstring).
    from neuro_san.cli.render import Style, render_connectivity, wants_colour

    connectivity = _run(lambda client: client.connectivity(args.agent, timeout=args.timeout), args)
    print(render_connectivity(connectivity, args.agent, args.format, Style(wants_colour(sys.stdout))))
    return EXIT_OK
