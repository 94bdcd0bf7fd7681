"""Secrets out before anything reaches the disk: header values, query parameters, URL passwords.

A capture is meant to be shared and committed as a test fixture, so the recorder writes
`[REDACTED]` in place of credentials. The names are matched case-insensitively.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "SECRET_HEADERS", "SECRET_QUERY_PARAMS", "Redactor"]

REDACTED = "[REDACTED]"
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "openai-organization",
        "openai-project",
    }
)
"""Headers that carry credentials or identify an account at the LLM providers we know."""
SECRET_QUERY_PARAMS = frozenset({"key", "api_key", "apikey", "token", "access_token"})
"""Query parameters that carry credentials (Gemini takes its API key as `?key=`)."""


class Redactor:
    """Replaces secret header values and query parameter values with `[REDACTED]`."""

    def __init__(self, extra: Iterable[str] = (), *, enabled: bool = True) -> None:
        extra_names = {n.strip().lower() for n in extra if n.strip()}
        self.enabled = enabled
        self.headers = SECRET_HEADERS | extra_names
        self.params = SECRET_QUERY_PARAMS | extra_names

    def redact_headers(self, headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        """The headers with secret values replaced; names, order and case kept."""
        if not self.enabled:
            return tuple(headers)
        return tuple((k, REDACTED if k.lower() in self.headers else v) for k, v in headers)

    def redact_url(self, url: str) -> str:
        """The URL with secret query parameter values replaced (the rest of the URL unchanged)."""
        if not self.enabled:
            return url
        parts = original = urlsplit(url)
        if parts.password:
            host = parts.netloc.rpartition("@")[2]
            parts = parts._replace(netloc=f"{parts.username}:{REDACTED}@{host}")
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(k.lower() in self.params for k, _ in pairs):
            query = urlencode([(k, REDACTED if k.lower() in self.params else v) for k, v in pairs], safe="[]")
            parts = parts._replace(query=query)
        return url if parts is original else urlunsplit(parts)
