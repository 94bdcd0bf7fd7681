"""not-an-event-stream beyond its trigger and near misses: any cut of the body, any line end, a raw
body, and the one diagnosis (no incomplete-event beside it)."""

from __future__ import annotations

import pytest

from sse_inspect import Capture, Chunk, parse_rechunk_spec
from sse_inspect.checks import check_capture

from . import timelines as T

STRIPPED = b"".join(f"data: {tok}\n".encode() for tok in T.tokens(20))


def codes(capture: Capture, spec: str | None = None) -> dict[str, str]:
    report = check_capture(capture, rechunk=parse_rechunk_spec(spec) if spec else None)
    return {f.code: f.message for f in report.findings}


@pytest.mark.parametrize("spec", [None, "bytes:1", "bytes:3", "bytes:7", "random:5"])
def test_every_data_line_is_counted_however_the_body_is_cut(spec: str | None) -> None:
    """A data line split between two chunks ("da" | "ta:") is counted once."""
    found = codes(T.capture([(0.3, STRIPPED)]), spec)
    assert found["not-an-event-stream"].startswith("20 data lines and no blank line between them")
    assert "incomplete-event" not in found  # one diagnosis: the body holds no event, not one cut short


@pytest.mark.parametrize(("eol", "lines"), [(b"\r\n", 20), (b"\r", 20)])
def test_crlf_and_lone_cr_lines(eol: bytes, lines: int) -> None:
    found = codes(T.capture([(0.3, STRIPPED.replace(b"\n", eol))]))
    assert found["not-an-event-stream"].startswith(f"{lines} data lines")


def test_a_bom_and_blank_lines_before_an_html_page() -> None:
    page = b"\xef\xbb\xbf\r\n  <HTML><body>Service Unavailable</body></HTML>"
    assert "an HTML page" in codes(T.capture([(0.3, page)]))["not-an-event-stream"]


def test_a_raw_body_is_read_in_its_framing_and_a_charset_changes_nothing() -> None:
    document = b'{"error": "upstream timed out"}'
    raw = codes(Capture(chunks=(Chunk(None, document),)))  # no Content-Type: its first byte says NDJSON (a curl save)
    assert "not-an-event-stream" not in raw and "upstream timed out" in raw["error-event"]
    headers = (("Content-Type", "text/event-stream; charset=utf-8"),)
    assert "a JSON document" in codes(T.capture([(0.3, document)], headers=headers))["not-an-event-stream"]


def test_it_makes_the_verdict() -> None:
    report = check_capture(T.capture([(0.3, b"<!doctype html><title>Login</title>")]))
    assert report.verdict.startswith("NOT AN EVENT STREAM: the body is an HTML page")


def test_events_after_a_json_looking_start_are_an_event_stream() -> None:
    """A body that starts like JSON but dispatches events is read as one (its first line is an
    ignored field): other codes speak of it."""
    body = b'{"note": 1}\n\n' + b"".join(T.openai_events(3))
    assert "not-an-event-stream" not in codes(T.capture([(0.3, body)]))
