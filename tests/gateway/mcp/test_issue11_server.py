
"""Toolbox, middleware and refusals on a real ``neuro-san serve`` over HTTP, with the
fake LLM over real HTTP: what the LLM receives and what the client gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.fake_llm import FakeToolCall, Reply
from tests.gateway_http_support import call, chat
from tests.support.fake_thread import FakeInThread, override_env
from tests.support.servers import start_server
from tests.support.waits import wait_until

#: Takes seconds (starts servers or other processes): not in `make test-fast`.
pytestmark = pytest.mark.slow

PII = {
    "class": "langchain.agents.middleware.PIIMiddleware",
    "args": {"pii_type": "phone_number", "detector": r"\d{3}-\d{4}", "strategy": "redact", "apply_to_output": True},
}


def _write(folder: Path) -> Path:
    networks = {
        "prankster.json": {"tools": [{"name": "prankster", "instructions": "Leave messages.", "middleware": [PII]}]},
        "clock.json": {
            "tools": [
                {"name": "clock", "instructions": "Tell the time.", "tools": ["utc_now"]},
                {"name": "utc_now", "toolbox": "get_current_date_time", "args": {"utc_offset": 0}},
            ]
        },
        "refused.json": {"tools": [{"name": "r", "instructions": "x", "middleware": [{"class": "my.Tracer"}]}]},
    }
    for name, network in networks.items():
        (folder / name).write_text(json.dumps(network))
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps(dict.fromkeys(networks, True)))
    return manifest


def test_pii_toolbox_and_refusals_on_a_served_network(tmp_path: Path) -> None:
    manifest = _write(tmp_path)
    with FakeInThread() as fake:
        # An empty tool path: the toolbox tool must not depend on it (neuro-san 0.7.15 does).
        env = {**override_env(fake), "AGENT_TOOL_PATH": str(tmp_path)}
        with start_server(manifest=manifest, env=env, http=True) as server:
            port = server.http_port
            listing = json.loads(call(port, "GET", "/api/v1/list").body)
            assert sorted(a["agent_name"] for a in listing["agents"]) == ["clock", "prankster"]
            assert "refused.json: tools[0].middleware[0].class: middleware 'my.Tracer' is not supported" in server.log()

            fake.enqueue(Reply.answer("Left it. Also tried 555-0199."))
            reply = chat(port, "prankster", "Tell Jenny at 867-5309 hi", maximal=True)
            assert reply.status == 200
            sent = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "user"]
            assert sent == ["Tell Jenny at [REDACTED_PHONE_NUMBER] hi"]
            final = reply.lines()[-1]["response"]
            assert final["type"] == "AGENT_FRAMEWORK"
            assert final["text"] == "Left it. Also tried [REDACTED_PHONE_NUMBER]."

            fake.enqueue(Reply.calls(FakeToolCall("utc_now", {"utc_offset": 7})), Reply.answer("noted"))
            reply = chat(port, "clock", "what time is it?")
            assert reply.status == 200 and reply.lines()[-1]["response"]["text"] == "noted"
            [result] = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
            assert result.endswith("+00:00") and not result.startswith("Error")
            connectivity = json.loads(call(port, "GET", "/api/v1/clock/connectivity").body)
            assert connectivity["connectivity_info"][1]["display_as"] == "coded_tool"


RECORDER = '''
from neuro_san.interfaces.coded_tool import CodedTool

class Recorder(CodedTool):
    def invoke(self, args, sly_data):
        with open(sly_data["log_file"], "a") as log:
            log.write(str(sly_data.get("offset")) + "\\n")
        return "recorded"
'''


def test_periodic_interactions_run_in_the_server_with_their_sly_data(tmp_path: Path) -> None:
    (tmp_path / "ticker").mkdir()
    (tmp_path / "ticker" / "recorder.py").write_text(RECORDER)
    recorder = {"name": "recorder", "class": "recorder.Recorder", "function": {"description": "R."}}
    network = {"tools": [{"name": "ticker", "instructions": "Record.", "tools": ["recorder"]}, recorder]}
    (tmp_path / "ticker.json").write_text(json.dumps(network))
    log_file = tmp_path / "fired.txt"
    periodic = {"cron_schedule": "* * * * * *", "text": "tick", "sly_data": {"offset": 100, "log_file": str(log_file)}}
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"ticker.json": {"serve": True, "public": False, "periodic": periodic}}))

    def rule(request: object) -> Reply | None:
        messages = getattr(request, "messages", [])
        return None if any(m.get("role") == "tool" for m in messages) else Reply.calls(FakeToolCall("recorder", {}))

    with FakeInThread(rule=rule) as fake:
        env = {**override_env(fake), "AGENT_TOOL_PATH": str(tmp_path)}
        with start_server(manifest=manifest, env=env, http=True) as server:
            wait_until(lambda: len(log_file.read_text().split() if log_file.exists() else []) >= 2)
            assert log_file.read_text().split()[:2] == ["100", "100"], server.log()[-3000:]
            listing = json.loads(call(server.http_port, "GET", "/api/v1/list").body)
            assert listing.get("agents", []) == []  # periodic does not make a network public
