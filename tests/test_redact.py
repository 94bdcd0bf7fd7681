"""`sse-inspect redact` and the `secret-in-capture` finding: every secret out, every other byte, cut and time kept."""

from __future__ import annotations

import dataclasses
import gzip
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, dump_capture, load_capture, parse_capture
from sse_inspect._secrets import TOKEN_BYTES, find_secrets, redact_capture
from sse_inspect.checks import Severity, check_capture
from sse_inspect.cli import cli

from .helpers import ROOT, split_at

OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Q-7"
ANTHROPIC = "sk-ant-api03-" + "x7Y" * 30
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SECRETS = [OPENAI, ANTHROPIC, GOOGLE, JWT]
SSE = (("Content-Type", "text/event-stream"),)


def body_with(*tokens: str) -> bytes:
    return b"".join(f'data: {{"text": "use {t} here"}}\n\n'.encode() for t in tokens) + b"data: [DONE]\n\n"


def capture(chunks: list[bytes], **changes: object) -> Capture:
    base = Capture(
        chunks=tuple(Chunk(0.1 * (i + 1), c) for i, c in enumerate(chunks)),
        request=Request(
            method="POST",
            url="https://api.example/v1/chat",
            headers=(("Content-Type", "application/json"),),
            body='{"prompt": "hi"}',
        ),
        response=Response(status=200, headers=SSE, t=0.05),
        end=End(kind="complete", t=1.0),
        recorder="test",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner(env={"COLUMNS": None}).invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


# -- the body: tokens found across chunk cuts, everything else kept -----------------------------------


def assert_redacted_in_place(before: Capture, after: Capture) -> None:
    """Same chunk count and times; the joined body is the original with each token replaced; a chunk
    that touches no token is unchanged; a chunk's bytes outside tokens stay in that chunk."""
    body = before.body
    assert after.body == TOKEN_BYTES.sub(b"[REDACTED]", body)
    assert [c.t for c in after.chunks] == [c.t for c in before.chunks]
    spans = [m.span() for m in TOKEN_BYTES.finditer(body)]
    start = 0
    for old, new in zip(before.chunks, after.chunks, strict=True):
        end = start + len(old.data)
        if not any(s < end and e > start for s, e in spans):
            assert new.data == old.data
        start = end


@pytest.mark.parametrize("secret", SECRETS)
def test_a_token_cut_anywhere_is_redacted(secret: str) -> None:
    body = body_with(secret)
    where = body.index(secret.encode())
    for cut in range(where - 2, where + len(secret) + 2):
        before = capture(split_at(body, [cut]))
        after, counts = redact_capture(before)
        assert counts.tokens == 1
        assert secret.encode() not in after.body and b"[REDACTED]" in after.body
        assert_redacted_in_place(before, after)


@given(st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_any_cuts_keep_count_times_and_untouched_bytes(cuts: list[int]) -> None:
    before = capture(split_at(body_with(OPENAI, "no secret", JWT, GOOGLE), cuts))
    after, counts = redact_capture(before)
    assert counts.tokens == 3
    assert_redacted_in_place(before, after)
    assert redact_capture(after)[1].total == 0, "redacting twice changes nothing"


def test_one_byte_chunks() -> None:
    body = body_with(ANTHROPIC)
    before = capture([body[i : i + 1] for i in range(len(body))])
    after, _ = redact_capture(before)
    assert_redacted_in_place(before, after)
    assert len(after.chunks) == len(body)


@pytest.mark.parametrize("near_miss", [
    "sk-short",  # too short to be a key
    "task-" + "a" * 30,  # sk- inside a word
    "Zm9vAIza" + "b" * 35,  # AIza inside a base64 blob
    "Zm9v/AIza" + "b" * 35,
    "AIza" + "b" * 36,  # not exactly 35 after AIza
    "eyJhbGciOiJIUzI1NiJ9",  # a base64 JSON object, not a JWT
    "[REDACTED]",
])  # fmt: skip
def test_near_misses_are_left_alone(near_miss: str) -> None:
    before = capture([body_with(near_miss)])
    assert redact_capture(before) == (before, redact_capture(before)[1])
    assert redact_capture(before)[1].total == 0
    assert not find_secrets(before)


def test_a_compressed_body_with_a_token_is_stored_decoded() -> None:
    plain = body_with(OPENAI)
    wire = gzip.compress(plain)
    before = capture(
        [wire[:20], wire[20:]], response=Response(status=200, headers=(*SSE, ("Content-Encoding", "gzip")), t=0.05)
    )
    assert find_secrets(before, analyze(before).chunks[0].data + analyze(before).chunks[1].data)
    after, counts = redact_capture(before)
    assert counts.tokens == 1
    assert after.content_encoding is None and after.extra["decoded"] == "gzip"
    assert after.body == plain.replace(OPENAI.encode(), b"[REDACTED]")
    assert [c.t for c in after.chunks] == [c.t for c in analyze(before).chunks]
    clean = capture([gzip.compress(body_with("nothing"))], response=before.response)
    assert redact_capture(clean)[0] is clean


# -- headers, URL, request body ---------------------------------------------------------------------


def test_headers_url_and_request_body() -> None:
    before = capture(
        [body_with("x")],
        request=Request(
            method="POST",
            url=f"https://u:pw@api.example/v1?key=abc&q=1&sig={GOOGLE}",
            headers=(("Authorization", "Bearer xyz"), ("X-Custom", f"token {JWT}"), ("Accept", "*/*")),
            body=f'{{"api_key": "{ANTHROPIC}"}}',
        ),
        response=Response(status=200, headers=(*SSE, ("Set-Cookie", "session=1"))),
    )
    leaks = find_secrets(before)
    assert {leak.where for leak in leaks} == {
        "request header Authorization", "request header X-Custom", "request URL", "request URL parameter key",
        "request URL parameter sig", "request body", "response header Set-Cookie",
    }  # fmt: skip

    after, counts = redact_capture(before)

    # sig= is a credential parameter (Azure SAS): its value goes as a URL part, no longer as a token
    assert str(counts) == "2 header value(s), 3 URL part(s), 2 token(s) redacted"
    assert after.request is not None and after.response is not None
    assert after.request.url == "https://u:[REDACTED]@api.example/v1?key=[REDACTED]&q=1&sig=[REDACTED]"
    assert after.request.headers == (
        ("Authorization", "[REDACTED]"),
        ("X-Custom", "token [REDACTED]"),
        ("Accept", "*/*"),
    )
    assert after.request.body == '{"api_key": "[REDACTED]"}'
    assert after.response.header("set-cookie") == "[REDACTED]"
    assert after.body == before.body and after.chunks == before.chunks
    assert not find_secrets(after)


# -- the check ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", SECRETS)
def test_check_finds_a_secret_without_printing_it(secret: str) -> None:
    leaky = capture([body_with(secret)])
    [finding] = [f for f in check_capture(leaky).findings if f.code == "secret-in-capture"]
    assert finding.severity == Severity.ERROR
    assert secret not in finding.message and secret[:12] not in finding.message
    assert "in the response body at byte" in finding.message
    assert finding.offset == body_with(secret).index(secret.encode())
    assert "secret-in-capture" not in {f.code for f in check_capture(redact_capture(leaky)[0]).findings}


def test_check_runs_on_raw_bodies_and_error_responses() -> None:
    raw = parse_capture(body_with(OPENAI))
    assert "secret-in-capture" in {f.code for f in check_capture(raw).findings}
    refused = capture(
        [b'{"error": "bad key"}'], response=Response(status=401), request=Request(headers=(("x-api-key", "k"),))
    )
    report = check_capture(refused)
    assert "secret-in-capture" in {f.code for f in report.findings}
    assert report.verdict.startswith("HTTP ERROR")


def test_bundled_captures_are_clean() -> None:
    for path in sorted((ROOT / "captures").glob("*.jsonl")):
        assert not find_secrets(load_capture(path)), path


# -- the command -------------------------------------------------------------------------------------


@pytest.fixture
def leaky(tmp_path: Path) -> Path:
    path = tmp_path / "leaky.jsonl"
    body = body_with(OPENAI)
    cut = body.index(OPENAI.encode()) + 10
    path.write_text(
        dump_capture(capture([body[:cut], body[cut:]], request=Request(headers=(("Authorization", "Bearer t"),))))
    )
    path.chmod(0o640)
    return path


def test_redact_in_place(tmp_path: Path, leaky: Path) -> None:
    clean = tmp_path / "clean.jsonl"
    clean.write_text(dump_capture(capture([body_with("nothing")])))
    clean_before = (clean.read_bytes(), clean.stat().st_mtime_ns)
    assert run("check", "--select", "secret-in-capture", str(leaky))[0] == 1

    code, out, err = run("redact", "--in-place", str(leaky), str(clean))

    assert (code, out) == (0, ""), err
    assert err.splitlines() == [f"{leaky}: 1 header value(s), 1 token(s) redacted", f"{clean}: nothing to redact"]
    after = load_capture(leaky)
    assert after.body == body_with("[REDACTED]") and len(after.chunks) == 2 and not after.warnings
    assert stat.S_IMODE(leaky.stat().st_mode) == 0o640
    assert (clean.read_bytes(), clean.stat().st_mtime_ns) == clean_before
    assert run("check", "--select", "secret-in-capture", str(leaky))[0] == 0
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".redact-")]


def test_redact_to_stdout_or_a_file(tmp_path: Path, leaky: Path) -> None:
    before = leaky.read_bytes()
    code, out, err = run("redact", str(leaky))
    assert code == 0, err
    assert parse_capture(out.encode()).body == body_with("[REDACTED]")
    code, _, err = run("redact", str(leaky), "-o", str(tmp_path / "out.jsonl"))
    assert code == 0, err
    assert load_capture(tmp_path / "out.jsonl").body == body_with("[REDACTED]")
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o600
    assert leaky.read_bytes() == before


@pytest.mark.parametrize(("args", "message"), [
    (["redact", "{leaky}", "{leaky}"], "several captures need --in-place"),
    (["redact", "--in-place", "-o", "x", "{leaky}"], "--in-place and -o exclude each other"),
    (["redact", "--in-place", "{raw}"], "--in-place rewrites sse-capture/1 files only"),
    (["redact", "{tmp}/missing.jsonl"], "no such file"),
])  # fmt: skip
def test_redact_bad_usage_is_one_line(tmp_path: Path, leaky: Path, args: list[str], message: str) -> None:
    (tmp_path / "raw.sse").write_bytes(body_with(OPENAI))
    code, _, err = run(*(a.format(leaky=leaky, raw=tmp_path / "raw.sse", tmp=tmp_path) for a in args))
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert OPENAI.encode() in (tmp_path / "raw.sse").read_bytes()
