"""The one error a broken network file or manifest produces.

Every problem the loader finds is reported the same way: the file, the key path inside
it (``tools[2].tools[0]``, or ``line 12`` for a syntax error) and the reason, so an
operator can go straight to the faulty line.
"""

from __future__ import annotations

from neuro_san.core.errors import ConfigurationError


class NetworkLoadError(ConfigurationError):
    """A network file or manifest that cannot be served.

    The message reads ``file: key_path: reason`` (the key path is left out when the
    problem concerns the whole file).
    """

    def __init__(self, file: str, key_path: str, reason: str, line: int | None = None) -> None:
        location = f"{file}: {key_path}: " if key_path else f"{file}: "
        super().__init__(location + reason)
        self.file = file
        self.key_path = key_path
        self.reason = reason
        #: 1-based line of a syntax error, when the parser tells.
        self.line = line

    def __eq__(self, other: object) -> bool:
        # Two passes of the registry over the same broken file give equal errors, which
        # lets it log a problem once rather than on every scan.
        if not isinstance(other, NetworkLoadError):
            return NotImplemented
        return (self.file, self.key_path, self.reason) == (other.file, other.key_path, other.reason)

    def __hash__(self) -> int:
        return hash((self.file, self.key_path, self.reason))


def type_name(value: object) -> str:
    """How a value's type is named in error messages, in the file formats' own words."""
    if value is None:
        return "null"
    names = {dict: "dict", list: "list", str: "string", bool: "bool", int: "int", float: "float"}
    return names.get(type(value), type(value).__name__)


class NetworkFaults(NetworkLoadError):
    """Every fault found in one network file, each a :class:`NetworkLoadError`.

    It reads (and compares) as its first fault so code that handles one error keeps
    working; the message lists them all, one per line, and :func:`faults_of` gives each
    so that logs and ``validate`` print one line per fault.
    """

    def __init__(self, faults: list[NetworkLoadError]) -> None:
        first = faults[0]
        super().__init__(first.file, first.key_path, first.reason, first.line)
        self.faults = tuple(faults)
        self.message = "\n".join(str(fault) for fault in faults)
        self.args = (self.message,)


def faults_of(error: NetworkLoadError) -> tuple[NetworkLoadError, ...]:
    """The single faults an error stands for (itself unless it is :class:`NetworkFaults`)."""
    return error.faults if isinstance(error, NetworkFaults) else (error,)
