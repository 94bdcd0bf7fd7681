"""The report's events section, its findings next to `check`'s, many captures in parallel, and a big
capture's page in a real browser.

The events section shows the first and last events and those around each finding, without keeping
the events: an `EventSample` keeps the ends, and when the findings point between them an `Around`
reads the capture file again, up to the last event wanted. Both ways must give what keeping every
event gives (`Around` over all of them), and `Around` must give what its definition says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect import Capture, Event, dump_capture, load_capture
from sse_inspect.dialects import EventFlags
from sse_inspect.checks import check_capture
from sse_inspect.cli import cli
from sse_inspect.cli import _report
from sse_inspect.checks import Thresholds
from sse_inspect.report import (
    AROUND,
    HEAD_EVENTS,
    TAIL_EVENTS,
    TEXT_SHOWN,
    Anchor,
    Around,
    Enough,
    EventSample,
    EventsShown,
    Row,
    html_report,
)

from .checks import timelines as T
from .test_report import browse, by_class, chromium, console_messages, tags, tree  # noqa: F401  (a fixture)

CAPTURES = Path(__file__).resolve().parent.parent / "captures"


def lumpy(n: int, *, lump: int = 500, hold: float = 2.0, silence_at: int | None = None) -> Capture:
    """An OpenAI stream of n events released in lumps of `lump` (each after `hold` s of silence), a 45 s
    silence before lump `silence_at`, cut before [DONE] with no end line: findings in its middle and at its end."""
    events = T.openai_events(n, done=False)
    times = []
    for i in range(len(events)):
        k, j = divmod(i, lump)
        times.append(0.3 + k * hold + j * 1e-5 + (45.0 if silence_at is not None and k >= silence_at else 0.0))
    return T.capture(list(zip(times, events)), end=None)


def run(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def event_rows(html: str) -> list[tuple[int, str]]:
    """The events table's rows: (index, findings) of an event, (-n, "") of a line counting n left out."""
    out = []
    for m in re.finditer(r'<tr class="(event(?: at)?|left-out)"([^>]*)>(.*?)</tr>', html):
        if m.group(1) == "left-out":
            left_out = re.search(r"… ([\d,]+) event", m.group(3))
            assert left_out is not None
            out.append((-int(left_out.group(1).replace(",", "")), ""))
        else:
            found = re.search(r'data-findings="([^"]*)"', m.group(2))
            index = re.search(r'data-index="(\d+)"', m.group(2))
            assert index is not None
            out.append((int(index.group(1)), found.group(1) if found else ""))
    return out


# -- the section ------------------------------------------------------------------------------------


def test_the_ends_and_each_findings_neighbourhood_are_shown_and_the_rest_counted() -> None:
    capture = lumpy(6000, silence_at=8)
    report = check_capture(capture)
    html = html_report([report])
    rows = event_rows(html)
    shown = [i for i, _ in rows if i >= 0]
    n = len(report.analysis.events)
    assert shown == sorted(set(shown))  # stream order, each once
    assert shown[:HEAD_EVENTS] == list(range(HEAD_EVENTS)) and shown[-TAIL_EVENTS:] == list(range(n - TAIL_EVENTS, n))
    assert len(shown) - sum(i for i, _ in rows if i < 0) == n  # every event shown or counted
    marked = {i: codes.split() for i, codes in rows if codes}
    burst = next(f for f in report.findings if f.code == "buffering-burst")
    silence = next(f for f in report.findings if f.code == "long-silence")
    events = report.analysis.events
    for f in (burst, silence):  # the first event at or after the finding's time, with AROUND each side
        hit = next(e.index for e in events if e.t is not None and e.t >= f.t)  # type: ignore[operator]
        assert f.code in marked[hit] and 0 < hit - AROUND and hit + AROUND < n
        assert set(range(hit - AROUND, hit + AROUND + 1)) <= set(shown)
        assert hit - AROUND - 1 not in shown and hit + AROUND + 1 not in shown  # and no more
    assert silence.t is not None and 8 * 500 - AROUND in shown and 4000 in marked  # the lump after the 45 s
    assert "missing-end-marker" in marked[n - 1]  # it points at the last event: the tail holds it
    root = tree(html)
    (section,) = by_class(root, "details", "events")
    assert f"{n - len(shown):,} not shown" in "".join(section.itertext())


def test_a_short_stream_shows_every_event_and_none_says_so() -> None:
    html = html_report([check_capture(T.steady(n=30))])
    rows = event_rows(html)
    assert [i for i, _ in rows] == list(range(len(rows))) and all(i >= 0 for i, _ in rows)
    empty = html_report([check_capture(T.capture([(0.3, b": only a comment\n\n")]))])
    assert "No event in this stream." in empty and not event_rows(empty)


def test_an_events_data_is_cut_and_escaped() -> None:
    big = T.sse({"choices": [{"index": 0, "delta": {"content": "<b>" + "x" * 5000}}]})
    html = html_report([check_capture(T.capture([(0.3, big), (0.4, T.sse("[DONE]"))]))])
    assert "&lt;b&gt;" in html and "<b>xxx" not in html
    assert re.search(r"… \(4,\d{3} more characters\)", html)
    assert len(html) < 40_000


# -- found from the ends kept, or by a second pass: the same as keeping every event --------------------

rows_st = st.lists(st.floats(0, 10, allow_nan=False), min_size=0, max_size=120)


def as_rows(times: list[float], ordered: bool) -> list[Row]:
    times = sorted(times) if ordered else times
    return [Row(k, t, "message", str(k), 0, 10 * (k + 1)) for k, t in enumerate(times)]


def anchor_st(n: int) -> st.SearchStrategy[Anchor]:
    return st.one_of(
        st.builds(Anchor, st.just("index"), st.integers(0, max(n + 2, 1)).map(float)),
        st.builds(Anchor, st.just("t"), st.floats(0, 11, allow_nan=False)),
        st.builds(Anchor, st.just("offset"), st.integers(0, 10 * n + 20).map(float)),
    )


def by_definition(rows: list[Row], anchor: Anchor) -> tuple[list[Row], int | None]:
    """The AROUND rows before the first row to reach `anchor`, it, the AROUND after; or the last AROUND."""
    hit = next((k for k, r in enumerate(rows) if anchor.reached(r)), None)
    if hit is None:
        return rows[max(len(rows) - AROUND, 0) :], None
    return rows[max(hit - AROUND, 0) : hit + AROUND + 1], rows[hit].index


@settings(max_examples=300, deadline=None)
@given(data=st.data(), times=rows_st, ordered=st.booleans())
def test_the_ends_kept_or_a_pass_that_stops_early_give_what_keeping_every_event_gives(
    data: st.DataObject, times: list[float], ordered: bool
) -> None:
    rows = as_rows(times, ordered)
    anchors = data.draw(st.lists(anchor_st(len(rows)), max_size=6))
    whole = Around(anchors).fed(rows)
    for anchor in anchors:
        assert (whole.windows[anchor], whole.hits[anchor]) == by_definition(rows, anchor)
    early = Around(anchors, stop=True)
    taken = 0
    try:
        for row in rows:
            taken += 1
            early.event(T_event(row), 0)  # type: ignore[arg-type]
    except Enough:
        assert not early.pending and not early.open
    early.finish()
    assert (early.windows, early.hits) == (whole.windows, whole.hits)
    sample = EventSample()
    for row in rows:
        sample.event(T_event(row), 0)  # type: ignore[arg-type]
    assert sample.count == len(rows)
    assert sample.ordered == all(b.t >= a.t for a, b in zip(rows, rows[1:]))  # type: ignore[operator]
    found, missing = sample.around(anchors)
    assert set(found.windows) | set(missing) == set(anchors) and not set(found.windows) & set(missing)
    assert found.windows == {a: whole.windows[a] for a in found.windows}
    assert found.hits == {a: whole.hits[a] for a in found.windows}
    if len(rows) <= HEAD_EVENTS + TAIL_EVENTS:
        assert not missing  # every event kept: never a second pass
    again = Around(missing).fed(rows)
    found.update(again)
    assert (found.windows, found.hits) == (whole.windows, whole.hits)


def T_event(row: Row) -> Event:
    return Event(row.index, row.type, row.data, start=row.end - 10, end=row.end, t=row.t)


def test_the_ends_kept_suffice_when_the_findings_point_at_them() -> None:
    rows = as_rows([0.001 * k for k in range(1000)], True)
    sample = EventSample()
    for row in rows:
        sample.event(T_event(row), 0)  # type: ignore[arg-type]
    at_ends = [Anchor("index", 3), Anchor("index", 997), Anchor("t", 0.996), Anchor("offset", 99_999.0),
               Anchor("t", 9.0)]  # fmt: skip
    assert sample.around(at_ends)[1] == []
    between = [Anchor("t", 0.5), Anchor("index", 17), Anchor("index", 982)]  # 17 + 5 and 982 - 5: not kept
    assert set(sample.around([*at_ends, *between])[1]) == set(between)


def test_the_command_finds_them_in_a_second_pass_over_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    capture = lumpy(3000, silence_at=3)
    path = tmp_path / "lumpy.jsonl"
    path.write_text(dump_capture(capture), encoding="utf-8")
    seen = []

    class Counted(Around):
        def event(self, event: Event, flags: EventFlags) -> None:
            seen.append(event.index)
            super().event(event, flags)

    monkeypatch.setattr(_report, "Around", Counted)
    report, _, shown = _report.report_one(str(path), None, None, Thresholds(), False)
    kept = EventsShown.of_report(check_capture(load_capture(path)))
    assert shown == kept and shown.note is None
    assert len(shown.at) >= 3 and min(shown.at) > HEAD_EVENTS  # neighbourhoods between the ends, and at the end
    assert not report.analysis.kept
    # the second pass looked only for what the ends kept could not tell, and stopped past it
    middle = max(i for i in shown.at if i < shown.count - TAIL_EVENTS)
    assert seen == list(range(middle + AROUND + 1))


def test_through_a_pipe_the_page_says_which_neighbourhoods_it_could_not_show() -> None:
    body = dump_capture(lumpy(3000, silence_at=3)).encode()
    code, page, _ = run("report", "-", "-o", "-", input=body)
    assert code == 0
    assert re.search(r"The events around \d+ finding\(s\) are not shown: the capture came through a pipe", page)
    rows = event_rows(page)
    assert [i for i, _ in rows if i >= 0][:HEAD_EVENTS] == list(range(HEAD_EVENTS))


# -- the same findings as check ---------------------------------------------------------------------


def page_findings(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<li class="finding" data-code="([^"]+)"><span class="sev (\w+)">', html)


@pytest.mark.parametrize("name", ["nginx-buffered", "nginx-cut", "openrouter-midstream-error", "lumpy"])
def test_the_page_has_exactly_checks_findings(name: str, tmp_path: Path) -> None:
    if name == "lumpy":
        path = tmp_path / "lumpy.jsonl"
        path.write_text(dump_capture(lumpy(3000, silence_at=3)), encoding="utf-8")
    else:
        path = CAPTURES / f"{name}.jsonl"
    _, out, _ = run("check", "--json", str(path))
    (doc,) = json.loads(out)["captures"]
    code, page, _ = run("report", str(path), "-o", "-")
    assert code == 0
    expected = [(f["code"], f["severity"]) for f in doc["findings"]]
    assert expected and page_findings(page) == expected


# -- many captures: one process per core ---------------------------------------------------------------


@pytest.mark.parametrize("command", [["report", "-o", "-"], ["check", "--json", "--fail-on", "never"]])
def test_many_captures_are_checked_in_parallel_as_one_after_the_other(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report` and `check` of a folder of 5 captures: one pool of processes, the same output as one
    after the other; an unreadable capture among them: one line, exit 2."""
    import concurrent.futures

    from sse_inspect.cli import _check

    for k, capture in enumerate([lumpy(800, silence_at=1), T.steady(), T.burst_after_silence(), T.silent_gap(),
                                 T.steady(seed=3)]):  # fmt: skip
        (tmp_path / f"c{k}.jsonl").write_text(dump_capture(capture), encoding="utf-8")
    pools: list[int] = []

    class Counted(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *args: object, **kw: object) -> None:
            pools.append(1)
            super().__init__(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Counted)
    code, parallel, _ = run(command[0], str(tmp_path), *command[1:])
    assert code == 0 and pools == [1]
    if command[0] == "report":
        assert parallel.count('<section class="capture"') == 5
    else:
        paths = [c["path"] for c in json.loads(parallel)["captures"]]
        assert paths == [str(tmp_path / f"c{k}.jsonl") for k in range(5)]
    monkeypatch.setattr(_check, "PARALLEL_FROM", 100)
    code, sequential, _ = run(command[0], str(tmp_path), *command[1:])
    assert code == 0 and pools == [1] and sequential == parallel
    (tmp_path / "c9.jsonl").write_text('{"format": "sse-capture/9"}\n')
    monkeypatch.setattr(_check, "PARALLEL_FROM", 4)
    to_file = ["-o", str(tmp_path / "r.html")] if command[0] == "report" else []
    code, out, err = run(command[0], str(tmp_path), *to_file)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "c9.jsonl" in err and pools == [1, 1]


# -- a big capture in a real browser ------------------------------------------------------------------


def test_a_big_captures_page_stays_small_and_opens_in_chromium(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    """A capture 4x as big (0.8 MB and 3.4 MB of capture file): a page of a few hundred KB still, all its
    sections there in the DOM Chromium built, and no console message."""
    sizes = {}
    pages = {}
    for n in (6_000, 24_000):
        path = tmp_path / f"lumpy-{n}.jsonl"
        path.write_text(dump_capture(lumpy(n, silence_at=5)), encoding="utf-8")
        out = tmp_path / f"report-{n}.html"
        code, _, err = run("report", str(path), "-o", str(out))
        assert code == 0, err
        sizes[n] = (path.stat().st_size, out.stat().st_size)
        pages[n] = out.read_text(encoding="utf-8")
    (small_capture, small_page), (big_capture, big_page) = sizes[6_000], sizes[24_000]
    assert big_capture > 3.5 * small_capture
    # only the answer's text grows (it is over TEXT_SHOWN characters in the big one), and no more than that
    assert big_page < 300_000 and big_page - small_page < TEXT_SHOWN, sizes
    done = browse(chromium, tmp_path, pages[24_000], "--dump-dom")
    assert console_messages(done.stderr) == []
    dom = tags(done.stdout)
    classes = {(t, a.get("class")) for t, a in dom.tags}
    for part in [("table", "summary"), ("svg", "arrival"), ("ul", "findings"), ("table", "events"),
                 ("div", "answer"), ("tr", "left-out"), ("tr", "event at")]:  # fmt: skip
        assert part in classes, part
    shown = [a for t, a in dom.tags if t == "tr" and a.get("class", "").startswith("event")]
    assert HEAD_EVENTS + TAIL_EVENTS < len(shown) < 200
    codes = {a.get("data-code") for t, a in dom.tags if t == "li" and a.get("class") == "finding"}
    assert {"buffering-burst", "long-silence", "missing-end-marker"} <= codes
