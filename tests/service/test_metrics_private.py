"""With API keys on, ``/metrics`` (read without a credential, on the HTTP port and on
``--metrics-port``) never names a private network (issue 33 item 8): calls to one are
labelled ``agent="private"``; public networks keep their names."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from tests.support.servers import free_port, start_server

pytestmark = pytest.mark.slow


def _get(url: str, key: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_metrics_without_a_key_do_not_name_private_networks(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"name": "ops", "key": "k-1", "agents": ["*", "deep/*"]}]}))
    metrics_port = free_port()
    with start_server(env={"AGENT_API_KEYS_FILE": str(keys)}, http=True,
                      extra_args=["--metrics-port", str(metrics_port)]) as server:
        base = server.http_base
        assert _get(f"{base}/api/v1/deep/math_guy/function", "k-1")[0] == 200  # private, by name
        assert _get(f"{base}/api/v1/hello_world/function", "k-1")[0] == 200
        for url in (f"{base}/metrics", f"http://127.0.0.1:{metrics_port}/metrics"):
            status, text = _get(url)
            assert status == 200
            assert "math_guy" not in text
            assert 'neuro_san_requests_total{agent="private",code="OK",method="Function"} 1.0' in text
            assert 'agent="hello_world"' in text
