"""The exceptions sse-inspect raises for bad input.

    SSEInspectError        base: every error here carries a one-line message and an optional hint
    ├── CaptureError       a file that cannot be read as a capture (has .path and .line)
    ├── RechunkSpecError   a --rechunk value that is not one of the known forms
    ├── FaultSpecError     a fault spec that is not one of the known forms (`_faults.FAULT_FORMS`)
    ├── DialectError       an unknown --dialect name
    └── CheckSpecError     an unknown finding code (--select, --ignore) or a bad --threshold

The parser itself never raises on content: an event stream has no illegal input.
Misuse of the API (feeding a closed parser) raises RuntimeError, as a bug should.
"""

from __future__ import annotations

__all__ = ["CaptureError", "CheckSpecError", "DialectError", "FaultSpecError", "RechunkSpecError", "SSEInspectError"]


class SSEInspectError(Exception):
    """Base class: bad input that the user can fix; the CLI prints it as one line."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class CaptureError(SSEInspectError):
    """Raised when a file cannot be read as a capture (missing, a directory, a corrupt header)."""

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, hint: str | None = None
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.path = path
        self.line = line


class RechunkSpecError(SSEInspectError):
    """Raised for a rechunk spec that is not one of the documented forms."""


class FaultSpecError(SSEInspectError):
    """Raised for a fault spec that is not one of the documented forms (`_faults.FAULT_FORMS`)."""


class DialectError(SSEInspectError):
    """Raised for a dialect name that no dialect has."""


class CheckSpecError(SSEInspectError):
    """Raised for an unknown finding code or a threshold that is not `NAME=VALUE` with a known name and a number."""
