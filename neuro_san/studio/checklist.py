"""neuro-san-studio's ``AgentChecklistMiddleware``, native.

The agent keeps a plan for one invocation: three tools (``create_checklist`` with
``items``, ``update_checklist_item`` with a 1-based ``item_index``, a ``status``
(``pending``, ``in_progress``, ``done``, ``skipped``) and optional ``notes``,
``edit_checklist_item`` with ``item_index`` and ``new_item``), and the checklist as it
stands shown at the end of its system prompt before every model call, as studio writes
it: ``## <title>``, a line on using ``update_checklist_item``, one ``N. [x] item`` line
per item (``[ ]`` pending, ``[~]`` in progress, ``[x]`` done, ``[-]`` skipped) with
``   > notes`` under it, and ``Progress: D/T done, S skipped``. Each tool answers with
that same text, or ``Error: …``. With ``progress_reporter`` in its args, each time the
checklist is shown the share of items done or skipped is reported as AGENT_PROGRESS
``{"progress": 0.0…1.0}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neuro_san.core.messages import MessageType
from neuro_san.llm.interface import ToolSpec
from neuro_san.middleware.interface import AgentMiddleware, Invocation, MiddlewareTool
from neuro_san.studio.config import CHECKLIST_STATUSES, ChecklistSettings

SYMBOLS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "skipped": "[-]"}
_INDEX = {"type": "integer", "description": "The item's 1-based number, as the checklist shows it."}


class ChecklistMiddleware(AgentMiddleware):
    def __init__(self, invocation: Invocation, settings: ChecklistSettings) -> None:
        super().__init__(invocation)
        self.settings = settings
        self.items: list[dict[str, str]] = [
            {"item": item, "status": status, "notes": notes} for item, status, notes in settings.initial
        ]

    async def system_prompt(self) -> str | None:
        return await self.render() or None

    def tools(self) -> list[MiddlewareTool]:
        return [
            MiddlewareTool(
                ToolSpec(
                    "create_checklist",
                    "Create the task checklist, or replace it, from a list of steps; every step starts as pending.",
                    {
                        "type": "object",
                        "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                        "required": ["items"],
                    },
                ),
                self.create,
            ),
            MiddlewareTool(
                ToolSpec(
                    "update_checklist_item",
                    "Set a checklist item's status (pending, in_progress, done, skipped), with optional notes.",
                    {
                        "type": "object",
                        "properties": {
                            "item_index": _INDEX,
                            "status": {"type": "string", "enum": list(CHECKLIST_STATUSES)},
                            "notes": {"type": "string"},
                        },
                        "required": ["item_index", "status"],
                    },
                ),
                self.update,
            ),
            MiddlewareTool(
                ToolSpec(
                    "edit_checklist_item",
                    "Rewrite one checklist item's text when the plan changes; its status and notes stay.",
                    {
                        "type": "object",
                        "properties": {"item_index": _INDEX, "new_item": {"type": "string"}},
                        "required": ["item_index", "new_item"],
                    },
                ),
                self.edit,
            ),
        ]

    async def create(self, arguments: Mapping[str, Any]) -> str:
        items = arguments.get("items")
        if not isinstance(items, list):
            return "Error: 'items' must be a list of strings."
        self.items = [{"item": str(i).strip(), "status": "pending", "notes": ""} for i in items if str(i).strip()]
        return await self.render()

    async def update(self, arguments: Mapping[str, Any]) -> str:
        index, status = arguments.get("item_index"), arguments.get("status")
        if index is None or status is None:
            return "Error: 'item_index' and 'status' are required."
        problem = self._check_index(index)
        if problem:
            return problem
        if status not in CHECKLIST_STATUSES:
            return f"Error: Invalid status '{status}'. Must be one of: {', '.join(sorted(CHECKLIST_STATUSES))}"
        entry = self.items[int(index) - 1]
        entry["status"] = str(status)
        if arguments.get("notes"):
            entry["notes"] = str(arguments["notes"])
        return await self.render()

    async def edit(self, arguments: Mapping[str, Any]) -> str:
        index, new_item = arguments.get("item_index"), arguments.get("new_item")
        if index is None or new_item is None:
            return "Error: 'item_index' and 'new_item' are required."
        problem = self._check_index(index)
        if problem:
            return problem
        if not str(new_item).strip():
            return "Error: new_item cannot be empty."
        self.items[int(index) - 1]["item"] = str(new_item).strip()
        return await self.render()

    def _check_index(self, index: Any) -> str | None:
        if not self.items:
            return "Error: No checklist exists. Use create_checklist first."
        if isinstance(index, bool) or not isinstance(index, int | float) or not 1 <= int(index) <= len(self.items):
            return (
                f"Error: Item index {index} is out of range. "
                f"Checklist has {len(self.items)} item(s) (use 1-based index)."
            )
        return None

    async def render(self) -> str:
        """The checklist as the model sees it ("" when there is none); reports progress."""
        if not self.items:
            return ""
        lines = [
            f"## {self.settings.title}",
            "",
            "Your plan: mark each step with `update_checklist_item` as you go.",
            "",
        ]
        for number, entry in enumerate(self.items, start=1):
            lines.append(f"{number}. {SYMBOLS.get(entry['status'], '[ ]')} {entry['item']}")
            if entry.get("notes"):
                lines.append(f"   > {entry['notes']}")
        done = sum(1 for entry in self.items if entry["status"] == "done")
        skipped = sum(1 for entry in self.items if entry["status"] == "skipped")
        lines += ["", f"Progress: {done}/{len(self.items)} done, {skipped} skipped", ""]
        if self.settings.report_progress:
            ctx, origin = self.invocation.ctx, self.invocation.origin
            ctx.emit(MessageType.AGENT_PROGRESS, origin, "", structure={"progress": (done + skipped) / len(self.items)})
        return "\n".join(lines)
