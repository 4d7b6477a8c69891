"""neuro-san-studio's ``AgentSkillsMiddleware``, native: Agent Skills (``SKILL.md``
folders, https://agentskills.io/specification) disclosed progressively.

Each ``skill_sources`` entry is a folder (relative to the server's working directory, or
absolute) or an http(s) URL holding a ``SKILL.md`` whose YAML front matter gives ``name``
(1-64 lower-case letters, digits and single hyphens) and ``description`` (cut at 1024
characters), optionally ``compatibility`` and ``allowed-tools``. Sources are read when the
agent first asks its model; a source that cannot be read or parsed is skipped with a
warning, as in studio. The system prompt lists the skills (``## Available Skills``: name,
description, location) with how to use them, and three tools serve them:

- ``get_full_skill_content(skill_name)``: the whole ``SKILL.md``, headed by the skill's
  folder and which tool loads its other files;
- ``load_skill_resource_local(resource_path)`` / ``load_skill_resource_remote(resource_url)``:
  a file of the skill; only paths under a configured local source, or URLs under a
  configured remote one, are read.

Failures answer ``Error: …`` (studio's messages).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import aiohttp
import yaml

from neuro_san.llm.interface import ToolSpec
from neuro_san.middleware.interface import AgentMiddleware, Invocation, MiddlewareTool
from neuro_san.studio.config import SkillsSettings

log = logging.getLogger(__name__)

_FRONT_MATTER = re.compile(r"^---\s*\n(.*?)\n---\s*\n", re.DOTALL)
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_REMOTE = ("http://", "https://")


def _string(spec: Mapping[str, Any], key: str) -> str:
    value = spec.get(key)
    return value.strip() if isinstance(value, str) else ""


class SkillsMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, settings: SkillsSettings) -> None:
        super().__init__(invocation)
        self.settings = settings
        self.skills: dict[str, dict[str, Any]] | None = None
        self._session: aiohttp.ClientSession | None = None

    # Hooks ---------------------------------------------------------------------------

    async def system_prompt(self) -> str | None:
        skills = await self._loaded()
        if not skills:
            return None
        lines = ["## Available Skills", "", "These skills hold domain knowledge and step-by-step workflows:", ""]
        for skill in skills.values():
            lines += [f"**{skill['name']}**", f"  - Description: {skill['description']}"]
            lines.append(f"  - Location: `{skill['path']}`")
            if skill["compatibility"]:
                lines.append(f"  - Compatibility: {skill['compatibility']}")
            if skill["allowed_tools"]:
                lines.append(f"  - Recommended tools: {', '.join(skill['allowed_tools'])}")
            lines.append("")
        lines += [
            "## Using a skill",
            "",
            "1. Pick the skill whose description fits the request.",
            "2. Load its instructions with `get_full_skill_content(skill_name='...')`.",
            "3. Follow them step by step.",
            "4. For a file the instructions refer to, prefix its relative path with the skill's folder and use",
            "   `load_skill_resource_local(resource_path='...')` (local skills) or",
            "   `load_skill_resource_remote(resource_url='...')` (skills at a URL).",
            "",
        ]
        return "\n".join(lines)

    def tools(self) -> list[MiddlewareTool]:
        def one(name: str, description: str, argument: str, handler: Any) -> MiddlewareTool:
            schema = {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}
            return MiddlewareTool(ToolSpec(name, description, schema), handler)

        return [
            one("get_full_skill_content", "Load the full SKILL.md of one of the available skills.", "skill_name",
                self._full_content),
            one("load_skill_resource_local", "Load a file of a local skill, by its full path.", "resource_path",
                self._local_resource),
            one("load_skill_resource_remote", "Load a file of a skill served at a URL, by its full URL.",
                "resource_url", self._remote_resource),
        ]  # fmt: skip

    async def after_agent(self, answer: str) -> str:
        if self._session is not None:
            await self._session.close()
            self._session = None
        return answer

    # Tools ---------------------------------------------------------------------------

    async def _full_content(self, arguments: Mapping[str, Any]) -> str:
        name = _string(arguments, "skill_name")
        if not name:
            return "Error: No 'skill_name' provided"
        skills = await self._loaded()
        skill = skills.get(name)
        if skill is None:
            return f"Error: Skill '{name}' not found. Available skills: {', '.join(skills)}"
        path: str = skill["path"]
        if path.startswith(_REMOTE):
            folder, tool = path.rsplit("/", 1)[0], "load_skill_resource_remote"
        else:
            folder, tool = str(Path(path).parent), "load_skill_resource_local"
        return (
            f"\n**Skill Directory**: `{folder}`\n"
            f"Files this skill refers to are under `{folder}`: load them with `{tool}`, prefixing a relative path "
            f"such as `references/REFERENCE.md` with it (`{folder}/references/REFERENCE.md`).\n\n---\n\n"
            f"{skill['content']}\n"
        )

    async def _local_resource(self, arguments: Mapping[str, Any]) -> str:
        path = _string(arguments, "resource_path")
        if not path:
            return "Error: No 'resource_path' provided"
        return await self._read_local(path)

    async def _remote_resource(self, arguments: Mapping[str, Any]) -> str:
        url = _string(arguments, "resource_url")
        if not url:
            return "Error: No 'resource_url' provided"
        return await self._read_remote(url)

    # Reading -------------------------------------------------------------------------

    def _under_a_source(self, target: str, remote: bool) -> bool:
        for source in self.settings.sources:
            if source.startswith(_REMOTE) != remote:
                continue
            if remote and target.startswith(source.rstrip("/") + "/"):
                return True
            if not remote:
                try:
                    if Path(target).resolve().is_relative_to(Path(source).resolve()):
                        return True
                except (OSError, ValueError):
                    continue
        return False

    async def _read_local(self, path: str) -> str:
        if not self._under_a_source(path, remote=False):
            return f"Error: Path {path} not under any configured skill source"
        return await asyncio.to_thread(_read_file, path)

    async def _read_remote(self, url: str) -> str:
        if not self._under_a_source(url, remote=True):
            return f"Error: Path {url} not under any configured skill source"
        if self._session is None:
            seconds = self.settings.http_timeout
            timeout = aiohttp.ClientTimeout(total=seconds, connect=seconds / 3, sock_read=seconds)
            self._session = aiohttp.ClientSession(timeout=timeout)
        try:
            async with self._session.get(url) as response:
                if response.status != 200:
                    return f"Error: HTTP {response.status} when fetching {url}"
                return await response.text()
        except TimeoutError:
            return f"Error: Timeout fetching {url} (>{self.settings.http_timeout}s)"
        except aiohttp.ClientError as error:
            return f"Error: Network error loading {url}: {error}"
        except UnicodeDecodeError as error:
            return f"Error: Unable to decode response as UTF-8: {error}"

    async def _loaded(self) -> dict[str, dict[str, Any]]:
        if self.skills is None:
            self.skills = {}
            for source in self.settings.sources:
                if source.startswith(_REMOTE):
                    path = urljoin(source.rstrip("/") + "/", "SKILL.md")
                    content = await self._read_remote(path)
                else:
                    path = str(Path(source) / "SKILL.md")
                    content = await self._read_local(path)
                skill = None if content.startswith("Error:") else _parse(content, path)
                if skill is None:
                    log.warning("skipping skill source %s: %s", source, content[:200] if content else "no SKILL.md")
                    continue
                self.skills[skill["name"]] = skill
        return self.skills


def _read_file(path: str) -> str:
    if not Path(path).exists():
        return f"Error: Resource file not found: {path}"
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return f"Error: Failed to read file: {error}"


def _parse(content: str, path: str) -> dict[str, Any] | None:
    match = _FRONT_MATTER.match(content)
    if match is None:
        log.warning("no YAML front matter in %s", path)
        return None
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as error:
        log.warning("bad YAML front matter in %s: %s", path, error)
        return None
    if not isinstance(front, dict):
        return None
    name, description = _string(front, "name"), _string(front, "description")
    if not name or not description or len(name) > 64 or not _NAME.fullmatch(name):
        log.warning("skill in %s needs a valid 'name' and a 'description'", path)
        return None
    allowed = front.get("allowed-tools")
    if isinstance(allowed, str):
        tools = allowed.split()
    elif isinstance(allowed, list):
        tools = [str(tool).strip() for tool in allowed if tool]
    else:
        tools = []
    return {
        "name": name,
        "description": description[:1024],
        "content": content,
        "path": path,
        "allowed_tools": tools,
        "compatibility": _string(front, "compatibility") or None,
    }
