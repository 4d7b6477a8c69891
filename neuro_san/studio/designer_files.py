"""The files neuro-san-studio's designer writes for a designed network: the network's HOCON
file under ``<registries>/<subdirectory>/<name>.hocon`` and its entry in that folder's
``manifest.hocon``, so the server's hot reload serves it as ``<subdirectory>/<name>``.

The network file is laid out as studio's ``HoconAgentNetworkAssembler`` lays it out: it
includes ``registries/aaosa.hocon`` and ``config/llm_config.hocon`` (paths relative to the
project root, the working directory of ``ns run``), carries a ``metadata`` block, defines
``instructions_prefix`` (and ``demo_mode`` in demo mode) and lists the agents front man
first, each with ``${aaosa_call}`` and ``${aaosa_instructions}`` (a leaf with instructions
gets the demo sentence instead; an agent without instructions is a toolbox tool of its own
name). Strings are written as JSON strings (valid HOCON) where studio uses triple quotes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuro_san.settings import process_env

MANIFEST_NAME = "manifest.hocon"
DEFAULT_REGISTRIES = "registries"
MAX_EXECUTION_SECONDS = 600

# The texts the model reads in every generated agent (studio's wording).
PREFIX_OPENING = "You are part of a team of assistants in"
PREFIX_RULES = (
    "Only answer inquiries that are directly within your area of expertise.\n"
    "Do not try to help for other matters.\n"
    "Do not mention what you can NOT do. Only mention what you can do."
)
FRONT_MAN_LINES = (
    "Never express irrelevance unless you have first consulted all your tools.\n"
    "Once you have determined the relevant tools, do not express that to the user, rather,\n"
    "call all the relevant tools and make sure the command is fully serviced and express the end result."
)
DEMO_SENTENCE = (
    "You are part of a demo system, so when queried, make up a realistic response as if you are actually "
    "grounded in real data or you are operating a real application API or microservice."
)
DEFAULT_FRONT_DESCRIPTION = "An assistant that answers inquiries from the user."


def instructions_prefix(name: str) -> str:
    """The text every agent of the network ``name`` starts with."""
    return f"{PREFIX_OPENING} {name}.\n{PREFIX_RULES}\n"


def clean_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def agent_tools(spec: Mapping[str, Any]) -> list[Any]:
    # Names, /paths and URLs, or dicts (which the structure check allows), each written as JSON.
    tools = spec.get("tools")
    return [tool for tool in tools if isinstance(tool, str | dict)] if isinstance(tools, list) else []


def _agent(name: str, spec: Mapping[str, Any], front_man: bool, demo_mode: bool) -> str:
    q = json.dumps
    tools, instructions = agent_tools(spec), clean_text(spec.get("instructions"))
    description = clean_text(spec.get("description"))
    if front_man:
        description = description or DEFAULT_FRONT_DESCRIPTION
        instructions = f"{FRONT_MAN_LINES}\n{instructions}"
    elif not tools and not instructions:
        return f'        {{\n            "name": {q(name)},\n            "toolbox": {q(name)}\n        }}'
    lines = [
        "        {",
        f'            "name": {q(name)},',
        f'            "function": ${{aaosa_call}}{{\n                "description": {q(description)}\n            }},',
    ]
    if front_man or tools:
        lines.append(f'            "instructions": ${{instructions_prefix}} {q(instructions)} ${{aaosa_instructions}},')
        lines.append(f'            "tools": [{", ".join(q(tool) for tool in tools)}]')
    else:
        demo = " ${demo_mode}" if demo_mode else ""
        lines.append(f'            "instructions": ${{instructions_prefix}}{demo} {q(instructions)}')
    lines.append("        }")
    return "\n".join(lines)


def network_hocon(
    network: Mapping[str, Any], front_man: str, name: str, metadata: Mapping[str, Any], demo_mode: bool
) -> str:
    """The HOCON file of the designed ``network`` (``{agent: {instructions, description, tools}}``)."""
    prefix = instructions_prefix(name)
    block = json.dumps(dict(metadata), indent=4, ensure_ascii=False).replace("\n", "\n    ")
    header = [
        "{",
        '    include "registries/aaosa.hocon"',
        f'    "metadata": {block},',
        '    include "config/llm_config.hocon",',
        f'    "max_execution_seconds": {MAX_EXECUTION_SECONDS},',
        f'    "instructions_prefix": {json.dumps(prefix)},',
    ]
    if demo_mode:
        header.append(f'    "demo_mode": {json.dumps(DEMO_SENTENCE)},')
    order = [front_man, *(agent for agent in network if agent != front_man)]
    agents = ",\n".join(_agent(agent, network[agent], agent == front_man, demo_mode) for agent in order)
    return "\n".join(header) + '\n    "tools": [\n' + agents + "\n    ]\n}\n"


def registries_dir() -> Path:
    """Where generated networks go: the folder of the first manifest in ``AGENT_MANIFEST_FILE``,
    else ``registries`` under the working directory (as studio decides it)."""
    first = next((part for part in process_env().get("AGENT_MANIFEST_FILE", "").split(os.pathsep) if part), "")
    return Path(os.path.dirname(first)) if first else Path(DEFAULT_REGISTRIES)


def network_path(registries: Path, subdirectory: str, name: str) -> Path:
    root = registries / subdirectory
    path = root / f"{name}.hocon"
    if not path.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"Agent network name {name!r} resolves outside {root}")
    return path


def write_network(registries: Path, subdirectory: str, name: str, text: str) -> Path:
    """Write the network file (atomically) and add it to the folder's manifest; blocking I/O."""
    path = network_path(registries, subdirectory, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    manifest = registries / subdirectory / MANIFEST_NAME
    content = manifest.read_text(encoding="utf-8") if manifest.exists() else "{\n}"
    entry = f"{subdirectory}/{name}.hocon"
    if entry not in content:
        close = content.rfind("}")
        if close >= 0:
            content = f'{content[:close]}\n    "{entry}": true,\n{content[close:]}'
        else:
            content = f'{content.rstrip()}\n"{entry}" = true\n'
        manifest.write_text(content, encoding="utf-8")
    if subdirectory != "generated":
        _include_in_main_manifest(registries, subdirectory)
    return path


def _include_in_main_manifest(registries: Path, subdirectory: str) -> None:
    """Studio adds ``include "<registries>/<subdirectory>/manifest.hocon",`` to the main manifest
    (after its last include) for a subdirectory other than ``generated``."""
    main = registries / MANIFEST_NAME
    if not main.exists():
        return
    line = f'include "{registries.name}/{subdirectory}/{MANIFEST_NAME}",'
    lines = main.read_text(encoding="utf-8").split("\n")
    if any(line in existing for existing in lines):
        return
    last = max((i for i, existing in enumerate(lines) if existing.strip().startswith("include ")), default=-1)
    if last >= 0:
        lines.insert(last + 1, f"    {line}")
        main.write_text("\n".join(lines), encoding="utf-8")
