"""`sse-inspect import`, `export` and `redact`: other tools' files in and out, and secrets out of captures."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

import click

from .._capture import Capture, capture_lines, is_capture_header
from .._format import json_visible
from .._loading import load_capture, parse_capture, read_file
from .._redact import Redactor
from .._secrets import redact_capture
from ..interop import EXPORTS, Found, choose, export, read_source, require_body
from ..interop._har import BODY_MISSING
from ..recorder import capture_filename, new_capture_file
from . import _render
from ._params import InputError, capture_argument, captures_argument, input_errors, stdin_note

__all__ = ["export_command", "import_command", "redact"]


def _encoded(capture: Capture) -> Iterator[bytes]:
    """The capture's `sse-capture/1` text, encoded a line at a time: never held whole. Characters a
    terminal acts on are written as \\u escapes (the same values), so it can be printed or `cat`."""
    for line in capture_lines(capture):
        yield json_visible(line).encode("utf-8", "surrogatepass")


def _write(output: str, pieces: Iterable[bytes]) -> None:
    """`pieces` to `output` ("-": standard output), created with mode 0600: a capture may hold secrets."""
    if output == "-":
        sys.stdout.buffer.writelines(pieces)
        sys.stdout.flush()
        return
    try:
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.writelines(pieces)
    except OSError as exc:
        raise InputError(f"{output}: cannot write: {exc.strerror or exc}") from None


def _say(text: str) -> None:
    _render.console(stderr=True).print(_render.safe(text, newlines=False))


def _when(capture: Capture) -> datetime:
    try:
        return datetime.fromisoformat(capture.recorded_at or "")
    except ValueError:
        return datetime.now().astimezone()


@click.command("import")
@click.argument("source", metavar="SRC", callback=stdin_note)
@click.option("-o", "--output", metavar="FILE|DIR/",
              help="The capture file (- for stdout), or a folder (existing, or ending in /): a file per stream.")  # fmt: skip
@click.option("--entry", type=click.IntRange(min=0), metavar="N", help="Take exchange #N (see --list).")
@click.option(
    "--url", "url_pattern", metavar="PATTERN", help="Take the exchanges whose URL holds PATTERN (a glob with * ? [)."
)
@click.option("--list", "list_only", is_flag=True, help="List the file's exchanges and stop.")
@click.option("--no-redact", is_flag=True, help="Keep credentials and tokens (never share such captures).")
@input_errors
def import_command(
    source: str, output: str | None, entry: int | None, url_pattern: str | None, list_only: bool, no_redact: bool
) -> None:
    """Turn a HAR file, a curl --trace / --trace-ascii file, a mitmproxy flow file or a raw body into a capture.

    The event streams are taken (any exchange with --entry or --url). Several of them need a
    choice, or -o DIR/ for one capture each. Credentials and tokens are redacted as
    `sse-inspect redact` does. A curl trace made with --trace-time keeps each chunk's time;
    HAR and flow files keep no per-chunk timing, so their captures are untimed.
    """
    if output is None and not list_only:
        raise InputError("missing option -o / --output (or --list)")
    name = "<stdin>" if source == "-" else source
    data = read_file(source, "a file to import")
    found = read_source(data, name)
    exchanges = found[1] if found is not None else [Found(0, parse_capture(data, path=name))]
    del data, found  # the file's bytes: the exchanges hold what they need of them
    if list_only:
        for f in exchanges:
            missing = "  (no body in the HAR)" if f.capture.extra.get(BODY_MISSING) else ""
            click.echo(_render.visible(f"{f.label()}{'  (event stream)' if f.streamed else ''}{missing}"))
        return
    assert output is not None
    chosen = choose(exchanges, entry=entry, url=url_pattern, path=name)
    to_dir = output.endswith(("/", os.sep)) or os.path.isdir(output)
    if len(chosen) > 1 and not to_dir:
        labels = "; ".join(f.label() for f in chosen)
        raise InputError(f"{name}: {len(chosen)} event streams: {labels}; "
                         "take one with --entry N or --url PATTERN, or write each with -o DIR/")  # fmt: skip
    for f in chosen:
        require_body(f, name)
    redactor = Redactor(enabled=not no_redact)
    for f in chosen:
        capture, counts = redact_capture(f.capture, redactor) if redactor.enabled else (f.capture, None)
        if to_dir:
            url = capture.request.url if capture.request is not None else ""
            try:
                path, fd = new_capture_file(Path(output), capture_filename(url, _when(capture)))
                with os.fdopen(fd, "wb") as out:
                    out.writelines(_encoded(capture))
            except OSError as exc:
                raise InputError(f"{output}: cannot write: {exc.strerror or exc}") from None
            where = str(path)
        else:
            _write(output, _encoded(capture))
            where = "stdout" if output == "-" else output
        timing = "timed" if capture.timed else "untimed"
        redacted = f", {counts}" if counts is not None else ", not redacted"
        _say(f"{f.label()} ({len(capture.chunks)} chunk(s), {timing}{redacted}) -> {where}")


@click.command("export")
@capture_argument
@click.option("--to", "to", type=click.Choice(EXPORTS), required=True,
              help="har: HAR 1.2 with the chunk timeline in _sseChunks; raw: the body's exact bytes; "
                   "curl-trace: curl --trace form.")  # fmt: skip
@click.option("-o", "--output", required=True, metavar="FILE", help="The file to write (- for stdout).")
@input_errors
def export_command(capture: str, to: str, output: str) -> None:
    """Write a capture as a HAR, its raw body or a curl trace; HAR and curl trace import back exactly."""
    loaded = load_capture(capture)
    for warning in loaded.warnings:
        _say(f"! {warning}")
    _write(output, [export(loaded, to)])


@click.command()
@captures_argument
@click.option("--in-place", is_flag=True, help="Rewrite each sse-capture/1 file (only when it holds a secret).")
@click.option("-o", "--output", metavar="FILE", help="Write the redacted capture here instead of stdout.")
@input_errors
def redact(captures: tuple[str, ...], in_place: bool, output: str | None) -> None:
    """Redact credentials and secret-looking tokens in captures.

    Credential headers, key= query parameters and URL passwords, and sk-..., sk-ant-..., AIza...
    keys and JWTs anywhere (URL, headers, request and response bodies) become [REDACTED].
    Chunk cuts and times stay; bytes move only inside the replaced tokens. Without --in-place,
    one CAPTURE is written to stdout (or -o FILE) as an sse-capture/1 file.
    """
    if in_place and output is not None:
        raise InputError("--in-place and -o exclude each other")
    if not in_place and len(captures) > 1:
        raise InputError("several captures need --in-place (or one CAPTURE at a time)")
    for path in captures:
        capture = load_capture(path)
        for warning in capture.warnings:
            _say(f"! {path}: {warning}")
        redacted, counts = redact_capture(capture)
        if not in_place:
            _write(output or "-", _encoded(redacted))
            _say(f"{path}: {counts}")
            continue
        if path == "-" or not _is_capture_file(path):
            raise InputError(
                f"{path}: --in-place rewrites sse-capture/1 files only; import it first (sse-inspect import)"
            )
        if counts.total:
            _replace(path, _encoded(redacted))
        _say(f"{path}: {counts}")


def _is_capture_file(path: str) -> bool:
    with open(path, "rb") as f:
        return is_capture_header(f.readline())


def _replace(path: str, pieces: Iterable[bytes]) -> None:
    """Write `pieces` over `path` atomically, keeping its mode."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".redact-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "wb") as f:
                f.writelines(pieces)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise InputError(f"{path}: cannot rewrite: {exc.strerror or exc}") from None
