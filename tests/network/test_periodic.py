"""Periodic interactions (manifest ``periodic``): cron parsing, load-time validation and
the scheduler firing chats, with their sly_data, against the fake LLM."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from neuro_san.core.load_errors import NetworkLoadError
from neuro_san.network.manifest import parse_manifest
from neuro_san.periodic.config import parse_periodic
from neuro_san.periodic.cron import CronError, parse_cron
from neuro_san.periodic.scheduler import run_periodic
from tests.fakes.fake_llm import FakeLlmServer, FakeToolCall, Reply, run_with_fake_llm
from tests.support.runtime import make_host

T0 = datetime(2026, 11, 30, 16, 59, 58)  # a Monday


@pytest.mark.parametrize(
    ("cron", "at_beginning", "expected"),
    [
        ("*/1 * * * * 0", False, [datetime(2026, 11, 30, 17, 0, 0), datetime(2026, 11, 30, 17, 1, 0)]),
        ("* * * * * */15", False, [datetime(2026, 11, 30, 17, 0, 0), datetime(2026, 11, 30, 17, 0, 15)]),
        ("30 9 * * mon-fri", False, [datetime(2026, 12, 1, 9, 30), datetime(2026, 12, 2, 9, 30)]),
        ("0 0 1 jan *", False, [datetime(2027, 1, 1), datetime(2028, 1, 1)]),
        ("0 0 0 29 2 *", True, [datetime(2028, 2, 29), datetime(2032, 2, 29)]),
        ("0 12 13 * 5", False, [datetime(2026, 12, 4, 12), datetime(2026, 12, 11, 12)]),  # day 13 OR Friday
        ("5 * * * * 7", False, [datetime(2026, 11, 30, 17, 5, 7), datetime(2026, 11, 30, 18, 5, 7)]),
        ("0 0 * * 7", False, [datetime(2026, 12, 6), datetime(2026, 12, 13)]),  # 7 is Sunday
    ],
)
def test_cron_fire_times(cron: str, at_beginning: bool, expected: list[datetime]) -> None:
    schedule = parse_cron(cron, at_beginning)
    first = schedule.next_after(T0)
    assert [first, schedule.next_after(first)] == expected


@pytest.mark.parametrize("cron", ["* * * *", "61 * * * *", "* * * * * */0", "a * * * *", "5-1 * * * *", "0 0 30 2 *"])
def test_bad_cron_schedules(cron: str) -> None:
    with pytest.raises(CronError):
        parse_cron(cron)


def test_periodic_values_as_neuro_san_writes_them() -> None:
    [every_minute] = parse_periodic(True, "m", "x.periodic")
    assert (every_minute.cron_schedule, every_minute.text) == ("*/1 * * * * 0", "Do your thing")
    assert dict(every_minute.metadata) == {"user_id": "system"}
    [string] = parse_periodic("0 * * * *", "m", "x.periodic")
    assert string.cron_schedule == "0 * * * *"
    [single] = parse_periodic({"cron_schedule": "* * * * * */15", "text": "add", "sly_data": {"offset": 100}}, "m", "p")
    assert (single.text, dict(single.sly_data)) == ("add", {"offset": 100})
    several = parse_periodic(
        {"interactions": [{"text": "a", "metadata": {"user_id": "cron"}}, {"text": "b", "enable": False}]}, "m", "p"
    )
    assert [(i.text, dict(i.metadata)) for i in several] == [("a", {"user_id": "cron"})]
    assert parse_periodic(False, "m", "p") == ()


@pytest.mark.parametrize(
    ("value", "key_path", "reason"),
    [
        ("61 * * * *", "x.hocon.periodic.cron_schedule", "outside 0-59"),
        ({"interactions": [{"cron_schedule": "bad"}]}, "x.hocon.periodic.interactions[0].cron_schedule", "5 or 6"),
        ({"text": ""}, "x.hocon.periodic.text", "non-empty"),
        ({"colour": "red"}, "x.hocon.periodic.colour", "unknown key"),
        (7, "x.hocon.periodic", "must be true"),
    ],
)
def test_bad_periodic_entries_are_refused_with_the_key_path(value: Any, key_path: str, reason: str) -> None:
    manifest = parse_manifest({"x.hocon": {"serve": True, "periodic": value}, "y.hocon": True}, Path("manifest.json"))
    assert set(manifest.entries) == {"y"}
    [error] = manifest.errors
    assert error.key_path == key_path and reason in error.reason
    with pytest.raises(NetworkLoadError):
        parse_periodic(value, "m", "p")


RECORDER = '''
import json
from neuro_san.interfaces.coded_tool import CodedTool

class Recorder(CodedTool):
    async def async_invoke(self, args, sly_data):
        with open(sly_data["log_file"], "a") as log:
            log.write(json.dumps({"offset": sly_data.get("offset"), "user": sly_data["request_metadata"]}) + "\\n")
        return "recorded"
'''


def test_the_scheduler_fires_chats_with_their_sly_data(tmp_path: Path) -> None:
    (tmp_path / "ticker").mkdir()
    (tmp_path / "ticker" / "recorder.py").write_text(RECORDER)
    log_file = tmp_path / "fired.jsonl"

    async def body(fake: FakeLlmServer) -> None:
        network = {
            "llm_config": fake.llm_config(),
            "tools": [
                {"name": "ticker", "instructions": "Record.", "tools": ["recorder"]},
                {"name": "recorder", "class": "recorder.Recorder", "function": {"description": "Records."}},
            ],
        }
        host, factory = make_host({"ticker": network}, [tmp_path])
        fake.rule = lambda r: None if any(m.get("role") == "tool" for m in r.messages) else Reply.calls(
            FakeToolCall("recorder", {})
        )
        interactions = parse_periodic(
            {"cron_schedule": "* * * * * *", "text": "tick", "sly_data": {"offset": 100, "log_file": str(log_file)}},
            "m",
            "p",
        )
        task = asyncio.create_task(run_periodic(lambda: {"ticker": interactions}, host))
        assert await fake.wait_for(lambda: log_file.exists() and len(log_file.read_text().splitlines()) >= 2, 6.0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        lines = [json.loads(line) for line in log_file.read_text().splitlines()]
        assert lines[0] == {"offset": 100, "user": {"user_id": "system"}}
        assert fake.requests[0].last_input_text() == "tick"
        await factory.aclose()

    run_with_fake_llm(body)
