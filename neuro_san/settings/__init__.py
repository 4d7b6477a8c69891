"""One registry of settings: every environment variable the server, the gateway and the
client commands honour, declared once (``catalog_*``), read once at start by the command
line, typed and validated (``registry``). See docs/architecture.md, *Settings*."""

from neuro_san.settings import catalog_external, catalog_gateway, catalog_server  # noqa: F401 - they declare
from neuro_san.settings.registry import (
    Kind,
    Origin,
    Setting,
    SettingError,
    Settings,
    activate,
    catalog,
    current,
    hand_down,
    process_env,
    setting,
    snapshot,
)

__all__ = [
    "Kind", "Origin", "Setting", "SettingError", "Settings", "activate", "catalog", "current", "hand_down",
    "process_env", "setting", "snapshot",
]
