"""Load-time settings of neuro-san-studio's ``mem0`` memory backend
(:mod:`neuro_san.studio.memory_mem0` is the backend itself).

Read when a network naming the backend loads, so a missing or unsupported ``mem0ai``
package or an unset ``MEM0_API_KEY`` refuses the network with the reason (studio fails
at the first tool call instead). Only ``importlib`` looks at the package here: mem0 itself
is imported by the backend, on its first call.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: The mem0ai versions whose ``AsyncMemoryClient`` this store speaks to (and that install
#: beside protobuf 7): the ``mem0`` extra of this package.
SUPPORTED_VERSIONS = ((0, 1, 109), (0, 1, 116))
SUPPORTED_TEXT = "mem0ai>=0.1.109,<0.1.116"
INSTALL_HINT = "pip install 'neuro-san-grpc[mem0]'"
DEFAULT_USER = "default_user"

@dataclass(frozen=True, slots=True)
class Mem0Settings:
    """What the backend reads from the server's environment at load."""

    api_key: str = field(repr=False)
    #: The Mem0 Platform's address (``MEM0_HOST``); None: the client's own default.
    host: str | None
    #: ``MEM0_DEFAULT_USER_ID``, or ``default_user``: the user when sly_data names none.
    default_user: str


class Mem0Unavailable(Exception):
    """The mem0 backend cannot be served here; ``str(error)`` says why."""


def _release(version: str) -> tuple[int, ...] | None:
    match = re.match(r"(\d+)\.(\d+)\.(\d+)$", version)
    return tuple(int(part) for part in match.groups()) if match else None


def mem0_settings(env: Mapping[str, str]) -> Mem0Settings:
    """The backend's settings, or :class:`Mem0Unavailable` with the reason it is refused."""
    try:
        importable = importlib.util.find_spec("mem0") is not None
    except (ImportError, ValueError):
        importable = False
    if not importable:
        raise Mem0Unavailable(f"the mem0 backend needs the mem0ai package, which is not installed ({INSTALL_HINT})")
    try:
        version = importlib.metadata.version("mem0ai")
    except importlib.metadata.PackageNotFoundError:
        raise Mem0Unavailable("a 'mem0' module is importable but the mem0ai package is not installed") from None
    release = _release(version)
    low, high = SUPPORTED_VERSIONS
    if release is None or not low <= release < high:
        raise Mem0Unavailable(
            f"mem0ai {version} is installed; the mem0 backend works with {SUPPORTED_TEXT} (later versions need "
            f"protobuf below 7, which this server cannot run with): {INSTALL_HINT}"
        )
    api_key = env.get("MEM0_API_KEY", "").strip()
    if not api_key:
        raise Mem0Unavailable("the mem0 backend needs MEM0_API_KEY (a Mem0 Platform API key) in the environment")
    host = env.get("MEM0_HOST", "").strip().rstrip("/") or None
    if host is not None and not host.startswith(("http://", "https://")):
        raise Mem0Unavailable(f"MEM0_HOST must be an http(s) URL, not {host!r}")
    default_user = env.get("MEM0_DEFAULT_USER_ID", "").strip() or DEFAULT_USER
    return Mem0Settings(api_key=api_key, host=host, default_user=default_user)
