"""Issue 17, the recorder's part without a proxy: every kind of secret in every place is redacted
before it reaches the disk (a key cut across two chunks included, chunks and times kept), `check`
finds each kind in an unredacted capture and `redact` takes it out; the attached body is bounded;
capture folders are private. (The addon's side: tests/test_mitm_addon.py.)"""

from __future__ import annotations

import os
import random
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, Request, Response, load_capture
from sse_inspect._redact import REDACTED, Redactor
from sse_inspect._secrets import (
    _SHORT,
    TOKEN_BYTES,
    StreamRedactor,
    _contains,
    _token_spans,
    find_secrets,
    redact_capture,
)
from sse_inspect.checks import check_capture
from sse_inspect.recorder import CaptureWriter, StreamRecorder, capture_dir_warning, new_capture_file

from .test_recorder import WHEN
from .test_redact import GOOGLE, JWT, OPENAI, SECRETS

SSE = (("Content-Type", "text/event-stream"),)

# (where, request): each a secret the recorder used to write as it came (issue 17, item 7)
PLACES: list[tuple[str, Request]] = [
    ("body: Bearer key", Request(method="POST", url="http://h/v1", body=f'{{"auth": "Bearer {OPENAI}"}}')),
    ("body: JWT", Request(method="POST", url="http://h/v1", body=f'{{"id": "{JWT}"}}')),
    ("body: api_key field", Request(method="POST", url="http://h/v1", body='{"api_key" : "plain-value-1"}')),
    ("body: client_secret", Request(method="POST", url="http://h/v1", body='{"client_secret":"plain-value-1"}')),
    ("path: key", Request(url=f"http://h/secret/{OPENAI}/x")),
    ("path: JWT", Request(url=f"http://h/t/{JWT}")),
    ("header Ocp-Apim-Subscription-Key", Request(url="http://h/v1", headers=(("Ocp-Apim-Subscription-Key", "plain-value-1"),))),
    ("header X-Auth-Token", Request(url="http://h/v1", headers=(("X-Auth-Token", "plain-value-1"),))),
    ("header X-Amz-Security-Token", Request(url="http://h/v1", headers=(("X-Amz-Security-Token", "plain-value-1"),))),
    ("query sig", Request(url="http://h/v1?sig=plain-value-1&q=1")),
    ("query api-key", Request(url="http://h/v1?api-key=plain-value-1")),
    ("query X-Amz-Signature", Request(url="http://h/v1?X-Amz-Signature=plain-value-1")),
    ("query client_secret", Request(url="http://h/v1?client_secret=plain-value-1")),
    ("query refresh_token", Request(url="http://h/v1?refresh_token=plain-value-1")),
]  # fmt: skip
SECRET_OF = {"plain-value-1": "plain-value-1", OPENAI: OPENAI, JWT: JWT}


def _secret(request: Request) -> str:
    text = f"{request.url} {request.headers} {request.body}"
    return next(s for s in SECRET_OF if s in text)


def _writer(tmp_path: Path, request: Request, redactor: Redactor | None = None) -> CaptureWriter:
    return CaptureWriter.create(tmp_path, request=request, response=Response(headers=SSE),
                                redactor=redactor or Redactor(), recorder="test", when=WHEN)  # fmt: skip


@pytest.mark.parametrize(("where", "request_"), PLACES, ids=[p[0] for p in PLACES])
def test_the_recorder_writes_no_secret_in_the_header_nor_the_file_name(
    where: str, request_: Request, tmp_path: Path
) -> None:
    writer = _writer(tmp_path, request_)
    writer.end("complete", 0.1)
    secret = _secret(request_)
    assert secret not in writer.path.read_text(), where
    assert secret not in writer.path.name and "sk-" not in writer.path.name
    assert REDACTED in writer.path.read_text()
    assert not find_secrets(load_capture(writer.path)), "recording and check agree"


def test_the_recorder_redacts_response_headers_too(tmp_path: Path) -> None:
    headers = (*SSE, ("X-Auth-Token", "plain-value-1"), ("X-Trace", f"key {OPENAI}"))
    writer = CaptureWriter.create(tmp_path, request=Request(url="http://h/v1"), response=Response(headers=headers),
                                  redactor=Redactor(), recorder="test", when=WHEN)  # fmt: skip
    writer.end("complete", 0.1)
    text = writer.path.read_text()
    assert "plain-value-1" not in text and OPENAI not in text
    assert not find_secrets(load_capture(writer.path))


def test_without_redaction_the_recorder_writes_what_came(tmp_path: Path) -> None:
    """`sse_redact=false`: nothing is touched, neither the request nor the body."""
    request = Request(url=f"http://h/secret/{OPENAI}/x", body=f'{{"api_key": "{JWT}"}}')
    writer = _writer(tmp_path, request, Redactor(enabled=False))
    writer.chunks([0.1], [f"data: {OPENAI}".encode()])
    writer.end("complete", 0.2)
    capture = load_capture(writer.path)
    assert capture.request == request and capture.body == f"data: {OPENAI}".encode()
    assert "sk-proj" in writer.path.name


HEADERS = [(where, request) for where, request in PLACES if request.headers]


def _in_the_response(request: Request) -> Capture:
    return Capture(response=Response(headers=(*SSE, *request.headers)), request=Request(url="http://h/v1"))


@pytest.mark.parametrize(
    ("capture", "secret"),
    [(Capture(request=request, response=Response(headers=SSE)), _secret(request)) for _, request in PLACES]
    + [(_in_the_response(request), _secret(request)) for _, request in HEADERS],
    ids=[where for where, _ in PLACES] + [f"response {where}" for where, _ in HEADERS],
)
def test_check_finds_each_kind_and_redact_takes_it_out(capture: Capture, secret: str) -> None:
    """The same set as the recorder's: one list of names, one pattern, both ways."""
    assert find_secrets(capture), "check finds it"
    [finding] = [f for f in check_capture(capture).findings if f.code == "secret-in-capture"]
    assert secret not in finding.message
    redacted, counts = redact_capture(capture)
    assert counts.total >= 1 and not find_secrets(redacted)
    assert secret not in repr(redacted)


# -- the response body, chunk by chunk ---------------------------------------------------------------


def _record(tmp_path: Path, batches: list[list[bytes]]) -> Capture:
    """Write `batches` of chunks (chunk k at time k) as a recorder does, then load the capture."""
    writer = _writer(tmp_path, Request(url="http://h/v1"))
    t = 0
    for batch in batches:
        writer.chunks([float(t + k) for k in range(len(batch))], batch)
        t += len(batch)
    writer.end("complete", float(t))
    return load_capture(writer.path)


@pytest.mark.parametrize("secret", SECRETS, ids=["openai", "anthropic", "google", "jwt"])
def test_a_key_cut_across_two_chunks_is_redacted_and_the_chunks_keep_their_times(secret: str, tmp_path: Path) -> None:
    event = f'data: {{"text": "use {secret} here"}}\n\n'.encode()
    for cut in (event.index(b"use ") + 4 + 2, event.index(b" here") - 3):
        capture = _record(tmp_path / str(cut), [[event[:cut]], [event[cut:], b"data: [DONE]\n\n"]])
        assert capture.body == b'data: {"text": "use [REDACTED] here"}\n\ndata: [DONE]\n\n'
        assert [c.t for c in capture.chunks] == [0.0, 1.0, 2.0]
        assert secret.encode()[:6] not in Path(str(capture.path)).read_bytes()


def test_body_redaction_never_eats_a_line_end_and_keeps_other_bytes(tmp_path: Path) -> None:
    body = f"data: {OPENAI}\n\nevent: x\ndata: {JWT}\r\n\r\ndata: {GOOGLE}\rdata: ok\n\n".encode()
    capture = _record(tmp_path, [[body[k : k + 7] for k in range(0, len(body), 7)]])
    assert capture.body == b"data: [REDACTED]\n\nevent: x\ndata: [REDACTED]\r\n\r\ndata: [REDACTED]\rdata: ok\n\n"
    assert len(capture.chunks) == len(range(0, len(body), 7))


def test_the_stream_redactor_matches_redacting_the_whole_body_for_any_cuts() -> None:
    """Whatever the chunk cuts and batches: the same bytes as redacting the whole body at once, the
    same number of chunks, in order, each with its own time."""
    rng = random.Random(17)
    parts = [b'data: {"t":"', OPENAI.encode(), b'"}\n\n', JWT.encode(), b" ", GOOGLE.encode(), b"xx", b".", b"sk-",
             b"ey", b"AIz", b"\n"]  # fmt: skip
    body = b"".join(rng.choice(parts) for _ in range(2000))
    expected = TOKEN_BYTES.sub(REDACTED.encode(), body)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, len(body)), rng.randint(0, 400)))
        chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        redactor, times, out, k = StreamRedactor(), [], [], 0
        while k < len(chunks):
            n = rng.randint(1, 30)
            t, d = redactor.feed([float(i) for i in range(k, k + len(chunks[k : k + n]))], chunks[k : k + n])
            times += t
            out += d
            k += n
        t, d = redactor.close()
        assert times + t == [float(i) for i in range(len(chunks))]
        assert b"".join(out + d) == expected
        assert redactor.tokens == len(TOKEN_BYTES.findall(body))


@settings(max_examples=300, deadline=None)
@given(
    body=st.lists(st.sampled_from([b"J", b"eyJ", b"ey", b"e", b"x", b"AIza", b"z", b"Iz", b"\n"]), max_size=80).map(
        b"".join
    ),
    needle=st.sampled_from([(b"eyJ", 2), (b"AIza", 2), (b"AIza", 0), (b"sk-", None)]),
    start=st.integers(0, 20),
    tries=st.integers(0, 4),
)
def test_looking_for_a_rare_byte_first_finds_what_the_substring_search_finds(
    body: bytes, needle: tuple[bytes, int | None], start: int, tries: int
) -> None:
    """`_contains`, the token prefilter's fast way, says what `bytes.find` says, however many of
    the rare byte come before (past `tries` of them the substring search takes over)."""
    assert _contains(body, needle[0], start, needle[1], tries) == (body.find(needle[0], start) >= 0)


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from([OPENAI.encode(), JWT.encode(), GOOGLE.encode(), b"J", b"z", b"sk-", b" ", b"x" * 700]),
        max_size=12,
    ),
    start=st.integers(0, 3),
)
def test_token_spans_are_the_pattern_s_whatever_the_body_s_size(parts: list[bytes], start: int) -> None:
    """Below and above `_SHORT` bytes (the prefilter's two ways), the spans the pattern finds."""
    body = b"".join(parts)
    assert _token_spans(body, start) == [m.span() for m in TOKEN_BYTES.finditer(body, start)]
    long = b"x" * _SHORT + body
    assert _token_spans(long, start) == [m.span() for m in TOKEN_BYTES.finditer(long, start)]


def test_only_a_chunk_that_may_end_inside_a_key_waits() -> None:
    """Event-stream chunks end with a line end: written at once. So is a chunk ending in a word no
    key starts with; one ending in `sk-...` waits for the next chunk (and no longer than that)."""
    redactor = StreamRedactor()
    assert redactor.feed([0.0, 1.0], [b"data: a\n\n", b"data: plain words xxx"]) == (
        [0.0, 1.0], [b"data: a\n\n", b"data: plain words xxx"]
    )  # fmt: skip
    assert redactor.feed([2.0], [b"data: sk-abc"]) == ([], [])
    assert redactor.feed([3.0], [b"\n\n"]) == ([2.0, 3.0], [b"data: sk-abc", b"\n\n"])
    assert redactor.feed([4.0], [b"data: AI"]) == ([], [])
    assert redactor.close() == ([4.0], [b"data: AI"])


def test_what_waits_is_bounded_however_long_a_key_like_run(tmp_path: Path) -> None:
    """A stream of one-byte chunks continuing `sk-aaaa...` forever: held back at most about 4 KiB."""
    redactor = StreamRedactor()
    redactor.feed([0.0], [b"data: sk-"])
    held = []
    for k in range(20_000):
        redactor.feed([float(k)], [b"a"])
        held.append(len(redactor._datas))
    assert max(held) <= 4100


# -- the attached body ---------------------------------------------------------------------------------


def test_the_attached_body_is_only_its_head(tmp_path: Path) -> None:
    """Item 2: past `attach` bytes, nothing more is kept in memory; the capture has it all."""
    pending: list[Callable[[], None]] = []
    writer = _writer(tmp_path, Request(url="http://h/v1"))
    recorder = StreamRecorder(writer, time.monotonic(), attach=25, schedule=pending.append)
    for k in range(10):
        recorder.take(f"data: {k}\n\n".encode())
        pending.pop()()
    recorder.finish("complete")
    assert recorder.body is not None and recorder.body.getvalue() == b"data: 0\n\ndata: 1\n\ndata: 2"
    assert recorder.attach_cut and recorder.bytes == 90
    assert len(load_capture(recorder.path).body) == 90


def test_attach_zero_keeps_nothing(tmp_path: Path) -> None:
    recorder = StreamRecorder(_writer(tmp_path, Request(url="http://h/v1")), time.monotonic(), attach=0,
                              schedule=lambda f: f())  # fmt: skip
    recorder.take(b"data: 0\n\n")
    recorder.finish("complete")
    assert recorder.body is None and not recorder.attach_cut


# -- the folder ----------------------------------------------------------------------------------------


def test_a_capture_folder_the_recorder_makes_is_private(tmp_path: Path) -> None:
    """Item 15: file names carry URL paths: the folders made are 0700, whatever the umask."""
    old = os.umask(0o022)
    try:
        path, fd = new_capture_file(tmp_path / "a" / "caps", "x.jsonl")
        os.close(fd)
        explicit = _writer_at(tmp_path / "b" / "one.jsonl")
    finally:
        os.umask(old)
    for folder in (tmp_path / "a", tmp_path / "a" / "caps", tmp_path / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and explicit.exists()


def _writer_at(path: Path) -> Path:
    writer = CaptureWriter.create("", request=Request(url="http://h/v1"), response=Response(headers=SSE),
                                  redactor=Redactor(), recorder="test", path=path)  # fmt: skip
    writer.close()
    return path


def test_an_existing_folder_is_left_as_it_is_with_a_warning_when_others_can_read_it(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    warning = capture_dir_warning(shared)
    assert warning is not None and "readable by other users (mode 755)" in warning and "chmod 700" in warning
    path, fd = new_capture_file(shared, "x.jsonl")
    os.close(fd)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    shared.chmod(0o700)
    assert capture_dir_warning(shared) is None
    assert capture_dir_warning(tmp_path / "missing") is None
