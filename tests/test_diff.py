"""`diff`: answers, events and arrival times of two captures compared, as a library and as a command."""

from __future__ import annotations

import dataclasses
import difflib
import io
import json
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, capture_from_body, dump_capture, load_capture
from sse_inspect import _diff
from sse_inspect._diff import diff_events, diff_text, diff_timing
from sse_inspect._errors import SSEInspectError
from sse_inspect.cli import _diff as _diff_cli
from sse_inspect.cli import cli

from .helpers import CORPUS

URL = "https://api.openai.com/v1/chat/completions"
TEXT = CORPUS / "openai-chat-text-usage.sse"
TOOL = CORPUS / "openai-chat-toolcall-usage.sse"
VIEWS = ("text", "events", "timing")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["diff", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def event(i: int) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"tok%d "}}]}\n\n' % i


def stream(times: list[float], *, events: list[bytes] | None = None) -> Capture:
    """An OpenAI chat stream, one event per chunk at `times`, then [DONE] 10 ms after the last."""
    bodies = events if events is not None else [event(i) for i in range(len(times))]
    chunks = [Chunk(t, body) for t, body in zip(times, bodies)] + [Chunk(times[-1] + 0.01, b"data: [DONE]\n\n")]
    return Capture(
        chunks=tuple(chunks),
        request=Request(method="POST", url=URL),
        response=Response(status=200, headers=(("Content-Type", "text/event-stream"),), t=0.05),
        end=End(kind="complete", t=chunks[-1].t),
    )


def upstream() -> list[float]:
    """60 events 50 ms apart, with a one-second pause upstream after event 40."""
    return [0.1 + 0.05 * i if i <= 40 else 3.1 + 0.05 * (i - 41) for i in range(60)]


def held_downstream(times: list[float]) -> list[float]:
    """What a hop with a 5 ms floor that holds events 10-40 until t=3.0 s (released within 2 ms) passes on."""
    return [3.0 + 0.00006 * (i - 10) if 10 <= i <= 40 else t + 0.005 for i, t in enumerate(times)]


def write(tmp_path: Path, name: str, capture: Capture) -> str:
    path = tmp_path / name
    path.write_text(dump_capture(capture), encoding="utf-8")
    return str(path)


def held_pair(tmp_path: Path) -> tuple[str, str]:
    """The upstream's capture and the one after a hop that held events 10-40, written: their paths."""
    times = upstream()
    return write(tmp_path, "a.jsonl", stream(times)), write(tmp_path, "b.jsonl", stream(held_downstream(times)))


def changed_copy(tmp_path: Path, source: Path, old: bytes, new: bytes) -> str:
    body = source.read_bytes()
    assert body.count(old) == 1
    path = tmp_path / source.name
    path.write_bytes(body.replace(old, new))
    return str(path)


# -- identical -----------------------------------------------------------------------------


@pytest.mark.parametrize("by", VIEWS)
def test_identical_captures_exit_0_in_every_view(tmp_path: Path, by: str) -> None:
    a = write(tmp_path, "a.jsonl", stream(upstream()))
    b = write(tmp_path, "b.jsonl", stream(upstream()))
    code, out, err = run(a, b, "--by", by)
    assert (code, err) == (0, "")
    assert "✔" in out


def test_identical_library_results() -> None:
    a = analyze(stream(upstream()))
    assert diff_text(a, a).identical and diff_text(a, a).unified == ()
    events = diff_events(a, a)
    assert events.identical and len(events.equal) == 61 and not events.changed
    timing = diff_timing(a, a)
    assert timing.identical and timing.baseline == 0 and not timing.held and not timing.releases


# -- text ----------------------------------------------------------------------------------


def test_a_changed_token_shows_in_the_text_diff(tmp_path: Path) -> None:
    b = changed_copy(tmp_path, TEXT, b'"content":" capital"', b'"content":" city"')
    code, out, err = run(str(TEXT), b)
    assert (code, err) == (1, "")
    assert "-    The capital of the UK is London." in out
    assert "+    The city of the UK is London." in out
    assert "answers differ: choice 0 text" in out


def test_text_diff_library() -> None:
    body = TEXT.read_bytes()
    a = analyze(load_capture(TEXT))
    b = analyze(Capture(chunks=(Chunk(None, body.replace(b"data: [DONE]\n\n", b"")),), timed=False))
    d = diff_text(a, b)
    assert not d.identical
    assert d.changed == ("complete",)
    assert d.unified[:2] == ("--- A", "+++ B")
    assert "-complete true" in d.unified and "+complete false" in d.unified


def test_a_tool_call_argument_change_shows(tmp_path: Path) -> None:
    b = changed_copy(tmp_path, TOOL, b'"arguments":"UK"', b'"arguments":"FR"')
    code, out, _ = run(str(TOOL), b)
    assert code == 1
    assert '-  tool call get_capital {"country":"UK"}' in out
    assert '+  tool call get_capital {"country":"FR"}' in out
    assert "choice 0 tool calls" in out


def test_text_json_shape(tmp_path: Path) -> None:
    b = changed_copy(tmp_path, TEXT, b'"content":" capital"', b'"content":" city"')
    code, out, _ = run(str(TEXT), b, "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1
    assert doc["by"] == "text" and doc["identical"] is False and doc["dialect"] == "openai-chat"
    assert doc["changed"] == ["choice 0 text"]
    assert "+    The city of the UK is London." in doc["unified"]
    assert set(doc["lines"]) == {"a", "b"}


def test_captured_control_characters_are_escaped(tmp_path: Path) -> None:
    json_escape = b'data: {"choices":[{"index":0,"delta":{"content":"\\u001b[2J"}}]}\n\n'
    a = write(tmp_path, "a.jsonl", stream([0.1, 0.2, 0.3], events=[event(0), event(1), event(2)]))
    title = b"data: \x1b]0;pwned\x07\n\n"
    b = write(tmp_path, "b.jsonl", stream([0.1, 0.2, 0.3], events=[event(0), json_escape, title]))
    for by in ("text", "events"):
        code, out, _ = run(a, b, "--by", by)
        assert code == 1 and "\x1b" not in out and "\x07" not in out
        assert ("\\x1b[2J" if by == "text" else "\\x1b]0;pwned\\x07") in out


# -- events --------------------------------------------------------------------------------


def test_inserted_and_missing_events(tmp_path: Path) -> None:
    times = upstream()[:10]
    a = write(tmp_path, "a.jsonl", stream(times))
    extra = [*(event(i) for i in range(5)), b"event: ping\ndata: {}\n\n", *(event(i) for i in range(5, 10))]
    b = write(tmp_path, "b.jsonl", stream([*times, times[-1] + 0.01], events=extra))
    code, out, _ = run(a, b, "--by", "events")
    assert code == 1
    assert "+ only in B" in out and "ping" in out
    assert "1 inserted" in out
    code, out, _ = run(b, a, "--by", "events")
    assert code == 1 and "- missing from B" in out and "1 missing" in out

    d = diff_events(analyze(load_capture(a)), analyze(load_capture(b)))
    (inserted,) = d.inserted
    assert inserted.a is None and inserted.b is not None and (inserted.b.index, inserted.b.type) == (5, "ping")
    assert len(d.equal) == 11 and not d.missing and not d.changed


def test_changed_event_shows_the_difference(tmp_path: Path) -> None:
    b = changed_copy(tmp_path, TEXT, b'"content":" capital"', b'"content":" city"')
    code, out, _ = run(str(TEXT), b, "--by", "events")
    assert code == 1
    assert "changed data" in out and "capital" in out and "city" in out
    assert "11 equal, 1 changed" in out
    code, out, _ = run(str(TEXT), b, "--by", "events", "--json")
    doc = json.loads(out)
    assert doc["counts"] == {"equal": 11, "changed": 1, "missing": 0, "inserted": 0}
    (change,) = doc["changes"]
    assert change["op"] == "changed" and change["fields"] == ["data"]
    assert change["a"]["index"] == change["b"]["index"] == 2
    assert '" city"' in change["b"]["data"] and {"type", "id", "t", "offset"} <= set(change["a"])


# -- self-test: A against A re-cut ---------------------------------------------------------


@pytest.mark.parametrize("spec", ["bytes:1", "event", "random:7"])
@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.sse")), ids=lambda p: p.stem)
def test_every_corpus_stream_survives_a_recut(path: Path, spec: str) -> None:
    for by in ("text", "events"):
        code, out, err = run(str(path), "--rechunk", spec, "--by", by)
        assert (code, err) == (0, ""), out
        assert f"A re-cut by {spec}" in out


def test_recut_json(tmp_path: Path) -> None:
    code, out, _ = run(str(TEXT), "--rechunk", "bytes:1", "--by", "events", "--json")
    doc = json.loads(out)
    assert (code, doc["identical"], doc["b"], doc["rechunk"]) == (0, True, None, "bytes:1")
    assert doc["changes"] == [] and doc["counts"]["equal"] == 12


# -- timing --------------------------------------------------------------------------------


def test_a_hop_that_holds_events_is_caught() -> None:
    times = upstream()
    d = diff_timing(analyze(stream(times)), analyze(stream(held_downstream(times))))
    assert not d.identical
    assert d.baseline == pytest.approx(0.005, abs=1e-6)
    assert [x.a.index for x in d.held] == list(range(10, 41))
    assert d.max_hold.a.index == 10
    assert d.max_hold.hold == pytest.approx(3.0 - 0.6 - 0.005, abs=1e-6)
    (release,) = d.releases
    assert len(release.events) == 31
    assert release.t == pytest.approx(3.0, abs=1e-6) and release.span < 0.002
    assert release.first_hold == d.max_hold.hold
    assert not d.only_a and not d.only_b
    assert d.hop == "between A and B"
    assert d.summary == (
        "the hop between A and B held 31 events up to 2.395 s over its 5.0 ms baseline, "
        "released in 1 burst (largest: 31 events at t=3.000 s)"
    )


def test_timing_cli(tmp_path: Path) -> None:
    a, b = held_pair(tmp_path)
    code, out, err = run(a, b, "--by", "timing")
    assert (code, err) == (1, "")
    assert "the hop between A and B held 31 events up to 2.395 s" in " ".join(out.split())
    assert "release at t=3.000 s in B: 31 events" in out
    code, _, _ = run(a, b, "--by", "timing", "--hold-ms", "3000")
    assert code == 0


def test_timing_json_shape(tmp_path: Path) -> None:
    a, b = held_pair(tmp_path)
    code, out, _ = run(a, b, "--by", "timing", "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1
    assert doc["hop"] == "between A and B" and doc["held"] == 31 and doc["threshold"] == 0.1
    assert doc["baseline"] == pytest.approx(0.005, abs=1e-6)
    assert doc["max_hold"]["a_index"] == 10
    (release,) = doc["releases"]
    assert release["events"] == 31 and release["a_indices"] == list(range(10, 41))
    assert len(doc["events"]) == 61 and doc["only_a"] == doc["only_b"] == []
    row = doc["events"][10]
    assert set(row) == {"a_index", "b_index", "type", "t_a", "t_b", "delay", "hold", "held"} and row["held"]


def test_only_the_network_floor_is_identical(tmp_path: Path) -> None:
    times = upstream()
    a = write(tmp_path, "a.jsonl", stream(times))
    b = write(tmp_path, "b.jsonl", stream([t + 0.005 for t in times]))
    code, out, err = run(a, b, "--by", "timing")
    assert (code, err) == (0, "")
    assert "held no event more than 100 ms over its 5.0 ms baseline" in " ".join(out.split())


def test_events_lost_by_the_hop_are_reported() -> None:
    times = upstream()
    a = analyze(stream(times))
    b = analyze(stream([t + 0.005 for t in times[:-1]], events=[event(i) for i in range(59)]))
    d = diff_timing(a, b)
    assert d.identical and [e.index for e in d.only_a] == [59] and not d.only_b


def test_a_pair_given_the_wrong_way_round_is_refused(tmp_path: Path) -> None:
    """The client's capture as A, the upstream's as B: B has every event before A, which no hop
    can do (each capture counts from its own request). Refused, not read as a negative baseline."""
    up, client = held_pair(tmp_path)
    code, out, err = run(client, up, "--by", "timing")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "B's text arrived before A's (by up to 2.400 s" in err and "did you swap UPSTREAM and CLIENT?" in err
    # a swapped pair of a hop that held nothing, 150 ms apart: refused as well
    late = write(tmp_path, "late.jsonl", stream([t + 0.15 for t in upstream()]))
    assert run(late, up, "--by", "timing")[0] == 2


def test_a_baseline_negative_within_the_threshold_is_let_through() -> None:
    """Two recorders that start their clocks a little apart may put B 20 ms "before" A: under
    --hold-ms that cannot hide a hold, so it is measured as before."""
    times = upstream()
    d = diff_timing(analyze(stream(times)), analyze(stream([t - 0.02 for t in times])))
    assert d.identical and d.baseline == pytest.approx(-0.02, abs=1e-6)
    with pytest.raises(SSEInspectError, match="did you swap"):
        diff_timing(analyze(stream(times)), analyze(stream([t - 0.02 for t in times])), threshold=0.01)


def test_a_long_timing_table_shows_its_head_its_tail_and_every_held_row(tmp_path: Path) -> None:
    """400 events, 5 of them held in the middle: the first 200 rows, the held 5, the last 50 (and
    [DONE]), with how many rows were left out where they were; --json keeps every row."""
    times = [0.1 + 0.01 * i for i in range(400)]
    a = write(tmp_path, "a.jsonl", stream(times))
    b = write(tmp_path, "b.jsonl", stream([3.3 if 300 <= i < 305 else t + 0.005 for i, t in enumerate(times)]))
    code, out, _ = run(a, b, "--by", "timing")
    assert code == 1
    rows = [line.split()[0] for line in out.splitlines()[3:] if line.split()[:1] and line.split()[0][0] in "0123456789…"]
    assert rows[:200] == [str(i) for i in range(200)]
    assert rows[200:207] == ["…", "300", "301", "302", "303", "304", "…"]
    assert rows[207:] == [str(i) for i in range(351, 401)]
    assert "100 rows not shown" in out and "46 rows not shown" in out
    code, out, _ = run(a, b, "--by", "timing", "--all-rows")
    assert code == 1 and "not shown" not in out and re.search(r"(?m)^ *250 +250 ", out)
    _, doc, _ = run(a, b, "--by", "timing", "--json")
    assert len(json.loads(doc)["events"]) == 401


def test_held_rows_past_their_own_cap_are_counted_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hop that held a whole long answer would print every row: held rows between the head and
    the tail are shown up to HELD_ROWS (3 here), the rest counted; so are releases past the cap."""
    monkeypatch.setattr(_diff_cli, "HELD_ROWS", 3)
    times = [0.1 + 0.01 * i for i in range(400)]
    a = write(tmp_path, "a.jsonl", stream(times))
    b = write(tmp_path, "b.jsonl", stream([3.3 if 300 <= i < 305 else t + 0.005 for i, t in enumerate(times)]))
    _, out, _ = run(a, b, "--by", "timing")
    rows = [line.split()[0] for line in out.splitlines()[3:] if line.split()[:1] and line.split()[0][0] in "0123456789…"]
    assert rows[200:205] == ["…", "300", "301", "302", "…"] and "48 rows not shown" in out
    monkeypatch.setattr(_diff_cli, "HEAD_ROWS", 0)
    monkeypatch.setattr(_diff_cli, "TAIL_ROWS", 0)
    b = write(tmp_path, "b.jsonl", stream([t + 0.2 * (i % 2) for i, t in enumerate(times)]))  # 200 held alone
    _, out, _ = run(a, b, "--by", "timing")
    assert "… 200 releases not shown" in out and "release at" not in out


def test_held_and_releases_are_computed_once() -> None:
    """Summary, view and --json each ask for them: read, not recomputed over every event each time."""
    times = upstream()
    a, b = analyze(stream(times)), analyze(stream(held_downstream(times)))
    d = diff_timing(a, b)
    assert d.held is d.held and d.releases is d.releases and d.max_hold is d.max_hold
    replaced = dataclasses.replace(d, threshold=3.0)  # a copy with another threshold is judged again
    assert replaced.identical and not replaced.releases and len(d.held) == 31


def _late(times: list[float], late: dict[int, float]) -> _diff.TimingDiff | _diff.TextTimingDiff:
    """`times` through a hop with a 5 ms floor that keeps event i back `late[i]` seconds more."""
    down = [t + 0.005 + late.get(i, 0.0) for i, t in enumerate(times)]
    return diff_timing(analyze(stream(times)), analyze(stream(down)))


def test_one_lone_straggler_is_reported_but_does_not_fail(tmp_path: Path) -> None:
    """One token 150 ms late (the lab's werkzeug behind nginx: its last token 121 ms late) is
    jitter: shown as a release, said in the verdict, exit 0."""
    times = [0.1 + 0.2 * i for i in range(30)]  # 200 ms apart: the late one stays alone in B
    d = _late(times, {15: 0.15})
    assert len(d.held) == 1 and d.straggler and d.identical
    assert d.summary == ("the hop between A and B held nothing but one straggler: A's event #15, "
                         "0.150 s over its 5.0 ms baseline, alone (under 2x 100 ms: jitter, not a buffer)")  # fmt: skip
    down = [t + 0.005 + (0.15 if i == 15 else 0.0) for i, t in enumerate(times)]
    code, out, _ = run(write(tmp_path, "a.jsonl", stream(times)), write(tmp_path, "b.jsonl", stream(down)),
                       "--by", "timing", "--json")  # fmt: skip
    doc = json.loads(out)
    assert code == doc["exit_code"] == 0 and doc["straggler"] and doc["held"] == 1 and len(doc["releases"]) == 1


@pytest.mark.parametrize(
    "late",
    [
        pytest.param({15: 0.25}, id="one event held twice the threshold"),
        pytest.param({10: 0.15, 20: 0.15}, id="two late events, two releases"),
        pytest.param({10: 0.35, 11: 0.15}, id="two events released together"),
    ],
)
def test_what_is_not_a_lone_straggler_fails(late: dict[int, float]) -> None:
    d = _late([0.1 + 0.2 * i for i in range(30)], late)
    assert d.held and not d.straggler and not d.identical
    assert "straggler" not in d.summary


# -- bad input -----------------------------------------------------------------------------


def test_untimed_timing_is_exit_2_one_line(tmp_path: Path) -> None:
    b = write(tmp_path, "b.jsonl", stream(upstream()))
    code, out, err = run(str(TEXT), b, "--by", "timing")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "untimed" in err and str(TEXT) in err
    with pytest.raises(SSEInspectError, match="untimed"):
        diff_timing(analyze(load_capture(b)), analyze(load_capture(TEXT)))


def test_a_refused_json_diff_still_prints_a_document(tmp_path: Path) -> None:
    """--json: a consumer gets a document to parse, with the error and exit code 2 (stderr says it too)."""
    up, client = held_pair(tmp_path)
    code, out, err = run(client, up, "--by", "timing", "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 2 and "did you swap UPSTREAM and CLIENT?" in doc["error"]
    assert (doc["by"], doc["a"], doc["b"]) == ("timing", client, up) and "identical" not in doc
    assert doc["error"] in err
    code, out, _ = run(str(TEXT), up, "--by", "timing", "--json")
    assert code == 2 and "untimed" in json.loads(out)["error"]


@pytest.mark.parametrize(
    "args, message",
    [
        ((str(TEXT),), "give a second capture B"),
        ((str(TEXT), "--rechunk", "bytes:1", "--by", "timing"), "--by timing needs a second capture B"),
        ((str(TEXT), "/no/such/file.sse"), "no such file"),
    ],
)
def test_bad_usage_is_exit_2_one_line(args: tuple[str, ...], message: str) -> None:
    code, out, err = run(*args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_bad_rechunk_spec_is_exit_2() -> None:
    code, out, err = run(str(TEXT), "--rechunk", "bytes:0")
    assert code == 2 and out == "" and "bytes:0" in err


def test_unrelated_streams_have_no_timing() -> None:
    a = capture_from_body([(0.1, b"data: a\n\n")])
    b = capture_from_body([(0.1, b"data: b\n\n")])
    with pytest.raises(SSEInspectError, match="share no event"):
        diff_timing(analyze(a), analyze(b))


# -- long and hostile streams: linear work, the same answer as difflib on normal ones ------


def _difflib_opcodes(a: list[object], b: list[object]) -> list[tuple[str, int, int, int, int]]:
    """The alignment every diff gave before it was bounded: difflib on the whole of A and B."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def _tokens(n: int, *, seed: int = 0) -> list[object]:
    """Keys as a long real stream has them: mostly distinct tokens, with empty deltas repeated among them."""
    rnd = random.Random(seed)
    return ["" if rnd.random() < 0.2 else f"tok{i}" for i in range(n)]


def _normal_edits() -> dict[str, tuple[list[object], list[object]]]:
    a = _tokens(1600)
    return {
        "equal": (a, list(a)),
        "one insertion": (a, [*a[:700], "new", *a[700:]]),
        "one deletion": (a, [*a[:700], *a[701:]]),
        "one change": (a, [*a[:700], "changed", *a[701:]]),
        "shifted": (a, [*a[25:], *_tokens(25, seed=1)]),
        "a few edits": (a, [*a[:100], "x", *a[100:900], *a[910:1500], "y", "z", *a[1500:]]),
    }


@pytest.mark.parametrize("name", list(_normal_edits()))
def test_long_normal_streams_align_as_difflib_aligned_them(name: str) -> None:
    """Past the exact budget (1600 x 1600 events), the usual edits still give difflib's answer."""
    a, b = _normal_edits()[name]
    assert len(a) * len(b) > _diff.EXACT_PAIRS
    assert _diff._Aligner(a, b).opcodes() == _difflib_opcodes(a, b)


def _hostile(n: int) -> dict[str, tuple[list[object], list[object]]]:
    """Streams that made difflib quadratic (or worse): repeated events everywhere."""
    rnd = random.Random(n)
    two = [rnd.choice("xy") for _ in range(n)]
    changed = list(two)
    for k in range(0, n, 97):
        changed[k] = "z"
    anchored = [f"u{i // 900}" if i % 900 == 0 else "x" for i in range(n)]
    return {
        "all the same": (["x"] * n, ["x"] * (n // 2) + ["y"] + ["x"] * (n // 2)),
        "alternating, shifted": ([i % 2 for i in range(n)], [(i + 1) % 2 for i in range(n + 1)]),
        "two symbols, changed in place": (two, changed),
        "two symbols, unrelated": (two, [rnd.choice("xy") for _ in range(n)]),
        "unique anchors around repeated runs": (anchored, [k if k != "x" else "x" for k in anchored[1:]] + ["x"]),
        "nothing in common": (["x"] * n, ["y"] * n),
    }


def test_difflib_is_never_handed_more_than_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting the work: however hostile the streams, difflib aligns at most EXACT_PAIRS pairs in all."""
    spent = []

    class Counting(difflib.SequenceMatcher):  # type: ignore[type-arg]
        def __init__(self, isjunk: None, a: list[object], b: list[object], autojunk: bool) -> None:
            spent.append(len(a) * len(b))
            assert sum(spent) <= 1_000_000, "difflib was handed the whole of two long streams"
            super().__init__(isjunk, a, b, autojunk=autojunk)

    monkeypatch.setattr(_diff.difflib, "SequenceMatcher", Counting)
    for name, (a, b) in _hostile(20_000).items():
        spent.clear()
        ops = _diff._opcodes(a, b, lambda key: key)  # type: ignore[arg-type]
        assert _covers(ops, a, b), name


def _covers(ops: list[tuple[str, int, int, int, int]], a: list[object], b: list[object]) -> bool:
    """The opcodes walk A and B from start to end without a gap, and "equal" means equal."""
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        if (i1, j1) != (i, j) or (tag == "equal" and a[i1:i2] != b[j1:j2]):
            return False
        i, j = i2, j2
    return (i, j) == (len(a), len(b))


def test_a_stretch_nothing_anchors_is_compared_in_place() -> None:
    """Past the budget, with no event unique to anchor on: events changed in place still line up,
    and streams with nothing in common pair up in order."""
    a, b = _hostile(20_000)["two symbols, changed in place"]
    ops = _diff._Aligner(a, b).opcodes()
    replaced = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag != "equal")
    assert replaced == sum(x != y for x, y in zip(a, b)) <= 20_000 // 97 + 1
    a, b = _hostile(20_000)["nothing in common"]
    assert _diff._Aligner(a, b).opcodes() == [("replace", 0, 20_000, 0, 20_000)]


def _fastest(f: Callable[[], object], times: int = 3) -> float:
    """The least CPU time `f` takes: this process's own, so a busy machine's other work does not count."""
    best = float("inf")
    for _ in range(times):
        start = time.process_time()
        f()
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("name", list(_hostile(10)))
def test_aligning_hostile_streams_is_linear(name: str) -> None:
    """10x the events takes well under 30x the time (difflib took 100x and more)."""
    small, big = _hostile(20_000)[name], _hostile(200_000)[name]
    t_small = _fastest(lambda: _diff._Aligner(*small).opcodes())
    t_big = _fastest(lambda: _diff._Aligner(*big).opcodes(), times=1)
    assert t_big < 30 * max(t_small, 0.01), (t_small, t_big)


def _ping_capture(path: Path, n: int, *, changed_every: int) -> str:
    """n identical keep-alive events, one in `changed_every` of them different in B: difflib's worst case."""
    datas = [b'{"ping":%d}' % (k % changed_every == 1) for k in range(n)]
    write(path.parent, path.name, stream([0.1 + 0.001 * k for k in range(n)],
                                         events=[b"data: %s\n\n" % d for d in datas]))  # fmt: skip
    return str(path)


@pytest.mark.parametrize("by", ["events", "timing"])
def test_diff_of_long_hostile_streams_is_fast_and_right(tmp_path: Path, by: str) -> None:
    """20,000 repeated events (and [DONE]) against the same with 19 changed: seconds, not minutes
    (difflib: over a minute), and the answer difflib gave."""
    a = _ping_capture(tmp_path / "a.jsonl", 20_000, changed_every=20_000)
    b = _ping_capture(tmp_path / "b.jsonl", 20_000, changed_every=1000)
    code, out, _ = run(a, b, "--by", by, "--json")
    doc = json.loads(out)
    assert code == (1 if by == "events" else 0)  # timing: the changed events are unmatched, none held
    if by == "events":
        assert doc["counts"] == {"equal": 20_000 + 1 - 19, "changed": 19, "missing": 0, "inserted": 0}
    else:
        assert (len(doc["events"]), len(doc["only_a"]), len(doc["only_b"])) == (20_000 + 1 - 19, 19, 19)


def _drawn(view: object, times: int = 3) -> tuple[float, str]:
    """Seconds to print `view` (the fastest of `times`) and what it printed, at 100 columns without colours."""
    best, text = float("inf"), ""
    for _ in range(times):
        out = io.StringIO()
        start = time.perf_counter()
        Console(file=out, width=100).print(view)
        best, text = min(best, time.perf_counter() - start), out.getvalue()
    return best, text


@pytest.mark.parametrize("by", ["events", "timing"])
def test_diff_tables_are_drawn_in_linear_time_with_every_row(by: str) -> None:
    """10x the rows takes well under 30x the time to print, and every row is printed (a table of
    100,000 rows is data, piped to less or grep). rich's Table took some 2 ms a row."""
    n = 20_000
    a = analyze(stream([0.1 + 0.001 * i for i in range(n)]))
    if by == "timing":
        timing = diff_timing(a, analyze(stream([0.105 + 0.001 * i for i in range(n)])))
        small = dataclasses.replace(timing, matched=timing.matched[: n // 10])
        small_view, big_view = (_diff_cli._timing_view(d, all_rows=True) for d in (small, timing))
    else:
        changed = [event(i) if i % 2 else event(i).replace(b"tok", b"TOK") for i in range(n)]  # every other one
        events = diff_events(a, analyze(stream([0.1 + 0.001 * i for i in range(n)], events=changed)))
        small_view = _diff_cli._events_view(dataclasses.replace(events, changes=events.changes[: n // 10]))
        big_view = _diff_cli._events_view(events)
    (t_small, small), (t_big, big) = _drawn(small_view), _drawn(big_view, times=1)
    assert t_big < 30 * t_small, (t_small, t_big)
    rows = re.compile(r"(?m)^ *\d+ +\d+  message " if by == "timing" else r" *\d+ +- changed data +message")
    expected = [2000, 20_001] if by == "timing" else [1000, 10_000]  # timing: each event and [DONE]
    assert [len(rows.findall(out)) for out in (small, big)] == expected
