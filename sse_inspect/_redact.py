"""Secrets out before anything reaches the disk: header values, query parameters, URL passwords,
and the values of credential fields in a JSON request body.

A capture is meant to be shared and committed as a test fixture, so the recorder writes
`[REDACTED]` in place of credentials. The names are matched case-insensitively. This is the one
list of names: `check`'s secret scan (`_secrets`) looks for what is here. Keys and tokens that
stand on their own (`sk-...`, JWTs) are found by pattern, anywhere: see `_secrets`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "SECRET_FIELDS", "SECRET_HEADERS", "SECRET_QUERY_PARAMS", "Redactor"]

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
        "ocp-apim-subscription-key",  # Azure API Management (Azure AI services)
        "x-auth-token",
        "x-amz-security-token",  # AWS session token (Bedrock)
        "x-functions-key",  # Azure Functions
        "private-token",  # GitLab
    }
)
"""Headers that carry credentials or identify an account at the LLM providers and gateways we know."""
SECRET_QUERY_PARAMS = frozenset(
    {
        "key",  # Gemini takes its API key as `?key=`
        "api_key",
        "apikey",
        "api-key",  # Azure OpenAI
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "password",
        "sig",  # Azure shared access signatures
        "signature",
        "x-amz-signature",  # AWS presigned URLs
        "x-amz-security-token",
        "x-goog-signature",  # Google Cloud signed URLs
    }
)
"""Query parameters that carry credentials."""
SECRET_FIELDS = SECRET_QUERY_PARAMS - {"key", "token", "sig", "signature"}
"""Fields of a JSON request body that carry credentials: the query parameters' names but those too
common in ordinary JSON (a tool's `"key"`, a `"token"` in a prompt) to be taken for a secret."""

_JSON_FIELD = re.compile(r'"([A-Za-z0-9_-]{1,64})"(\s*:\s*)"((?:[^"\\]|\\.)*)"')
"""A JSON string field: `"name": "value"` (its name, the colon as written, the value's escaped text)."""


class Redactor:
    """Replaces secret header values and query parameter values with `[REDACTED]`."""

    def __init__(self, extra: Iterable[str] = (), *, enabled: bool = True) -> None:
        extra_names = {n.strip().lower() for n in extra if n.strip()}
        self.enabled = enabled
        self.headers = SECRET_HEADERS | extra_names
        self.params = SECRET_QUERY_PARAMS | extra_names
        self.fields = SECRET_FIELDS | extra_names

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

    def redact_fields(self, text: str) -> tuple[str, int]:
        """`text` (a JSON request body, most often) with the string value of every credential field
        (`"api_key": "..."`: SECRET_FIELDS) replaced, and how many. Only string
        values are replaced; the text around them is kept byte for byte, so a body that is not JSON
        at all is left as it is unless it holds such a quoted pair."""
        if not self.enabled:
            return text, 0
        count = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal count
            name, colon, value = match.groups()
            if name.lower() not in self.fields or not value or value == REDACTED:
                return match.group()
            count += 1
            return f'"{name}"{colon}"{REDACTED}"'

        return _JSON_FIELD.sub(replace, text), count

    def field_leaks(self, text: str) -> list[str]:
        """The names of the credential fields of `text` whose values `redact_fields` would replace."""
        return [
            name
            for name, _, value in _JSON_FIELD.findall(text)
            if name.lower() in self.fields and value and value != REDACTED
        ]
