"""Parsing an agent's ``allow`` block into :class:`AllowRules`.

Upstream's shapes: each ``*.sly_data`` is a list of keys or a dict ``key: true | false |
"renamed_key"``; ``from_downstream.messages`` is a bool, or a reference string, list or
dict (any non-empty one means yes); ``connectivity`` is a bool. Sub-keys we do not act on
(``to_tracing``) are accepted and ignored; ``reservations`` gives a coded tool a
Reservationist (``neuro_san.reservations``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from neuro_san.core.load_errors import NetworkLoadError, type_name
from neuro_san.network.spec import AllowRules, SlyDataRule

logger = logging.getLogger(__name__)

_SLY_DATA_DIRECTIONS = ("to_upstream", "to_downstream", "from_downstream")
_KNOWN_KEYS = frozenset({*_SLY_DATA_DIRECTIONS, "connectivity", "reservations"})


def parse_allow(raw: Any, file: str, key_path: str) -> AllowRules:
    """Build the rules of one agent's ``allow`` value found at ``key_path``."""
    if raw is None:
        return AllowRules()
    if not isinstance(raw, Mapping):
        raise NetworkLoadError(file, key_path, f"must be a dict, not {type_name(raw)}")
    rules: dict[str, SlyDataRule] = {}
    for direction in _SLY_DATA_DIRECTIONS:
        block = raw.get(direction)
        path = f"{key_path}.{direction}"
        if block is None:
            rules[direction] = SlyDataRule()
            continue
        if not isinstance(block, Mapping):
            raise NetworkLoadError(file, path, f"must be a dict, not {type_name(block)}")
        rules[direction] = _sly_data_rule(block.get("sly_data"), file, f"{path}.sly_data")

    messages = False
    from_downstream = raw.get("from_downstream")
    if isinstance(from_downstream, Mapping) and "messages" in from_downstream:
        messages = _messages_flag(
            from_downstream["messages"], file, f"{key_path}.from_downstream.messages"
        )

    connectivity = raw.get("connectivity", True)
    if not isinstance(connectivity, bool):
        raise NetworkLoadError(
            file, f"{key_path}.connectivity", f"must be true or false, not {connectivity!r}"
        )
    reservations = raw.get("reservations", False)
    if not isinstance(reservations, bool):
        raise NetworkLoadError(
            file, f"{key_path}.reservations", f"must be true or false, not {reservations!r}"
        )
    for key in raw:
        if key not in _KNOWN_KEYS:
            logger.debug("%s: %s.%s is not used by this server; ignored", file, key_path, key)
    return AllowRules(
        to_upstream=rules["to_upstream"],
        to_downstream=rules["to_downstream"],
        from_downstream=rules["from_downstream"],
        from_downstream_messages=messages,
        connectivity=connectivity,
        reservations=reservations,
    )


def _sly_data_rule(raw: Any, file: str, key_path: str) -> SlyDataRule:
    if raw is None:
        return SlyDataRule()
    keys: dict[str, str] = {}
    if isinstance(raw, list):
        for index, key in enumerate(raw):
            if key is None:
                # An unset optional substitution (`${?llm_config_key}`) leaves a null here;
                # neuro-san looks the key up, finds nothing and lets nothing through for it.
                continue
            if not isinstance(key, str) or not key:
                raise NetworkLoadError(
                    file, f"{key_path}[{index}]", f"must be a sly_data key name, not {key!r}"
                )
            keys[key] = key
    elif isinstance(raw, Mapping):
        for key, verdict in raw.items():
            if verdict is True:
                keys[key] = key
            elif verdict is False:
                continue
            elif isinstance(verdict, str) and verdict:
                keys[key] = verdict
            else:
                raise NetworkLoadError(
                    file,
                    f"{key_path}.{key}",
                    f"must be true, false or the key's new name, not {verdict!r}",
                )
    else:
        raise NetworkLoadError(
            file, key_path, f"must be a list of keys or a dict, not {type_name(raw)}"
        )
    return SlyDataRule(keys=MappingProxyType(keys))


def _messages_flag(raw: Any, file: str, key_path: str) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str | list | Mapping):
        # Upstream also takes a reference string, list or dict; any non-empty one
        # turns forwarding on. Which agents' messages it selects is not modelled.
        return bool(raw)
    raise NetworkLoadError(
        file, key_path, f"must be a bool, string, list or dict, not {type_name(raw)}"
    )
