"""What the CLI writes to stdout goes in bounded pieces, and a short write is resumed, never lost (issue 17,
item 12: one write() of 2 GiB or more to a pipe writes only part of it, and the rest was lost with exit 0)."""

from __future__ import annotations

import io
import json

import pytest

from sse_inspect.cli import _json, cli

from .helpers import CORPUS


class Stingy(io.StringIO):
    """A stdout whose write() takes at most `most` characters a call, and says how many it took."""

    def __init__(self, most: int) -> None:
        super().__init__()
        self.most = most
        self.calls = 0

    def write(self, s: str) -> int:
        self.calls += 1
        return super().write(s[: self.most])

    def isatty(self) -> bool:
        return False


def test_a_short_write_is_resumed() -> None:
    out = Stingy(most=1000)
    text = "é" * 5000 + "x" * 12345
    _json.write_out(out, text)
    assert out.getvalue() == text
    assert out.calls == 18


def test_no_call_is_given_more_than_a_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_json, "PIECE", 100)
    given: list[int] = []

    class Counting(io.StringIO):
        def write(self, s: str) -> int:
            given.append(len(s))
            return super().write(s)

    out = Counting()
    _json.write_out(out, "a" * 1050)
    assert given == [100] * 10 + [50] and out.getvalue() == "a" * 1050


def test_a_stream_that_takes_nothing_is_an_error() -> None:
    with pytest.raises(OSError, match="took no more"):
        _json.write_out(Stingy(most=0), "data")


CAPTURE = CORPUS / "openai-chat-text-usage.sse"


@pytest.mark.parametrize(
    "args",
    [["events", "--json", str(CAPTURE)], ["text", "--json", str(CAPTURE)], ["check", "--json", str(CAPTURE)],
     ["diff", "--by", "events", "--json", str(CAPTURE), str(CAPTURE)], ["text", str(CAPTURE)]],
    ids=["events", "text", "check", "diff", "text-plain"],
)
def test_every_json_output_is_written_whole_to_a_stingy_stdout(args: list[str], monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    with capsys.disabled():
        whole = io.StringIO()
        monkeypatch.setattr("sys.stdout", whole)
        _run(args)
        stingy = Stingy(most=7)
        monkeypatch.setattr("sys.stdout", stingy)
        _run(args)
        monkeypatch.undo()
    assert len(whole.getvalue()) > 30
    assert stingy.getvalue() == whole.getvalue()
    if "--json" in args:
        for line in whole.getvalue().splitlines():
            json.loads(line)


def _run(args: list[str]) -> None:
    try:
        cli.main(args, standalone_mode=False)
    except SystemExit as exc:  # check and diff exit with their code
        assert exc.code in (0, 1)
