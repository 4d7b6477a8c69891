"""``neuro-san config``: every setting with its effective value and where it came from.

The settings are the registry's (:mod:`neuro_san.settings`); secrets are masked. ``serve``'s
flags are accepted too, so ``neuro-san config --port 0`` shows what ``neuro-san serve --port 0``
would use, the flag named as the source. A malformed value is shown, said on stderr, and
makes the exit status 2, as it would stop the server.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from neuro_san.settings import Setting, SettingError, Settings, catalog, current

MASK = "***"
#: ``serve`` flags (argparse dest) that set a setting: dest → setting name.
FLAGS = {
    "port": "AGENT_PORT",
    "http_port": "AGENT_HTTP_PORT",
    "manifest": "AGENT_MANIFEST_FILE",
    "tool_path": "AGENT_TOOL_PATH",
    "server_name": "AGENT_SERVER_NAME",
    "tls_cert": "AGENT_TLS_CERT_FILE",
    "tls_key": "AGENT_TLS_KEY_FILE",
    "tls_client_ca": "AGENT_TLS_CLIENT_CA_FILE",
    "http_tls_cert": "AGENT_HTTP_TLS_CERT_FILE",
    "http_tls_key": "AGENT_HTTP_TLS_KEY_FILE",
    "http_tls_client_ca": "AGENT_HTTP_TLS_CLIENT_CA_FILE",
    "metrics_port": "AGENT_METRICS_PORT",
    "tracing": "AGENT_TRACING",
    "workers": "AGENT_WORKERS",
    "log_level": "AGENT_SERVICE_LOG_LEVEL",
    "no_playground": "AGENT_PLAYGROUND",
}


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        "config",
        help="print every setting, its effective value and where it came from",
        description="Print every setting the server, the gateway and the client commands read (environment "
        "variables, and the serve flags given here), with its effective value (secrets masked), where the "
        "value came from (default, environment or flag) and what it does. Unknown AGENT_* variables are "
        "listed with the closest known name. Exit status 2 when a value is malformed (serve would refuse "
        "to start).",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per setting, one per line")
    parser.add_argument("--set-only", action="store_true", help="only the settings not at their default")
    flags = parser.add_argument_group("serve's flags (shown as the source of what they set)")
    flags.add_argument("--port", type=int, metavar="PORT")
    flags.add_argument("--http-port", type=int, metavar="PORT")
    flags.add_argument("--manifest", action="append", metavar="FILE")
    flags.add_argument("--tool-path", action="append", metavar="DIR")
    flags.add_argument("--server-name", metavar="NAME")
    for name in ("tls-cert", "tls-key", "tls-client-ca", "http-tls-cert", "http-tls-key", "http-tls-client-ca"):
        flags.add_argument(f"--{name}", metavar="PEM")
    flags.add_argument("--metrics-port", type=int, metavar="PORT")
    flags.add_argument("--tracing", action="store_true", default=None)
    flags.add_argument("--workers", metavar="N")
    flags.add_argument("--log-level", metavar="LEVEL")
    flags.add_argument("--no-playground", action="store_true", default=None)
    parser.set_defaults(func=run)


def _flag_values(args: argparse.Namespace) -> dict[str, str]:
    """The settings the flags given set, as the text the variable would hold."""
    values: dict[str, str] = {}
    for dest, name in FLAGS.items():
        given = getattr(args, dest, None)
        if given is None:
            continue
        if isinstance(given, list):
            text = ":".join(str(part) for part in given)
        elif dest == "tracing":
            text = "otel"
        elif dest == "no_playground":
            text = "false"
        else:
            text = str(given)
        values[name] = text
    return values


def _shown(declared: Setting, settings: Settings, raw_set: bool) -> tuple[str, str | None]:
    """(the effective value as shown, the problem when malformed)."""
    if declared.secret and raw_set:
        return MASK, None
    try:
        value = declared.default if not raw_set else settings.value(declared.name)
    except SettingError as error:
        return settings.get(declared.name, ""), str(error)
    if value is None:
        return declared.shown_default or "(unset)", None
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    if isinstance(value, dict):
        return json.dumps(value), None
    if not raw_set and declared.shown_default:
        return f"{value} ({declared.shown_default})", None
    return str(value), None


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    base = current()
    flags = _flag_values(args)
    settings = Settings({**base, **flags}, flags=flags)
    rows = []
    problems = []
    for declared in catalog().values():
        raw_set = bool(settings.get(declared.name, "").strip())
        if declared.internal and not raw_set:
            continue
        if args.set_only and not raw_set:
            continue
        shown, problem = _shown(declared, settings, raw_set)
        if problem:
            problems.append(problem)
        rows.append({"name": declared.name, "value": shown, "source": settings.source(declared.name),
                     "secret": declared.secret, "origin": declared.origin.value, "applies": list(declared.applies),
                     "accepts": declared.accepts(), "flag": declared.flag, "doc": declared.doc,
                     "error": problem})
    try:
        _print(rows, settings.unknown(), args.json, out)
    except BrokenPipeError:  # `neuro-san config | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())  # no second error at exit
    for problem in problems:
        print(f"neuro-san: {problem}", file=err)
    return 2 if problems else 0


def _print(rows: list[dict[str, Any]], unknown: list[tuple[str, str | None]], as_json: bool, out: TextIO) -> None:
    if as_json:
        for row in rows:
            print(json.dumps(row), file=out)
        for name, closest in unknown:
            print(json.dumps({"name": name, "unknown": True, "closest": closest}), file=out)
    else:
        _table(rows, out)
        for name, closest in unknown:
            hint = f"did you mean {closest}?" if closest else "no setting has a name like it"
            print(f"{name}: not a known setting, changes nothing ({hint})", file=out)


def _table(rows: list[dict[str, Any]], out: TextIO) -> None:
    name_width = max((len(row["name"]) for row in rows), default=0)
    value_width = min(40, max((len(row["value"]) for row in rows), default=0))
    for row in rows:
        value = row["value"] if len(row["value"]) <= value_width else row["value"][: value_width - 1] + "…"
        mark = "  MALFORMED" if row["error"] else ""
        print(f"{row['name']:<{name_width}}  {value:<{value_width}}  {row['source']:<11}  {row['doc']}{mark}",
              file=out)
