"""The version of sse-inspect: one line that every layer may read (the package front re-exports it)."""

__version__ = "0.1.0"
