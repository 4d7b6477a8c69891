"""``neuro-san``: serve agent networks, run the gateway alone, validate networks, and
talk to a server (chat, list, function, connectivity). ``neuro-san COMMAND --help``
explains each command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gateway import cli as gateway_cli
from neuro_san import __version__
from neuro_san.cli import client_commands, config_command, serve
from neuro_san.settings import activate, snapshot
from neuro_san.settings.startup import refuse_malformed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neuro-san",
        description="A gRPC-first server for neuro-san agent networks, with an HTTP/JSON gateway.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve.add_command(commands)

    validate = commands.add_parser(
        "validate",
        help="check agent network files or manifests and report every error",
        description="Check network files (HOCON, YAML, JSON) or manifests as serve would at load; "
        "print every fault of every file in one run, each with its file, key path, agent and reason "
        "(unknown agents in tools, /name networks no manifest given serves, coded tool classes not "
        "on the tool path, models no provider knows, invalid JSON Schema in parameters, malformed "
        "MCP/A2A URLs); exit 1 when any is broken.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.add_argument(
        "--tool-path", action="append", default=[], metavar="DIR",
        help="root of coded tools, as for serve; repeat for several (also AGENT_TOOL_PATH)",
    )
    validate.set_defaults(func=_validate)

    gateway = commands.add_parser(
        "gateway",
        help="run the HTTP/JSON gateway alone, in front of one or more gRPC servers",
        description="Serve the REST API generated from the protos' google.api.http rules, "
        "forwarding to gRPC targets (several are balanced round-robin).",
    )
    gateway_cli.add_arguments(gateway)
    gateway.set_defaults(func=gateway_cli.run)

    client_commands.add_commands(commands)
    config_command.add_command(commands)
    return parser


def _validate(args: argparse.Namespace) -> int:
    # Lazy: the network loader only for `validate`, not every command.
    from neuro_san.network.validate import main_validate
    from neuro_san.studio import plugin as studio

    if refuse_malformed("serve"):  # validate loads networks as serve would
        return 2

    studio.register()  # validate checks what serve would serve: studio's classes included
    return main_validate(list(args.paths), tool_paths=list(args.tool_path))


def main(argv: Sequence[str] | None = None) -> int:
    # The environment is read here, once, into the process's settings; every command (and
    # every module below it) reads that snapshot. Each command refuses a malformed value of
    # the settings it uses (serve and gateway once their logging is set up, to log it).
    with activate(snapshot()):
        args = build_parser().parse_args(argv)
        if args.command in client_commands.COMMANDS and refuse_malformed("client"):
            return 2
        result = args.func(args)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
