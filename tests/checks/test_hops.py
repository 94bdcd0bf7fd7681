"""The hops read from a response's headers, and the culprit named from them and the findings' evidence."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sse_inspect import Capture, dump_capture, load_capture
from sse_inspect.checks import Finding, Severity, check_capture, parse_codes
from sse_inspect.checks.evidence import Burst, Bursts, Encoding, FixedSizeFlush, HeadersHeld, SingleFlush, TimeoutCut
from sse_inspect.checks.hops import CATALOGUE, Culprit, Hop, blame, culprit, hops_line, read_hops, with_culprits
from sse_inspect.cli import cli
from sse_inspect.report import html_report

from . import timelines as T

LAB = Path(__file__).resolve().parent.parent / "data" / "hops"
"""Recordings of the lab's tutorial Flask app (issue 18): the buggy versions, under gunicorn and the Flask
dev server, with and without nginx in front."""
W = Severity.WARNING
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def with_headers(*headers: tuple[str, str], url: str = T.OPENAI_URL) -> Capture:
    return T.capture([(0.3, b"data: hi\n\n")], headers=T.SSE_HEADERS + headers, url=url)


def names(*headers: tuple[str, str], url: str = T.OPENAI_URL) -> list[str]:
    return [h.name for h in read_hops(with_headers(*headers, url=url))]


def hops(*names: str) -> tuple[Hop, ...]:
    return tuple(Hop(n, CATALOGUE[n].kind, "Server", n) for n in names)


def finding(code: str, evidence: object = None) -> Finding:
    return Finding(code=code, severity=W, message=code, evidence=evidence)  # type: ignore[arg-type]


# -- hops from headers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ((("Server", "nginx/1.22.1"),), ["nginx"]),
        ((("Server", "openresty/1.21.4.1"),), ["nginx"]),
        ((("Server", "Apache/2.4.57 (Debian)"),), ["apache"]),
        ((("Server", "cloudflare"), ("CF-Ray", "8f1c2a3b4c5d6e7f-LHR")), ["cloudflare"]),
        ((("CF-Ray", "8f1c2a3b4c5d6e7f-LHR"),), ["cloudflare"]),
        ((("Server", "gunicorn"),), ["gunicorn"]),
        ((("Server", "Werkzeug/3.1.9 Python/3.11.7"),), ["werkzeug"]),
        ((("Server", "uvicorn"),), ["uvicorn"]),
        ((("Server", "waitress"),), ["waitress"]),
        ((("Server", "Caddy"),), ["caddy"]),
        ((("Server", "istio-envoy"),), ["envoy"]),
        ((("x-envoy-upstream-service-time", "12"),), ["envoy"]),
        ((("Server", "Google Frontend"), ("X-Cloud-Trace-Context", "abc/1;o=1")), ["google-frontend"]),
        ((("Server", "awselb/2.0"),), ["aws-alb"]),
        ((("X-Amz-Cf-Id", "Zb2x=="), ("X-Amz-Cf-Pop", "LHR62-C1")), ["cloudfront"]),
        ((("X-Cache", "Miss from cloudfront"),), ["cloudfront"]),
        ((("x-amzn-RequestId", "c0ffee"), ("x-amz-apigw-id", "Ab1=")), ["aws-api-gateway"]),
        ((("x-vercel-id", "fra1::iad1::abc"),), ["vercel"]),
        ((("fly-request-id", "01HX-iad"),), ["fly"]),
        ((("X-Served-By", "cache-lhr7331-LHR"), ("Via", "1.1 varnish")), ["fastly"]),
        ((("Via", "1.1 varnish (Varnish/7.1)"), ("X-Varnish", "32770")), ["varnish"]),
        ((("x-azure-ref", "0abc"),), ["azure-front-door"]),
        ((("Server", "Microsoft-Azure-Application-Gateway/v2"),), ["azure-app-gateway"]),
        ((("X-Powered-By", "Express"),), ["express"]),
        ((("X-Powered-By", "PHP/8.2"),), []),
        ((("Via", "1.1 vegur"),), ["heroku"]),
        ((("Server", "SomeServer/1.0"), ("X-Cache", "HIT")), []),  # names no hop of the catalogue: none guessed
        ((), []),
    ],
    ids=lambda v: ",".join(f"{k}" for k, _ in v) if isinstance(v, tuple) else None,
)
def test_hops_read_from_each_kind_of_header(headers: tuple[tuple[str, str], ...], expected: list[str]) -> None:
    assert names(*headers) == expected


def test_a_via_list_is_one_hop_per_entry_nearest_the_client_last_in_the_header() -> None:
    """Each proxy appends its Via entry, so the last entry is the hop nearest the client."""
    assert names(("Via", "1.1 squid, 1.1 Caddy")) == ["caddy", "squid"]
    assert names(("via", "  1.1   vegur ,HTTP/1.1  Caddy")) == ["heroku", "caddy"]  # lowercase name, odd spacing


def test_hops_are_ordered_nearest_the_client_first_and_each_once() -> None:
    hops_ = read_hops(with_headers(("Server", "nginx/1.24.0"), ("Via", "1.1 vegur"), ("CF-Ray", "8f1c-LHR"),
                                   ("Cf-Ray", "again")))  # fmt: skip
    assert [(h.name, h.kind, h.header, h.value) for h in hops_] == [
        ("cloudflare", "cdn", "CF-Ray", "8f1c-LHR"),
        ("heroku", "platform", "Via", "1.1 vegur"),
        ("nginx", "proxy", "Server", "nginx/1.24.0"),
    ]


def test_the_request_host_names_a_platform() -> None:
    assert names(("Server", "Google Frontend"), url="https://chat-abc123-ew.a.run.app/v1/stream") == ["cloud-run"]
    assert names(url="https://my-app.herokuapp.com/stream") == ["heroku"]
    assert names(url="https://notrun.app.example.com/stream") == []
    assert names(url="http://[::1/stream") == []  # a URL that does not parse names no host


def test_a_raw_body_has_no_hops() -> None:
    assert read_hops(dataclasses.replace(with_headers(("Server", "nginx")), response=None)) == ()


def test_every_hop_read_is_in_the_catalogue_with_a_known_kind() -> None:
    assert {k.kind for k in CATALOGUE.values()} == {"proxy", "cdn", "platform", "server"}
    assert "application" in CATALOGUE and len(CATALOGUE) == 30  # tomcat added (Apache-Coyote)


# -- the culprit -----------------------------------------------------------------------------------


def test_one_event_holding_the_whole_answer_is_the_application_even_behind_nginx() -> None:
    c = culprit([finding("single-flush", SingleFlush(1, 230, 1.6, 1.6))], hops("nginx"))
    assert c is not None and (c.hop, c.decided, c.candidates) == ("application", True, ("application",))
    assert "one event held the whole answer after 1.6 s" in c.why
    assert "inside the loop" in c.fix and "nginx" not in c.fix


def test_many_events_in_one_flush_with_no_proxy_seen_is_the_application() -> None:
    c = culprit([finding("single-flush", SingleFlush(30, 300, 1.9, 1.9))], hops("gunicorn"))
    assert c is not None and (c.hop, c.decided) == ("application", True)
    assert "no proxy (only gunicorn" in c.why
    assert "gunicorn's worker sends each yield as it comes" in c.fix and "proxy_buffering" not in c.fix


def test_many_events_in_one_flush_behind_nginx_cannot_be_told() -> None:
    c = culprit([finding("single-flush", SingleFlush(30, 300, 1.9, 1.9))], hops("nginx"))
    assert c is not None and (c.hop, c.decided, c.candidates) == ("application", False, ("application", "nginx"))
    assert c.fix.startswith("record both sides of nginx and run `sse-inspect diff --by timing")
    assert "proxy_buffering off" in c.fix and "inside the loop" in c.fix


def test_bursts_mid_stream_behind_nginx_favour_nginx() -> None:
    c = culprit([finding("buffering-burst")], hops("cloudflare", "nginx"))
    assert c is not None and (c.decided, c.candidates) == (False, ("nginx", "application", "cloudflare"))


@pytest.mark.parametrize(("size", "decided"), [(4096, True), (8192, True), (16384, False), (32768, False)])
def test_page_sized_slices_behind_nginx_are_nginx(size: int, decided: bool) -> None:
    c = culprit([finding("fixed-size-flush", FixedSizeFlush(size, 6, 6))], hops("nginx"))
    assert c is not None and c.hop == "nginx" and c.decided is decided
    assert f"exactly {size} bytes" in c.why


def test_a_decided_buffering_culprit_is_shared_by_the_buffering_findings() -> None:
    """An nginx 4 KiB buffer also shows as bursts: both findings advise nginx's fix, decided."""
    report = check_capture(T.nginx_4k_buffer())
    assert [h.name for h in report.hops] == ["nginx"]
    assert report.culprit is not None and (report.culprit.hop, report.culprit.decided) == ("nginx", True)
    held = [f for f in report.findings if f.code in ("buffering-burst", "fixed-size-flush")]
    assert len(held) == 2 and {f.fix for f in held} == {report.culprit.fix}
    assert "X-Accel-Buffering: no" in report.culprit.fix


def test_compression_with_no_proxy_is_the_apps_middleware_named_by_its_server() -> None:
    """The lab's Apache mod_deflate and HAProxy `compression` passed gunicorn's Server header on and added
    none of their own: the reason says that such a proxy may have compressed instead."""
    c = blame(finding("compressed-stream", Encoding("gzip")), hops("express"))
    assert c is not None and (c.hop, c.decided, c.candidates) == ("application", True, ("application",))
    assert "res.flush()" in c.fix
    assert "Apache, HAProxy and Traefik compress without naming themselves in any header" in c.why


def test_a_compressed_stream_that_streamed_is_no_reports_culprit() -> None:
    """Compressed but flushed per event (mod_deflate does), nothing was held: the finding names its
    compressor, the report has no culprit."""
    report = check_capture(T.gzipped())
    assert report.culprit is None
    [compressed] = [f for f in report.findings if f.code == "compressed-stream"]
    assert compressed.advice is not None and "GZipMiddleware" in compressed.fix


def test_compression_behind_a_compressing_proxy_names_it_first() -> None:
    c = blame(finding("compressed-stream", Encoding("gzip")), hops("caddy"))
    assert c is not None and (c.hop, c.decided, c.candidates) == ("caddy", False, ("caddy", "application"))
    assert "`encode`" in c.fix and c.fix.startswith("record both sides of caddy")


def test_a_compressed_stream_that_arrives_in_flushes_blames_the_compression() -> None:
    found = [finding("single-flush", SingleFlush(30, 300, 1.9, 1.9)), finding("compressed-stream")]
    c = culprit(found, hops("apache"))
    assert c is not None and c.candidates == ("apache", "application")
    assert "mod_deflate" in c.fix


def test_a_content_length_with_no_proxy_is_the_application() -> None:
    c = culprit([finding("content-length-on-stream")], hops("werkzeug"))
    assert c is not None and (c.hop, c.decided) == ("application", True)
    c = culprit([finding("content-length-on-stream")], hops("aws-api-gateway"))
    assert c is not None and (c.decided, c.candidates) == (False, ("application", "aws-api-gateway"))


def test_held_headers_are_the_application_unless_a_proxy_compresses_or_buffers() -> None:
    c = culprit([finding("headers-held", HeadersHeld(1.9, 1.9))], hops("werkzeug"))
    assert c is not None and (c.hop, c.decided) == ("application", True) and ": ok" in c.fix
    assert "a WSGI server sends the headers with the app's first non-empty write" in c.fix
    c = culprit([finding("headers-held", HeadersHeld(1.9, 1.9)), finding("compressed-stream")], hops("caddy"))
    assert c is not None and c.candidates == ("caddy", "application")
    c = culprit([finding("headers-held", HeadersHeld(1.9, 1.9))], hops("caddy"))  # caddy holds no headers
    assert c is not None and (c.hop, c.decided) == ("application", True)
    assert "none of the hops seen (caddy) does this" in c.why
    c = culprit([finding("headers-held", HeadersHeld(1.9, 1.9))], hops("nginx"))  # nginx's flush brings them
    assert c is not None and (c.decided, c.candidates) == (False, ("application", "nginx"))
    assert "for nginx: send `X-Accel-Buffering: no`" in c.fix


def test_an_idle_cut_names_the_hop_whose_limit_matched_among_those_seen() -> None:
    cut = finding("idle-timeout-cut", TimeoutCut(60.1, 60.0, ("nginx", "aws-alb")))
    c = culprit([cut], hops("nginx"))
    assert c is not None and (c.hop, c.decided) == ("nginx", True)
    assert "60 s idle limit of nginx" in c.why and "proxy_read_timeout" in c.fix
    c = culprit([cut], hops("gunicorn"))  # neither is in the headers: both stay candidates
    assert c is not None and (c.decided, c.candidates) == (False, ("nginx", "aws-alb"))
    assert "none of them is in the headers" in c.why and "idle timeout" in c.fix


def test_a_total_cut_is_a_duration_limit_keep_alives_do_not_help() -> None:
    c = culprit([finding("total-timeout-cut", TimeoutCut(30.0, 30.0, ("gunicorn",)))], hops("gunicorn"))
    assert c is not None and (c.hop, c.decided) == ("gunicorn", True)
    assert "--timeout" in c.fix and "keep-alive" not in c.fix


def test_no_cause_no_culprit() -> None:
    assert culprit([finding("long-silence"), finding("done-not-json")], hops("nginx")) is None
    assert blame(finding("idle-timeout-cut", TimeoutCut(12.0, 0.0, ())), hops("nginx")) is None
    report = check_capture(T.steady())
    assert report.culprit is None and report.hops == ()


def test_a_finding_advises_its_culprits_fix_and_the_code_names_no_hop() -> None:
    capture = T.close_delimited_through_nginx()
    assert capture.response is not None
    gunicorn = dataclasses.replace(capture.response, headers=T.SSE_HEADERS + (("Server", "gunicorn"),))
    report = check_capture(dataclasses.replace(capture, response=gunicorn))
    flush = next(f for f in report.findings if f.code == "single-flush")
    assert report.culprit is not None and flush.fix == report.culprit.fix and flush.advice is not None
    assert "nginx" not in flush.fix and "x-accel-buffering" not in {f.code for f in report.findings}


def test_content_length_is_still_accepted_by_its_old_name() -> None:
    assert parse_codes("content-length, single-flush") == {"content-length-on-stream", "single-flush"}
    capture = with_headers(("Content-Length", "10"))
    assert [f.code for f in check_capture(capture, select=parse_codes("content-length")).findings] == [
        "content-length-on-stream"
    ]


# -- the lab's recordings of the tutorial app --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "seen", "events"),
    [
        ("flask-bug-string-gunicorn-nginx.jsonl", ["nginx"], 1),  # nginx replaced gunicorn's Server header
        ("flask-bug-string-werkzeug.jsonl", ["werkzeug"], 1),
        ("flask-bug-list-gunicorn.jsonl", ["gunicorn"], 30),
    ],
)
def test_the_buggy_tutorial_app_is_named_not_nginx(name: str, seen: list[str], events: int) -> None:
    """The whole answer after the model's time, in one event (the string bug) or in one flush with no proxy
    (the list bug): the application, decided, whether or not nginx stands in front."""
    capture = load_capture(str(LAB / name))
    report = check_capture(capture)
    assert [h.name for h in report.hops] == seen
    assert report.analysis.timing.events == events + 1  # and data: [DONE]
    first = report.analysis.timing.first_token or report.analysis.timing.ttfb
    assert first is not None and first > 1.5  # the model took ~1.9 s; everything came at its end
    flush = finding("single-flush", SingleFlush(events, report.analysis.timing.decoded_bytes, first, first))
    c = culprit([flush], report.hops)
    assert c is not None and (c.hop, c.decided) == ("application", True)
    assert "nginx" not in c.fix
    if report.culprit is not None:  # once the timing checks flag these recordings, the report agrees
        assert report.culprit.hop == "application"


# -- the views -----------------------------------------------------------------------------------


def run(*args: str, columns: int = 100, terminal: bool = False) -> tuple[int, str]:
    env = {"COLUMNS": str(columns), "FORCE_COLOR": "1" if terminal else None, "TTY_COMPATIBLE": None}
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, ANSI.sub("", result.stdout)


@pytest.fixture
def nginx_flush(tmp_path: Path) -> str:
    """The whole answer in one flush behind nginx: the application or nginx."""
    capture = T.close_delimited_through_nginx()
    assert capture.response is not None
    headers = T.SSE_HEADERS + (("Server", "nginx/1.22.1"),)
    path = tmp_path / "nginx-flush.jsonl"
    response = dataclasses.replace(capture.response, headers=headers)
    path.write_text(dump_capture(dataclasses.replace(capture, response=response)))
    return str(path)


def test_check_json_has_the_hops_and_the_culprit(nginx_flush: str) -> None:
    _, out = run("check", "--json", nginx_flush)
    [doc] = json.loads(out)["captures"]
    assert doc["hops"] == [{"name": "nginx", "kind": "proxy", "header": "Server", "value": "nginx/1.22.1"}]
    assert set(doc["culprit"]) == {"hop", "decided", "candidates", "why", "fix"}
    assert (doc["culprit"]["hop"], doc["culprit"]["decided"], doc["culprit"]["candidates"]) == (
        "application", False, ["application", "nginx"])  # fmt: skip
    single = next(f for f in doc["findings"] if f["code"] == "single-flush")
    assert single["fix"] == doc["culprit"]["fix"]


def test_json_culprit_is_null_when_nothing_held_the_stream(tmp_path: Path) -> None:
    path = tmp_path / "steady.jsonl"
    path.write_text(dump_capture(T.steady()))
    _, out = run("check", "--json", str(path))
    [doc] = json.loads(out)["captures"]
    assert doc["culprit"] is None and doc["hops"] == []


@pytest.mark.parametrize("command", ["check", "show"])
def test_check_and_show_print_the_hops_and_the_culprit(command: str, nginx_flush: str) -> None:
    _, out = run(command, nginx_flush)
    lines = out.splitlines()
    assert "hops: nginx (Server: nginx/1.22.1)" in lines
    said = next(i for i, line in enumerate(lines) if line.startswith("cannot tell: the application or nginx ("))
    assert "record both sides of nginx" in lines[said + 1]
    assert out.count("→ the same fix as the culprit above") == 2  # single-flush and buffering-burst


def test_with_no_proxy_the_line_says_so(tmp_path: Path) -> None:
    path = tmp_path / "werkzeug.jsonl"
    path.write_text((LAB / "flask-bug-string-werkzeug.jsonl").read_text())
    _, out = run("check", str(path))
    assert "hops: werkzeug (Server: Werkzeug/3.1.9 Python/3.11.7); no proxy seen in the headers" in out


def test_a_narrow_terminal_folds_the_culprit_lines(nginx_flush: str) -> None:
    _, out = run("check", nginx_flush, columns=60, terminal=True)
    lines = out.splitlines()
    assert all(len(line) <= 60 for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("cannot tell:"))
    assert lines[start + 1].startswith("    ") and "record both sides" in " ".join(lines[start : start + 6])


def test_the_html_report_shows_the_hops_and_the_culprit() -> None:
    capture = T.nginx_4k_buffer()
    page = html_report([check_capture(capture)])
    assert '<p class="hops"><b>hops:</b> nginx (Server: nginx/1.24.0)</p>' in page
    assert '<p class="culprit decided" data-hop="nginx">most likely: nginx (slices of exactly 4096 bytes' in page
    assert page.count("X-Accel-Buffering: no` from the app, or set `proxy_buffering off`") == 1  # once, above
    assert page.count("→ the culprit&#x27;s fix, above") == 2  # buffering-burst and fixed-size-flush


def test_a_culprit_is_frozen() -> None:
    c = Culprit("application", True, ("application",), "why", "fix")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.hop = "nginx"  # type: ignore[misc]


def test_held_headers_follow_the_decided_culprit_of_the_held_body() -> None:
    """The string bug behind nginx: one event held the whole answer, so the app is decided; the headers
    waited for that same body, so headers-held names the app too, not "record both sides of nginx"."""
    body = finding("single-flush", SingleFlush(1, 110, 1.9, 1.9))
    found, c = with_culprits([body, finding("headers-held", HeadersHeld(1.9, 1.9))], hops("nginx"))
    held = next(f for f in found if f.code == "headers-held")
    assert c is not None and (c.hop, c.decided) == ("application", True)
    assert held.fix.startswith("send the headers at once") and "record both sides" not in held.fix
    # near miss: a flush of many events behind nginx decides nothing, so the headers stay undecided too
    burst = finding("buffering-burst")
    found, c = with_culprits([burst, finding("headers-held", HeadersHeld(1.9, 1.9))], hops("nginx"))
    held = next(f for f in found if f.code == "headers-held")
    assert c is not None and not c.decided and held.fix.startswith("record both sides of nginx")


def test_fixed_size_slices_with_no_proxy_seen_leave_an_unseen_proxy_in_doubt() -> None:
    """Apache's mod_proxy and HAProxy pass the app's `Server: gunicorn` on (the lab): slices with no proxy
    in the headers are the app's or theirs, and the reason quotes the slices, not a burst."""
    found, c = with_culprits([finding("buffering-burst"), finding("fixed-size-flush", FixedSizeFlush(4096, 6, 6))],
                             hops("gunicorn"))  # fmt: skip
    assert c is not None and (c.decided, c.candidates) == (False, ("application", "apache", "haproxy"))
    assert "slices of exactly 4096 bytes" in c.why and "held and released together" not in c.why
    assert c.fix.startswith("record the app on its own port") and "flushpackets=on" in c.fix
    assert {f.fix for f in found if f.code in ("buffering-burst", "fixed-size-flush")} == {c.fix}
    # near miss: a burst with no slices and no proxy seen stays the application's, decided
    c = culprit([finding("buffering-burst")], hops("gunicorn"))
    assert c is not None and (c.hop, c.decided) == ("application", True)


def test_lumps_with_no_proxy_seen_suspect_haproxy_first() -> None:
    """HAProxy 2.6 merges small writes (the lab: 4 events every 240 ms behind it, one every 60 ms with
    `option http-no-delay`) and names itself in no header: lumps with no proxy seen are most likely
    its doing, undecided against the app; behind nginx, nginx leads; many events after one long hold
    (no lumps) with no proxy seen stay the application's."""
    lumps = Bursts(tuple(Burst(t, 4, 40, 0.24, 0.1) for t in (0.3, 0.54, 0.78, 1.02, 1.26)), 20, 0.1, lumps=True)
    found, c = with_culprits([finding("buffering-burst", lumps)], hops("gunicorn"))
    assert c is not None and (c.hop, c.decided, c.candidates) == ("haproxy", False, ("haproxy", "application"))
    assert "lumps of a few" in c.why and "option http-no-delay" in c.fix and found[0].fix == c.fix
    c = culprit([finding("buffering-burst", lumps)], hops("nginx", "gunicorn"))
    assert c is not None and c.candidates[0] == "nginx" and not c.decided
    held = Bursts((Burst(2.0, 40, 4000, 2.0, 3.0),), 40, 50.0)
    c = culprit([finding("buffering-burst", held)], hops("gunicorn"))
    assert c is not None and (c.hop, c.decided) == ("application", True)


def test_a_content_length_on_a_stream_that_streamed_names_no_culprit() -> None:
    """The events arrived spread over seconds: nothing held the body, the header is only wrong, and an OK
    verdict gets no "most likely" line beside it; held at once, the application is named."""
    paced = T.paced(T.openai_events(20), headers=T.SSE_HEADERS + (("Content-Length", "1904"),))
    report = check_capture(paced)
    [length] = [f for f in report.findings if f.code == "content-length-on-stream"]
    assert report.culprit is None and report.verdict.startswith("OK")
    assert "held the whole body" not in length.message and "no Content-Length" in length.fix
    held = T.capture([(1.6, b"".join(T.openai_events(20)))], headers=T.SSE_HEADERS + (("Content-Length", "1904"),))
    report = check_capture(held)
    assert report.culprit is not None and report.culprit.hop == "application"


def test_a_total_cut_near_an_unseen_platforms_limit_puts_the_apps_server_first() -> None:
    """Cut while flowing at 10 s on localhost behind nginx: Vercel, which names itself in every response, is
    not in the headers, so the app's server or worker (a crash, a worker timeout) comes first."""
    cut = finding("total-timeout-cut", TimeoutCut(10.05, 10.0, ("vercel",)))
    c = culprit([cut], hops("nginx"))
    assert c is not None and (c.hop, c.decided, c.candidates) == ("application", False, ("application", "vercel"))
    assert "the headers show nginx, not vercel" in c.why and "worker timeout" in c.fix and "maxDuration" in c.fix
    # near misses: Vercel in the headers decides; an idle cut at a proxy's limit keeps its proxies first
    c = culprit([cut], hops("vercel"))
    assert c is not None and (c.hop, c.decided) == ("vercel", True)
    c = culprit([finding("idle-timeout-cut", TimeoutCut(60.1, 60.0, ("nginx", "aws-alb")))], hops("gunicorn"))
    assert c is not None and c.candidates == ("nginx", "aws-alb")


def test_advice_applies_to_what_was_seen() -> None:
    """A compressed stream with no proxy seen: the finding's own advice carries the caveat of proxies that
    compress unseen, and names Django's fix (its GZipMiddleware excludes no type). Cloudflare's buffering
    fix does not tell an event stream to be one. Near miss: behind a compressing proxy seen, no caveat."""
    c = blame(finding("compressed-stream", Encoding("gzip")), hops("gunicorn"))
    assert c is not None and "if Apache, HAProxy or Traefik stands in front" in c.fix
    assert "`Content-Encoding: identity` on the StreamingHttpResponse" in c.fix
    c = blame(finding("compressed-stream", Encoding("gzip")), hops("caddy"))
    assert c is not None and "stands in front" not in c.fix
    c = culprit([finding("buffering-burst")], hops("cloudflare"))
    assert c is not None and "cloudflare" in c.candidates
    assert "Content-Type: text/event-stream" not in c.fix and "no-transform" in c.fix


@pytest.mark.parametrize(
    ("headers", "url", "expected"),
    [
        ((("Server", "Apache-Coyote/1.1"),), T.OPENAI_URL, ["tomcat"]),  # Tomcat, the app's own server
        ((("Server", "Apache/2.4.57"),), T.OPENAI_URL, ["apache"]),  # near miss: the httpd proxy
        ((), "https://chat.run.app.example.com/", []),  # a host rule matches the end, not a substring
        ((), "https://chat-abc.a.run.app/", ["cloud-run"]),
        ((), "https://abc.execute-api.us-east-1.amazonaws.com/prod", ["aws-api-gateway"]),
        ((("x-amzn-trace-id", "Root=1-abc"),), T.OPENAI_URL, []),  # Lambda URLs and apps echo it too
        ((("Server", "gunicorn"), ("Server", "nginx"), ("Via", "1.1 varnish")), T.OPENAI_URL,
         ["varnish", "nginx", "gunicorn"]),  # a Via entry's proxy stands in front of the Server-named one
        ((("Via", "1.1 nginx (comment, with comma), 1.1 vegur"),), T.OPENAI_URL, ["heroku", "nginx"]),
    ],
)
def test_hops_read_from_what_the_headers_say(
    headers: tuple[tuple[str, str], ...], url: str, expected: list[str]
) -> None:
    assert names(*headers, url=url) == expected


def test_the_hops_line_clips_a_long_value_and_keeps_a_via_comment_whole() -> None:
    line = hops_line(read_hops(with_headers(("Server", "nginx/" + "A" * 20_000))))
    assert len(line) < 100 and line.endswith("…)")
    line = hops_line(read_hops(with_headers(("Via", "1.1 nginx (comment, with comma)"))))
    assert line == "nginx (Via: 1.1 nginx (comment, with comma))"


def test_a_compressed_stream_in_one_flush_is_said_so() -> None:
    found = [finding("single-flush", SingleFlush(30, 300, 1.9, 1.9)), finding("compressed-stream")]
    c = culprit(found, hops("gunicorn"))
    assert c is not None and "a compressed stream arrived in one flush" in c.why
    c = culprit([finding("buffering-burst"), finding("compressed-stream")], hops("gunicorn"))
    assert c is not None and "a compressed stream arrived in flushes" in c.why
