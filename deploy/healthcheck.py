"""The container's HEALTHCHECK: exit 0 when the local gateway's ``/readyz`` answers 200.

Standard library only, so it runs in the slim image. It asks
``AGENT_HEALTHCHECK_URL`` when set, else ``http(s)://127.0.0.1:$AGENT_HTTP_PORT/readyz``:
HTTPS when the gateway serves it (``AGENT_HTTP_TLS_CERT_FILE``, or by default the gRPC
``AGENT_TLS_CERT_FILE``). The server's certificate is not verified: this is a loopback
probe of our own process, not a client. When the gateway requires client certificates
(mTLS), give it one with ``AGENT_HEALTHCHECK_CERT_FILE`` and ``AGENT_HEALTHCHECK_KEY_FILE``.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.error
import urllib.request

TIMEOUT_SECONDS = 3.0


def probe_url(env: dict[str, str]) -> str:
    if env.get("AGENT_HEALTHCHECK_URL"):
        return env["AGENT_HEALTHCHECK_URL"]
    port = env.get("AGENT_HTTP_PORT") or "8080"
    tls = env.get("AGENT_HTTP_TLS_CERT_FILE") or env.get("AGENT_TLS_CERT_FILE")
    return f"{'https' if tls else 'http'}://127.0.0.1:{port}/readyz"


def tls_context(env: dict[str, str]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    cert, key = env.get("AGENT_HEALTHCHECK_CERT_FILE"), env.get("AGENT_HEALTHCHECK_KEY_FILE")
    if cert and key:
        context.load_cert_chain(cert, key)
    return context


def main() -> int:
    env = dict(os.environ)
    url = probe_url(env)
    context = tls_context(env) if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS, context=context) as response:
            return 0 if response.status == 200 else 1
    except (urllib.error.URLError, OSError) as error:
        print(f"not ready: {url}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
