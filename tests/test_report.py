"""The HTML report: its structure parsed, hostile captures escaped, and the page checked in a real browser.

The browser tests drive Debian's `chromium` headless (`apt-get install chromium`). Without it they
are skipped, unless the environment variable CI is set: there a missing browser is a failure.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import Capture, analyze, capture_from_body, diff_timing, dump_capture
from sse_inspect.checks import Report, check_capture
from sse_inspect.cli import cli
from sse_inspect.report import CSP, html_report

from .checks import timelines as T

PWN = "document.body.setAttribute('data-pwned','1')"
HOSTILE = (
    f"<script>{PWN}</script>",
    f'"><img src=x onerror="{PWN}">',
    "'><svg onload=alert(1)>",
    "</pre></div><script src=https://evil.example/x.js></script>",
    "\x1b[2J\u202etxt.exe",
)


def check(capture: Capture) -> Report:
    return check_capture(capture)


def page(*captures: Capture) -> str:
    return html_report([check(c) for c in captures])


def tree(html: str) -> ET.Element:
    """The page as XML: it is written well-formed, so a stray tag would break or show up here."""
    return ET.fromstring(html)


def by_class(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(tag) if cls in e.get("class", "").split()]


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of <style> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data


def tags(html: str) -> Tags:
    parser = Tags()
    parser.feed(html)
    parser.close()
    return parser


def hostile_capture() -> Capture:
    """An OpenAI stream whose every captured string (URL, headers, model, text, tool call, finish
    reason, end error, file name) carries markup or script."""
    text, call = HOSTILE[0] + HOSTILE[1], HOSTILE[2]
    chunks = [
        {"model": HOSTILE[3], "choices": [{"index": 0, "delta": {"content": text}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": call, "arguments": HOSTILE[1]}}]}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": HOSTILE[4]}, "finish_reason": HOSTILE[0]}]},
    ]  # fmt: skip
    events = [T.sse(c) for c in chunks] + [T.sse("[DONE]")]
    capture = T.capture(
        [(0.3 + 0.05 * i, e) for i, e in enumerate(events)],
        headers=T.SSE_HEADERS + (("Server", HOSTILE[1]), ("Via", HOSTILE[0])),
        url=f"https://api.example/v1/chat?q={HOSTILE[0]}",
        end="server-disconnected",
        end_error=HOSTILE[2],
    )
    return dataclasses.replace(capture, path=f"{HOSTILE[1]}.jsonl")


def held_pair(held: int = 20) -> tuple[Capture, Capture]:
    """One stream recorded before (A) and after (B) a hop that held its first `held` events 1 s."""
    events = T.openai_events(39)
    a = T.capture([(0.3 + 0.03 * i, e) for i, e in enumerate(events)])
    release = 0.3 + 0.03 * held + 0.005
    b_times = [release if i < held else 0.305 + 0.03 * i for i in range(len(events))]
    return a, T.capture(list(zip(b_times, events)))


# -- structure -----------------------------------------------------------------------------------


def test_one_step_per_chunk_and_a_burst_where_check_found_one() -> None:
    capture = T.burst_after_silence()
    report = check(capture)
    root = tree(html_report([report]))
    (group,) = by_class(root, "g", "capture")
    steps = by_class(group, "path", "chunk")
    assert int(group.get("data-chunks", "")) == len(steps) == len(capture.chunks) == 150
    assert [int(s.get("data-chunk", "")) for s in steps] == list(range(150))
    assert len(by_class(group, "path", "events")) == 1
    (finding,) = [f for f in report.findings if f.code == "buffering-burst"]
    (burst,) = finding.evidence.bursts
    (rect,) = by_class(group, "rect", "burst")
    (hold,) = by_class(group, "rect", "hold")
    assert float(hold.get("x", "")) < float(rect.get("x", ""))  # the silence comes before the release
    assert "40 text events" in "".join(rect.itertext())
    assert f"t={burst.t:.3f} s" in "".join(rect.itertext())
    assert by_class(group, "line", "ttfb") and by_class(group, "line", "first-token")
    assert by_class(group, "g", "end") == by_class(group, "g", "complete")
    assert "BUFFERED" in "".join(root.itertext())


def test_a_steady_stream_has_no_burst_and_a_cut_one_ends_cut() -> None:
    root = tree(page(T.steady()))
    assert not by_class(root, "rect", "burst") and not by_class(root, "rect", "hold")
    cut = T.paced(T.openai_events(30, done=False), end="server-disconnected")
    root = tree(page(cut))
    (end,) = by_class(root, "g", "end")
    assert end.get("class") == "end cut" and "✘" in "".join(end.itertext())
    assert "NO END MARKER" in "".join(root.itertext())


def test_a_long_silence_is_shaded() -> None:
    root = tree(page(T.silent_gap()))
    (rect,) = by_class(root, "rect", "silence")
    assert "no byte for 45.0 s" in "".join(rect.itertext())


def test_the_request_headers_verdict_findings_with_fixes_and_answer() -> None:
    capture = T.nginx_4k_buffer()
    html = page(capture)
    root = tree(html)
    text = "".join(root.itertext())
    assert "POST" in text and T.OPENAI_URL in text and "200 OK" in text
    headers = by_class(root, "table", "headers")[0]
    assert [td.text for td in headers.iter("td")] == ["Content-Type", "text/event-stream", "Cache-Control", "no-cache",
                                                     "Server", "nginx/1.24.0"]  # fmt: skip
    findings = by_class(root, "li", "finding")
    assert "fixed-size-flush" in [f.get("data-code") for f in findings]
    assert "proxy_buffering off" in "".join(by_class(root, "p", "culprit")[0].itertext())  # the fix text, once
    assert "".join(findings[0].itertext()).endswith("→ the culprit's fix, above")
    assert " tok0 tok1 tok2" in "".join(by_class(root, "div", "answer")[0].itertext())
    assert "openai-chat" in text


def test_tool_calls_reasoning_usage_and_finish_reason() -> None:
    chunks = [
        {"model": "m1", "choices": [{"index": 0, "delta": {"reasoning_content": "let me think"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
         "usage": {"prompt_tokens": 11, "completion_tokens": 7}},
    ]  # fmt: skip
    root = tree(page(T.paced([T.sse(c) for c in chunks] + [T.sse("[DONE]")])))
    answer = by_class(root, "div", "answer")[0]
    assert "".join(by_class(answer, "details", "reasoning")[0].itertext()).endswith("let me think")
    (call,) = by_class(answer, "div", "tool-call")
    assert call.find("code").text == "get_weather" and call.find("pre").text == '{"city": "Paris"}'
    assert "prompt_tokens=11, completion_tokens=7" in "".join(answer.itertext())
    assert "tool_calls" in "".join(by_class(answer, "p", "finish")[0].itertext())


def test_untimed_captures_say_so_instead_of_a_plot() -> None:
    untimed = capture_from_body(b"".join(T.openai_events(5)))
    root = tree(page(untimed))
    assert root.find(".//svg") is None
    assert "No arrival plot: untimed" in "".join(root.itertext())
    root = tree(page(T.steady(), untimed))
    assert len(by_class(root, "g", "capture")) == 1
    assert "untimed: not plotted" in "".join(by_class(root, "p", "legend")[0].itertext())
    assert "raw body" in "".join(root.itertext())


def test_several_captures_share_one_axis_in_distinct_colours() -> None:
    root = tree(page(T.steady(), T.burst_after_silence(), T.slow_model()))
    groups = by_class(root, "g", "capture")
    assert [g.get("data-capture") for g in groups] == ["0", "1", "2"]
    colours = [{p.get("stroke") for p in by_class(g, "path", "chunk")} for g in groups]
    assert all(len(c) == 1 for c in colours) and len(set().union(*colours)) == 3
    assert [len(by_class(g, "path", "chunk")) for g in groups] == [300, 150, 30]
    assert not root.findall(".//table[@class='holds']")  # only for exactly two captures


def test_two_recordings_of_one_stream_get_a_hold_table() -> None:
    a, b = held_pair()
    root = tree(page(a, b))
    (table,) = by_class(root, "table", "holds")
    rows = list(table.iter("tr"))[1:]
    td = diff_timing(analyze(a), analyze(b))
    assert len(rows) == len(td.matched) == 40
    held = [r for r in rows if r.get("class") == "held"]
    assert len(held) == len(td.held) == 17  # of the 20 kept back, the last 3 waited less than 100 ms
    assert f"held 17 events up to {td.max_hold.hold:.3f} s" in "".join(root.itertext())


OTHER_STREAMS = {
    "share only 1 of 31 events": lambda: T.paced(
        [T.sse({"choices": [{"index": 0, "delta": {"content": f"x{i}"}}]}) for i in range(30)] + [T.sse("[DONE]")]
    ),
    "share no event": T.anthropic_paced,
    "untimed": lambda: capture_from_body(b"".join(T.openai_events(39))),
}


@pytest.mark.parametrize("reason", list(OTHER_STREAMS))
def test_the_hold_table_is_skipped_for_other_pairs(reason: str) -> None:
    root = tree(page(held_pair()[0], OTHER_STREAMS[reason]()))
    assert not by_class(root, "table", "holds")
    note = root.find(".//p[@id='holds-skipped']")
    assert note is not None and reason in "".join(note.itertext())


def test_hostile_captures_are_escaped_everywhere() -> None:
    html = page(hostile_capture(), hostile_capture())
    for raw in HOSTILE[:4]:
        assert raw not in html
    assert "&lt;script&gt;document.body.setAttribute(&#x27;data-pwned&#x27;,&#x27;1&#x27;)&lt;/script&gt;" in html
    assert "\x1b" not in html and "\u202e" not in html and "\\x1b[2J\\u202etxt.exe" in html
    parsed = tags(html)
    names = {t for t, _ in parsed.tags}
    assert not names & {"script", "img", "iframe", "object", "embed", "link", "base", "form", "foreignobject"}
    assert not [a for _, attrs in parsed.tags for a in attrs if a.startswith("on")]
    root = tree(html)  # still well-formed: nothing broke out of its element
    text = "".join(root.itertext())
    for raw in HOSTILE[:4]:
        assert raw in text  # shown as text, whole


def test_no_resource_is_loaded_from_anywhere() -> None:
    html = page(hostile_capture(), *held_pair())
    parsed = tags(html)
    for tag, attrs in parsed.tags:
        for name, value in attrs.items():
            assert "://" not in (value or ""), (tag, name, value)
            if name in ("src", "href", "xlink:href", "action", "srcset", "poster", "data"):
                assert (value or "").startswith("#"), (tag, name, value)
    assert "://" not in parsed.style and "url(" not in parsed.style and "@import" not in parsed.style
    (csp,) = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp["content"] == CSP and "default-src 'none'" in CSP and "script" not in CSP


# -- the command ---------------------------------------------------------------------------------


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_the_report_command_writes_one_file(tmp_path: Path) -> None:
    a, b = held_pair()
    (tmp_path / "a.jsonl").write_text(dump_capture(a))
    (tmp_path / "b.jsonl").write_text(dump_capture(b))
    out = tmp_path / "report.html"
    code, stdout, err = run("report", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "-o", str(out))
    assert code == 0 and stdout == ""
    assert err.startswith(f"wrote {out}: 2 capture(s)")
    root = tree(out.read_text(encoding="utf-8"))
    assert len(by_class(root, "g", "capture")) == 2 and by_class(root, "table", "holds")
    code, stdout, _ = run("report", str(tmp_path), "-o", "-", "--title", "proxy <bug>")
    assert code == 0 and "<h1>proxy &lt;bug&gt;</h1>" in stdout and stdout.count('<section class="capture"') == 2


def test_the_report_command_refuses_bad_input(tmp_path: Path) -> None:
    code, _, err = run("report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "r.html"))
    assert code == 2 and "no such file" in err and not (tmp_path / "r.html").exists()
    (tmp_path / "a.jsonl").write_text(dump_capture(T.steady()))
    code, _, err = run("report", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "no" / "r.html"))
    assert code == 2 and "cannot write the report" in err and len(err.splitlines()) == 1


# -- in a real browser ---------------------------------------------------------------------------

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--hide-scrollbars",
)
BROWSER_TIMEOUT = 60
_CONSOLE = re.compile(r":CONSOLE[:(\]]")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(
                "chromium is not installed, and CI is set: the browser tests must run (apt-get install chromium)"
            )
        pytest.skip("chromium is not installed (apt-get install chromium); with CI set this fails instead")
    return path


def browse(chromium: str, tmp_path: Path, html: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Open `html` from a file in headless chromium with a fresh profile, console messages on stderr."""
    page_path = tmp_path / "report.html"
    page_path.write_text(html, encoding="utf-8")
    profile = tmp_path / "profile"
    cmd = [chromium, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args,
           page_path.as_uri()]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=BROWSER_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # chromium's own helper processes too
        proc.communicate()
        pytest.fail(f"chromium did not finish within {BROWSER_TIMEOUT} s")
    assert proc.returncode == 0, err[-2000:]
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if _CONSOLE.search(line)]


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, the decompressed scanlines) of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, at = b"", 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"IDAT":
            idat += data[at + 8 : at + 8 + length]
        at += 12 + length
    return width, height, zlib.decompress(idat)


def test_the_page_renders_in_chromium(chromium: str, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    browse(chromium, tmp_path, page(*held_pair()), f"--screenshot={shot}", "--window-size=1200,1600")
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    assert shot.stat().st_size > 30_000  # a blank or error page compresses to a few KB
    assert len(set(pixels)) > 50  # text, curves and shading: many distinct values, not one background


def test_the_dom_has_the_steps_and_no_console_message(chromium: str, tmp_path: Path) -> None:
    capture = T.burst_after_silence()
    done = browse(chromium, tmp_path, page(capture), "--dump-dom")
    assert console_messages(done.stderr) == []  # no error, no CSP violation, no log at all
    dom = tags(done.stdout)  # chromium serialises the DOM as HTML, not XML
    assert len([a for t, a in dom.tags if t == "path" and a.get("class") == "chunk"]) == len(capture.chunks)
    assert len([a for t, a in dom.tags if t == "rect" and a.get("class") == "burst"]) == 1


def test_a_hostile_capture_stays_inert_in_chromium(chromium: str, tmp_path: Path) -> None:
    html = page(hostile_capture())
    done = browse(chromium, tmp_path, html, "--dump-dom")
    assert console_messages(done.stderr) == []
    dom = tags(done.stdout)
    body = next(attrs for tag, attrs in dom.tags if tag == "body")
    assert body == {"data-captures": "1"} and 'data-pwned="' not in done.stdout
    assert not {t for t, _ in dom.tags} & {"script", "img", "iframe"}
    assert "&lt;script&gt;document.body" in done.stdout  # shown as text


def test_escaping_alone_keeps_it_inert_without_the_csp(chromium: str, tmp_path: Path) -> None:
    """With the CSP taken out, scripts run (the control script proves it), and the hostile ones still do not."""
    html = page(hostile_capture())
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP}"/>'
    assert html.count(meta) == 1
    control = "<script>document.body.setAttribute('data-control','1')</script></body>"
    done = browse(chromium, tmp_path, html.replace(meta, "").replace("</body>", control), "--dump-dom")
    assert 'data-control="1"' in done.stdout
    assert 'data-pwned="' not in done.stdout
    assert [t for t, _ in tags(done.stdout).tags if t in ("script", "img")] == ["script"]  # the control only
    assert console_messages(done.stderr) == []


# -- bounded: no capture makes the page (or the memory making it) grow without end ----------------


def long_stream(n: int, *, silence_at: int | None = None, text: str = "") -> Capture:
    """An OpenAI stream of n content chunks 1 ms apart (a 60 s silence before chunk `silence_at`)."""
    events = T.openai_events(n)
    if text:
        events[0] = T.sse({"choices": [{"index": 0, "delta": {"content": text}}]})
    times = [0.3 + 0.001 * i + (60.0 if silence_at is not None and i >= silence_at else 0.0) for i in range(n + 1)]
    return T.capture(list(zip(times, events)))


def test_a_long_stream_is_plotted_one_step_per_pixel_column() -> None:
    """20,000 chunks: at most a step per pixel column (about 820), bytes and events to the same top,
    the long silence still exact; and far under the 4 MB one step per chunk took."""
    capture = long_stream(20_000, silence_at=12_000)
    html = page(capture)
    assert len(html) < 400_000
    root = tree(html)
    (group,) = by_class(root, "g", "capture")
    assert (group.get("data-chunks"), group.get("data-events")) == ("20001", "20001")
    steps = by_class(group, "path", "chunk")
    assert 2 <= len(steps) <= 830
    spans = [tuple(map(int, p.get("data-chunks", "").split("-"))) for p in steps]
    assert spans[0][0] == 0 and spans[-1][1] == 20_000
    assert all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:]))  # every chunk in exactly one step
    ends = [float(re.findall(r"V([\d.]+)H", p.get("d", ""))[-1]) for p in steps]
    assert ends == sorted(ends, reverse=True)  # the bytes only grow (y goes up the page)
    (mark,) = by_class(group, "g", "end")
    assert float(mark.find("circle").get("cy")) == ends[-1]  # type: ignore[union-attr]
    # the silence: the step before it ends at 11,999 chunks' bytes, the one after starts 60 s later
    before = next(p for p, (_, last) in zip(steps, spans) if last == 11_999)
    after = steps[steps.index(before) + 1]
    assert float(re.search(r"H([\d.]+)V", after.get("d", "")).group(1)) - float(  # type: ignore[union-attr]
        re.findall(r"H([\d.]+)", before.get("d", ""))[-1]) > 100  # fmt: skip
    assert by_class(group, "rect", "silence")
    (events,) = by_class(group, "path", "events")
    assert len(events.get("d", "")) < 40_000


def test_a_stream_just_long_enough_is_plotted_as_before() -> None:
    """Up to PLOT_STEPS chunks, one step for each, as always."""
    root = tree(page(long_stream(1999)))
    assert len(by_class(root, "path", "chunk")) == 2000
    assert len(by_class(tree(page(long_stream(2000))), "path", "chunk")) < 1000


def test_a_huge_answer_is_cut_and_says_how_much_was_left_out() -> None:
    capture = long_stream(3, text="ä" * 300_000)
    html = page(capture)
    assert len(html) < 300_000
    text = analyze(capture).answer.text
    assert len(text) > 300_000
    assert f"… {len(text) - 100_000:,} more characters not shown" in html
    assert html.count("ä") == 100_000


def test_a_long_hold_table_shows_its_ends_and_counts_the_rest() -> None:
    """Two recordings of a 5,000-event stream: the first 200 and the last 50 rows, and the 4,751 between counted."""
    a = long_stream(5000)
    b = T.capture([(c.t + 0.005, c.data) for c in a.chunks])  # type: ignore[operator]
    root = tree(page(a, b))
    (table,) = by_class(root, "table", "holds")
    rows = list(table.iter("tr"))[1:]
    assert len(rows) == 200 + 1 + 50
    assert "… 4751 more events" in "".join(rows[200].itertext())
    first_cells = [r.find("td").text for r in (rows[0], rows[199], rows[201], rows[-1])]  # type: ignore[union-attr]
    assert first_cells == ["0", "199", "4951", "5000"]


def test_many_notices_and_tool_calls_are_shown_at_both_ends() -> None:
    def call(k: int) -> bytes:
        tool = {"index": k, "id": f"c{k}", "function": {"name": f"f{k}", "arguments": "{}"}}
        return T.sse({"choices": [{"index": 0, "delta": {"tool_calls": [tool]}}]})

    calls = [call(k) for k in range(3000)]
    bad = [b"foo: ignored\ndata: {}\n\n"] * 3000  # a notice each (ignored-field)
    events = [*calls, *bad, T.sse("[DONE]")]
    root = tree(page(T.capture([(0.3 + 0.0001 * i, e) for i, e in enumerate(events)])))
    assert len(by_class(root, "div", "tool-call")) == 250
    assert "… 2750 more tool calls" in "".join(root.itertext())
    (notices,) = by_class(root, "ul", "notices")
    items = list(notices.iter("li"))
    assert len(items) == 251 and items[200].get("class") == "left-out"


@pytest.mark.e2e
def test_the_report_of_a_long_capture_stays_small_in_memory_and_on_disk(tmp_path: Path) -> None:
    """300,000 events (55 MB): the report streams the capture through. Before: 1.4 GB peak and
    40 MB of HTML; now well under 150 MB, and the page under 1 MB."""
    from .huge import measured, write_openai_capture

    path = tmp_path / "long.jsonl"
    write_openai_capture(path, 55_000_000)
    out = tmp_path / "report.html"
    code, _, err, peak = measured("report", path, "-o", out)
    assert code == 0, err
    assert out.stat().st_size < 1_000_000
    assert peak < 150 * 2**20, peak
    (events,) = re.findall(r'data-events="(\d+)"', out.read_text(encoding="utf-8"))
    assert int(events) > 200_000


@pytest.mark.parametrize("times", ["steady", "backwards", "huge"])
def test_the_plot_data_kept_while_streaming_stays_bounded(times: str) -> None:
    """A Trace keeps at most 2 * PLOT_STEPS runs however many points come and whatever their times
    (going back, negative, 1.7e308), and the runs still cover every point and every byte."""
    from sse_inspect.report import PLOT_STEPS, Steps

    steps = Steps()
    n = 100_000
    for k in range(n):
        t = {"steady": 0.001 * k, "backwards": (-1) ** k * 0.01 * k, "huge": 1.7e308 if k % 3 else -5.0}[times]
        steps.add(t, 2)
    assert len(steps.runs) <= 2 * PLOT_STEPS
    assert (steps.runs[0].first, steps.runs[-1].last, steps.count, steps.total) == (0, n - 1, n, 2 * n)
    assert all(b.first == a.last + 1 and b.before == a.after for a, b in zip(steps.runs, steps.runs[1:]))
