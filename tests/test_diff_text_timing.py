"""`diff --by timing` across a hop that re-frames the events: the answer texts aligned, not the events.

The pairs mirror the seed's app (/work/shared/seeds/003): A is what an OpenAI-style upstream sent
the app (JSON chunks, then `[DONE]`), B what the app sent its client (`data: <delta>` plain text).
The good app yields each delta as it arrives; the classic bugs yield the whole answer once at the
end, or the list of events after the loop.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import Capture, Chunk, End, Request, Response, analyze, dump_capture
from sse_inspect._diff import TextTimingDiff, TimingDiff, diff_timing
from sse_inspect._errors import SSEInspectError
from sse_inspect.checks import check_capture
from sse_inspect.cli import cli
from sse_inspect.report import html_report

UPSTREAM = "https://api.openai.com/v1/chat/completions"
APP = "http://127.0.0.1:5000/chat/stream"
FLOOR = 0.002
"""The app's own latency: what the baseline must come out as for a good app."""
FIRST, EVERY = 0.3, 0.04


def words(n: int = 40) -> list[str]:
    """Deltas as a model streams them: a leading space on every word but the first."""
    return ["The"] + [f" word{i}" for i in range(1, n)]


def times(n: int = 40) -> list[float]:
    return [FIRST + EVERY * i for i in range(n)]


def capture(chunks: Sequence[tuple[float, bytes]], url: str) -> Capture:
    return Capture(
        chunks=tuple(Chunk(t, body) for t, body in chunks),
        request=Request(method="POST", url=url),
        response=Response(status=200, headers=(("Content-Type", "text/event-stream"),), t=0.05),
        end=End(kind="complete", t=chunks[-1][0] + 0.001),
    )


def upstream(deltas: Sequence[str], at: Sequence[float]) -> Capture:
    """A: OpenAI chat chunks, one per delta, then `[DONE]`."""
    chunk = [json.dumps({"choices": [{"index": 0, "delta": {"content": d}}]}) for d in deltas]
    body = [(t, f"data: {c}\n\n".encode()) for t, c in zip(at, chunk)]
    return capture(body + [(at[-1] + 0.01, b"data: [DONE]\n\n")], UPSTREAM)


def plain(deltas: Sequence[str], at: Sequence[float]) -> Capture:
    """B: the app's plain-text events, `data: <delta>`, each in its own chunk."""
    return capture([(t, f"data: {d}\n\n".encode()) for t, d in zip(at, deltas)], APP)


def good_app() -> Capture:
    return plain(words(), [t + FLOOR for t in times()])


def single_yield_app() -> Capture:
    """The whole answer collected into one string and yielded once after the upstream's last delta."""
    return plain(["".join(words())], [times()[-1] + FLOOR])


def list_app() -> Capture:
    """The events collected in a list and yielded after the loop: all at once, 0.1 ms apart."""
    return plain(words(), [times()[-1] + FLOOR + 0.0001 * i for i in range(40)])


def timing(b: Capture, a: Capture | None = None) -> TimingDiff | TextTimingDiff:
    return diff_timing(analyze(a or upstream(words(), times())), analyze(b))


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["diff", "--by", "timing", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, c: Capture) -> str:
    path = tmp_path / name
    path.write_text(dump_capture(c), encoding="utf-8")
    return str(path)


TEXT = "".join(words())


# -- the seed's app: good, and its two classic bugs ----------------------------------------


def test_the_good_app_held_nothing() -> None:
    d = timing(good_app())
    assert isinstance(d, TextTimingDiff) and d.alignment == "text"
    assert d.identical and not d.held and not d.releases and d.lost == 0
    assert d.baseline == pytest.approx(FLOOR, abs=1e-9)
    assert d.characters == len(TEXT) and "".join(s.text for s in d.stretches) == TEXT
    assert len(d.stretches) == 40  # one per delta: each reached A in one event and B in one
    assert d.summary.startswith("the hop between A and B held no character more than 100 ms over its 2.0 ms baseline")
    assert d.summary.endswith("aligned by text, as the hop re-framed the events")


def test_the_single_yield_bug_holds_the_answer_until_the_end() -> None:
    d = timing(single_yield_app())
    assert isinstance(d, TextTimingDiff) and not d.identical
    assert d.baseline == pytest.approx(FLOOR, abs=1e-9)  # the last delta went straight on
    last = times()[-1] + FLOOR
    # every delta that reached A more than 100 ms before the end was held; the last three were not
    held_deltas = [w for w, t in zip(words(), times()) if last - t - FLOOR > 0.1]
    assert len(held_deltas) == 37
    assert d.held_characters == len("".join(held_deltas))
    assert d.max_hold.start == 0 and d.max_hold.hold == pytest.approx(last - FIRST - FLOOR, abs=1e-9)
    (release,) = d.releases
    assert release.t == pytest.approx(last) and release.span == 0 and release.first_hold == d.max_hold.hold
    assert release.quote().startswith("The word1 word2")
    assert d.summary.startswith(
        f"the hop between A and B held {d.held_characters} characters up to {d.max_hold.hold:.3f} s over its "
        "2.0 ms baseline, released in 1 burst"
    )


def test_one_late_delta_alone_is_a_straggler() -> None:
    """The lab's werkzeug behind nginx: one delta 121 ms late, nothing else held: exit 0, said."""
    at = times()
    d = timing(plain(words(), [t + FLOOR + (0.121 if i == 20 else 0.0) for i, t in enumerate(at)]))
    assert isinstance(d, TextTimingDiff) and d.straggler and d.identical and d.held_characters == len(" word20")
    assert "held nothing but one straggler: 7 characters of A's event #20, 0.121 s" in d.summary
    d = timing(plain(words(), [t + FLOOR + (0.121 if i in (10, 20) else 0.0) for i, t in enumerate(at)]))
    assert not d.straggler and not d.identical  # two late deltas, apart: a hop's doing


def test_text_holds_are_computed_once() -> None:
    d = timing(single_yield_app())
    assert d.held is d.held and d.releases is d.releases and d.held_characters == sum(len(s.text) for s in d.held)


def test_the_list_bug_is_one_release_of_many_events() -> None:
    d = timing(list_app())
    assert isinstance(d, TextTimingDiff) and not d.identical
    (release,) = d.releases  # 40 events 0.1 ms apart: one flush
    assert {s.b.index for s in release.stretches} == set(range(len(release.stretches)))
    assert release.characters == d.held_characters > len(TEXT) * 0.9
    assert d.max_hold.a.index == 0 and d.max_hold.hold > 1.4


def test_a_hop_that_holds_the_middle_is_caught_there() -> None:
    """Deltas 10 to 24 kept back until delta 25 came: exactly their text is held, in one release."""
    at = times()
    b_at = [at[25] + FLOOR if 10 <= i < 25 else t + FLOOR for i, t in enumerate(at)]
    d = timing(plain(words(), b_at))
    assert isinstance(d, TextTimingDiff)
    held = "".join(s.text for s in d.held)
    # delta 24 waited 40 ms (under the threshold), the others 80 ms or more... from delta 22 down
    assert held == "".join(words()[10:23])
    (release,) = d.releases
    assert release.t == pytest.approx(at[25] + FLOOR)


# -- what the alignment tolerates and what it refuses --------------------------------------


def test_whitespace_a_hop_changes_is_tolerated() -> None:
    """The app strips each delta and ends with a newline; generic joins events with newlines."""
    b = plain([w.strip() for w in words()[:-1]] + [words()[-1].strip() + "\n"], [t + FLOOR for t in times()])
    d = timing(b)
    assert isinstance(d, TextTimingDiff) and d.identical and d.lost == 0
    assert d.characters == len(TEXT) and len(d.stretches) == 40


def test_a_stream_the_hop_cut_short_reports_what_never_came() -> None:
    d = timing(plain(words()[:30], [t + FLOOR for t in times()[:30]]))
    assert isinstance(d, TextTimingDiff) and d.identical
    assert d.lost == len("".join(words()[30:]))
    assert d.lost == 70 and "the last 70 characters of A's text never reached B" in d.summary


def test_texts_that_differ_are_refused_with_where() -> None:
    changed = words()
    changed[20] = " other"
    with pytest.raises(SSEInspectError) as caught:
        timing(plain(changed, [t + FLOOR for t in times()]))
    message = caught.value.message
    agreed = len("".join(words()[:20]).replace(" ", ""))
    assert f"they agree on the first {agreed} of {len(TEXT.replace(' ', ''))} characters of A" in message
    assert "A has 'word20" in message and "B has 'other" in message
    assert message.startswith("A and B share no event")


def test_a_b_with_more_text_than_a_is_refused() -> None:
    with pytest.raises(SSEInspectError, match="B has 'more"):
        timing(plain([*words(), " more"], [t + FLOOR for t in times() + [3.0]]))


def test_a_re_framed_pair_given_the_wrong_way_round_is_refused(tmp_path: Path) -> None:
    """The app's capture as A and its upstream's as B (aligned by text): B's text came first."""
    app = write(tmp_path, "app.jsonl", single_yield_app())
    up = write(tmp_path, "up.jsonl", upstream(words(), times()))
    code, out, err = run(app, up, "--dialect-b", "openai-chat")
    assert code == 2 and out == ""
    assert "B's text arrived before A's" in err and "did you swap UPSTREAM and CLIENT?" in err
    assert run(up, app)[0] == 1  # the right way round: held


def test_refusal_on_the_command_line_is_exit_2_one_line(tmp_path: Path) -> None:
    a = write(tmp_path, "a.jsonl", upstream(words(), times()))
    b = write(tmp_path, "b.jsonl", plain(["Something", " else"], [0.4, 0.5]))
    code, out, err = run(a, b)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "their answer texts differ: they agree on the first 0 of" in err


def test_plain_text_read_as_openai_chat_is_refused_with_a_hint(tmp_path: Path) -> None:
    """A plain-text app that forwards `[DONE]` reads as OpenAI Chat (until detection knows better):
    only `[DONE]` is shared. That must not pass as "held no event" (the issue's exit 0 on 1 of 21)."""
    b_capture = plain([*words(), "[DONE]"], [t + FLOOR for t in [*times(), times()[-1] + 0.01]])
    a = write(tmp_path, "a.jsonl", upstream(words(), times()))
    b = write(tmp_path, "b.jsonl", b_capture)
    if analyze(b_capture).dialect == "openai-chat":
        code, out, err = run(a, b)
        assert code == 2 and "share only 1 of 41 events" in err and "--dialect-b" in err
    code, out, _ = run(a, b, "--dialect-b", "generic", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["alignment"] == "text" and doc["dialect_b"] == "generic"


# -- events still aligned as events --------------------------------------------------------


def test_a_hop_that_passes_the_events_on_is_aligned_by_events() -> None:
    a = upstream(words(), times())
    d = timing(upstream(words(), [t + FLOOR for t in times()]), a)
    assert isinstance(d, TimingDiff) and d.alignment == "events" and len(d.matched) == 41


def test_a_few_events_changed_in_place_still_align_by_events() -> None:
    """A hop that rewrites 10 of 40 events (a redaction, say): 30 of 40 still match: events."""
    changed = [w.upper() if i % 4 == 0 else w for i, w in enumerate(words())]
    d = timing(upstream(changed, [t + FLOOR for t in times()]))
    assert isinstance(d, TimingDiff) and len(d.matched) == 31 and len(d.only_b) == 10


# -- the command line ----------------------------------------------------------------------


def test_the_view_says_text_and_quotes_the_release(tmp_path: Path) -> None:
    a = write(tmp_path, "a.jsonl", upstream(words(), times()))
    code, out, err = run(a, write(tmp_path, "b.jsonl", single_yield_app()))
    flat = " ".join(out.split())
    assert (code, err) == (1, "")
    assert "aligned by text: the hop re-framed the events" in flat
    assert "release at t=1.862 s in B: 246 characters in 0 ms, the first held 1.560 s: The word1 word2" in flat
    assert "✘ the hop between A and B held 246 characters up to 1.560 s" in flat
    code, out, _ = run(a, write(tmp_path, "good.jsonl", good_app()))
    assert code == 0 and "✔ the hop between A and B held no character" in " ".join(out.split())
    code, out, _ = run(a, a)
    assert code == 0 and "aligned by events: the hop passed them on" in out


def test_a_long_text_timing_table_is_cut_but_keeps_the_held_rows(tmp_path: Path) -> None:
    """300 deltas re-framed one by one, 3 held past the first 200: those 3 rows are shown among the
    first 200 and the last 50, and the rows left out are counted where they were."""
    n = 300
    at = times(n)
    b_at = [at[246] + FLOOR if 240 <= i < 243 else t + FLOOR for i, t in enumerate(at)]
    a = write(tmp_path, "a.jsonl", upstream(words(n), at))
    b = write(tmp_path, "b.jsonl", plain(words(n), b_at))
    code, out, _ = run(a, b)
    assert code == 1
    rows = [line.split()[0] for line in out.splitlines()[3:] if line.split()[:1] and line.split()[0][0] in "0123456789…"]
    assert rows == [*map(str, range(200)), "…", "240", "241", "242", "…", *map(str, range(250, 300))]
    assert "40 rows not shown" in out and "7 rows not shown" in out


def test_text_timing_json_shape(tmp_path: Path) -> None:
    a = write(tmp_path, "a.jsonl", upstream(words(), times()))
    code, out, _ = run(a, write(tmp_path, "b.jsonl", list_app()), "--json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1 and doc["alignment"] == "text"
    assert doc["dialect"] == "openai-chat" and doc["dialect_b"] == analyze(list_app()).dialect != "openai-chat"
    assert doc["characters"] == len(TEXT) and doc["lost_characters"] == 0
    assert doc["baseline"] == pytest.approx(FLOOR + 0.0039, abs=1e-6)  # the last delta's event came 3.9 ms late
    (release,) = doc["releases"]
    assert release["characters"] == doc["held_characters"] and release["quote"].startswith("The word1")
    assert release["a_indices"] == release["b_indices"] == list(range(len(release["a_indices"])))
    assert doc["max_hold"]["start"] == 0 and doc["max_hold"]["a_index"] == 0
    assert len(doc["stretches"]) == 40
    assert set(doc["stretches"][0]) == {"a_index", "b_index", "start", "end", "t_a", "t_b", "delay", "hold", "held"}
    code, out, _ = run(a, a, "--json")
    assert json.loads(out)["alignment"] == "events"


# -- cost ----------------------------------------------------------------------------------


def _pair(size: int) -> tuple[object, object]:
    """A of `size` characters in 10-character deltas, B in 100-character events, with newlines."""
    deltas = [f" w{i:07d}\n" for i in range(size // 10)]
    at = [0.001 * i for i in range(len(deltas))]
    merged = ["".join(deltas[i : i + 10]) for i in range(0, len(deltas), 10)]
    b_at = [at[min(i + 9, len(at) - 1)] + FLOOR for i in range(0, len(at), 10)]  # when its last delta came
    b = plain([m.replace("\n", " ") for m in merged], b_at)
    return analyze(upstream(deltas, at)), analyze(b)


def test_a_megabyte_of_text_aligns_in_near_linear_time() -> None:
    """8 times the text costs about 8 times the time (a quadratic alignment would cost 64 times).
    The two sizes are timed in turn, best of three, so that a busy machine slows both alike."""
    pairs = {size: _pair(size) for size in (125_000, 1_000_000)}
    best = dict.fromkeys(pairs, float("inf"))
    for _ in range(3):
        for size, (a, b) in pairs.items():
            start = time.perf_counter()
            d = diff_timing(a, b)
            best[size] = min(best[size], time.perf_counter() - start)
            assert isinstance(d, TextTimingDiff) and d.characters == size and d.lost == 0 and not d.held
    assert best[1_000_000] / best[125_000] < 32, best


# -- the HTML report's hold table ----------------------------------------------------------


def test_the_report_times_a_re_framing_hop_by_text() -> None:
    page = html_report([check_capture(upstream(words(), times())), check_capture(single_yield_app())])
    root = ET.fromstring(page)
    (table,) = [e for e in root.iter("table") if e.get("class") == "holds"]
    rows = list(table.iter("tr"))[1:]
    held = [r for r in rows if r.get("class") == "held"]
    assert len(rows) == 40 and len(held) == 37  # one stretch per delta; the last 3 waited under 100 ms
    assert "".join(held[0].itertext()).startswith("00The")  # A #0, B #0, its text
    d = timing(single_yield_app())
    assert d.summary in "".join(root.itertext())


# -- real recordings: the seed's app under gunicorn, recorded on both sides ----------------

PAIRS = Path(__file__).parent / "data" / "twopoint"


@pytest.mark.parametrize("app, held", [("flask-good-gunicorn", False), ("flask-bug-string-gunicorn", True),
                                       ("flask-bug-list-gunicorn", True)])  # fmt: skip
def test_the_recorded_seed_app(app: str, held: bool) -> None:
    """B is read as generic: these apps forward `[DONE]`, which alone no longer makes a stream OpenAI Chat
    once the text dialect is in, but does on a tree without it."""
    code, out, err = run(str(PAIRS / f"{app}.upstream.jsonl"), str(PAIRS / f"{app}.jsonl"), "--dialect-b", "generic",
                         "--json")  # fmt: skip
    doc = json.loads(out)
    assert err == "" and doc["alignment"] == "text" and doc["lost_characters"] == 0
    assert code == (1 if held else 0)
    if not held:
        assert doc["held_characters"] == 0 and doc["max_hold"]["hold"] < 0.05  # the upstream paces 60 ms
        return
    (release,) = doc["releases"]  # the whole answer at once, after the upstream's last delta
    assert release["characters"] == doc["held_characters"] >= 0.9 * doc["characters"]
    assert doc["max_hold"]["start"] == 0 and doc["max_hold"]["hold"] > 1.5  # 29 deltas of 60 ms went by


def test_streams_without_text_on_either_side_are_refused() -> None:
    """Pings only: no shared event and no text to align on (not a crash on an empty alignment)."""
    a = capture([(0.1, b"event: ping\ndata: {}\n\n"), (0.2, b"event: ping\ndata: {}\n\n")], UPSTREAM)
    b = capture([(0.1, b": keep-alive\n\n")], APP)
    with pytest.raises(SSEInspectError, match="A carries no answer text"):
        diff_timing(analyze(a), analyze(b))
