"""The hops a response passed, read from its headers, and the culprit: which of them most likely
buffered, held or cut the stream, with the one fix for it.

A hop is only ever read from what a header says (`Server: nginx/1.22.1`, `Via: 1.1 vegur`,
`CF-Ray`, ...), never guessed. The culprit is decided from those hops and the findings' evidence:
one event holding the whole answer is the application's doing whatever hops it passed (a hop holds
bytes, it never merges events into one); with no proxy seen, the application (its code, its
framework, its own server) is the only suspect; behind a proxy that buffers, a flush of many events
could be either, and only a recording of both sides of that proxy decides (`sse-inspect diff --by
timing`). The catalogue of hops and their fixes is documented in docs/signatures.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple
from urllib.parse import urlsplit

from .._capture import Capture
from ._model import Finding
from .evidence import Bursts, ContentLength, FixedSizeFlush, SingleFlush, TimeoutCut

__all__ = [
    "CATALOGUE", "CAUSES", "Culprit", "Hop", "Known", "blame", "culprit", "culprit_line", "hops_line", "label",
    "read_hops", "with_culprits",
]  # fmt: skip

APPLICATION = "application"


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop a response passed, read from one header."""

    name: str
    """A name of `CATALOGUE`."""
    kind: str
    """"proxy", "cdn", "platform" or "server" (the app's own HTTP server or framework)."""
    header: str
    """The header that showed it, e.g. "Server", "Via", "CF-Ray" ("Host": the request's URL)."""
    value: str


@dataclass(frozen=True, slots=True)
class Culprit:
    """Which hop most likely buffered or cut the stream, and the one fix."""

    hop: str
    """The most likely: "application" (the app's code or its framework) or a name of `CATALOGUE`."""
    decided: bool
    """True when the evidence decides; False: `candidates` could all have done it."""
    candidates: tuple[str, ...]
    """Most likely first; (hop,) when decided."""
    why: str
    """The evidence in one sentence."""
    fix: str
    """The one fix for that hop (undecided: how to decide, then the fix for each candidate)."""


# (a NamedTuple, not a frozen dataclass: the catalogue's rows alone, defined in a quarter of the time, see _timeouts)
class Known(NamedTuple):
    """A hop of the catalogue: its kind, whether it holds a stream unless told not to, and its fixes
    (None: the cause's general fix applies)."""

    kind: str
    buffers: bool = False
    """It buffers responses by default (or in a common setup), so it comes first among the suspects."""
    buffering: str | None = None
    compression: str | None = None
    idle: str | None = None
    total: str | None = None


_NO_TRANSFORM = "or send `Cache-Control: no-cache, no-transform`"

CATALOGUE: dict[str, Known] = {
    APPLICATION: Known(
        "server",
        buffering="yield (or write) each event inside the loop that reads the model, not after it, and flush "
                  "it: no list or string collected first, no buffering middleware on the stream",
        total="look in the app's server log at the cut for a crash or a worker timeout (a worker killed "
              "mid-stream closes the connection)",
        compression="exclude text/event-stream from the app's compression middleware (Starlette/FastAPI "
                    "GZipMiddleware, Express `compression`, Flask-Compress; Django's GZipMiddleware has no such "
                    "setting: set `Content-Encoding: identity` on the StreamingHttpResponse, which it then leaves "
                    f"alone) {_NO_TRANSFORM}",
    ),
    "nginx": Known(
        "proxy", buffers=True,
        buffering="send `X-Accel-Buffering: no` from the app, or set `proxy_buffering off` for this location "
                  "(ingress-nginx: the proxy-buffering annotation)",
        compression="turn nginx's `gzip` off for text/event-stream (take it out of `gzip_types`) "
                    f"{_NO_TRANSFORM}",
        idle="raise `proxy_read_timeout` (60 s by default) or send a comment line every 15 s, from before the "
             "first token",
    ),
    "apache": Known(
        "proxy", buffers=True,
        buffering="let mod_proxy flush each write: `flushpackets=on` on the ProxyPass (mod_proxy_fcgi sends "
                  "4 KiB at least without it)",
        compression="exclude the stream from mod_deflate: `SetEnv no-gzip 1` for it, or "
                    "`SetEnvIfNoCase Content-Type text/event-stream no-gzip`",
        idle="raise `ProxyTimeout` (or the ProxyPass `timeout=`) or send a comment line every 15 s",
    ),
    "haproxy": Known("proxy", idle="raise `timeout server` / `timeout client` (or `timeout tunnel`) or send a "
                                   "comment line every 15 s",
                     buffering="add `option http-no-delay` to the frontend or backend: by default HAProxy merges "
                               "small writes into fuller packets, so events arrive a few at a time"),
    "caddy": Known(
        "proxy",
        buffering="set `flush_interval -1` on the reverse_proxy",
        compression="leave text/event-stream out of `encode` (a matcher on the other types) "
                    f"{_NO_TRANSFORM}",
    ),
    "traefik": Known("proxy", compression="exclude text/event-stream from the `compress` middleware "
                                          "(`excludedContentTypes`)"),
    "envoy": Known(
        "proxy",
        idle="raise the route's `idle_timeout` / `stream_idle_timeout` or send a comment line every 15 s",
        total="set the route's `timeout` to 0 (15 s by default) for the streaming route",
    ),
    "varnish": Known("proxy", buffers=True, buffering="pass the stream (`return (pass)`) with "
                                                       "`set beresp.do_stream = true`"),
    "squid": Known("proxy", buffers=True, buffering="bypass the proxy for the stream, or turn off the "
                                                     "content adaptation that reads whole bodies"),
    "cloudflare": Known(
        "cdn",
        buffering="let no cache rule match the stream and send `Cache-Control: no-cache, no-transform` on it; "
                  "behind a Tunnel, run a current cloudflared",
        compression="send `Cache-Control: no-transform` (or `no-cache, no-transform`) on the stream",
        idle="send a comment line every 15-30 s: Cloudflare cuts a connection silent for 100 s (a 524)",
    ),
    "cloudfront": Known("cdn", idle="raise the origin response timeout (30 s by default) or send a comment "
                                    "line every 15 s"),
    "fastly": Known("cdn", buffering="pass the stream (no caching) and let it stream: `beresp.do_stream`"),
    "akamai": Known("cdn"),
    "aws-alb": Known("proxy", idle="raise the load balancer's idle timeout (60 s by default) or send a comment "
                                   "line every 15 s"),
    "aws-api-gateway": Known(
        "platform", buffers=True,
        buffering="stream the integration's response (REST: `responseTransferMode: STREAM`; a Lambda URL: "
                  "`RESPONSE_STREAM`): API Gateway buffers it whole otherwise",
        total="API Gateway stops an integration at 29 s: stream the response, or move the call off it",
    ),
    "google-frontend": Known("platform"),
    "cloud-run": Known("platform", total="raise the service's request timeout (`--timeout`, 300 s by default, "
                                         "up to 3600 s)"),
    "azure-front-door": Known("cdn", idle="send a comment line every 15 s (Front Door waits 30 s for bytes "
                                          "[unverified])"),
    "azure-app-gateway": Known("proxy", idle="raise the backend setting's request timeout (20 s by default "
                                             "[unverified]) or send a comment line every 15 s"),
    "heroku": Known("platform", idle="send the headers and a byte within 30 s, then one every 55 s at most: "
                                     "a comment line every 15 s"),
    "vercel": Known("platform", total="raise the function's `maxDuration`, or stream from an edge function"),
    "netlify": Known("platform"),
    "fly": Known("platform", compression="stop Fly's edge compressing the stream: "
                                         "`Cache-Control: no-transform` on it"),
    "gunicorn": Known("server", total="raise `--timeout` (30 s by default: a sync worker busy streaming is "
                                      "killed then), or use threaded or async workers (`-k gthread`)"),
    "uvicorn": Known("server"),
    "tomcat": Known("server"),
    "werkzeug": Known("server"),
    "waitress": Known("server"),
    "express": Known("server"),
    "django": Known("server"),
}
"""Every hop the culprit may name (`Hop.name`, `Culprit.hop`), with its kind and fixes."""

_WSGI_HEADERS = "(a WSGI server sends the headers with the app's first non-empty write)"
_UNDER_STARLETTE = "(under uvicorn: Starlette's or FastAPI's GZipMiddleware held the stream before Starlette 0.46)"
_EXPRESS_FLUSH = ("(Express: call `res.flush()` after each write when `compression` is on, or filter "
                  "text/event-stream out of it)")  # fmt: skip
_SERVER_FIX = {
    ("gunicorn", "buffering"): "(gunicorn's worker sends each yield as it comes: the app or a middleware held it)",
    ("werkzeug", "buffering"): "(the Flask dev server sends each yield as it comes: the app or a middleware held it)",
    ("uvicorn", "buffering"): _UNDER_STARLETTE,
    ("uvicorn", "compression"): _UNDER_STARLETTE,
    ("express", "buffering"): _EXPRESS_FLUSH,
    ("express", "compression"): _EXPRESS_FLUSH,
    ("gunicorn", "headers"): _WSGI_HEADERS,
    ("werkzeug", "headers"): _WSGI_HEADERS,
    ("waitress", "headers"): _WSGI_HEADERS,
}
"""What the app's own server (by its header) adds to the application's fix for a cause."""

# -- reading the hops ----------------------------------------------------------------------------

# The patterns below go through re's own cache (`re.search(pattern, ...)`), each compiled when first
# tried: a response without a Server or Via header compiles none of the 23 server patterns (0.7 ms
# of `check`'s start), one with `Server: nginx` two.
_SERVER = (  # a Server (or Via) value's word, as a pattern (case-insensitive), and the hop it names
    (r"apache-coyote|tomcat", "tomcat"), (r"nginx|openresty|tengine", "nginx"), (r"apache", "apache"),
    (r"haproxy", "haproxy"), (r"caddy", "caddy"),
    (r"traefik", "traefik"), (r"envoy", "envoy"), (r"varnish", "varnish"), (r"squid", "squid"),
    (r"cloudflare", "cloudflare"), (r"cloudfront", "cloudfront"), (r"akamai", "akamai"),
    (r"awselb", "aws-alb"), (r"\bgoogle\b", "google-frontend"),
    (r"microsoft-azure-application-gateway", "azure-app-gateway"), (r"vegur|heroku", "heroku"),
    (r"vercel", "vercel"), (r"netlify", "netlify"), (r"fly\.io|^fly\b", "fly"), (r"gunicorn", "gunicorn"),
    (r"uvicorn", "uvicorn"), (r"werkzeug", "werkzeug"), (r"waitress", "waitress"),
)  # fmt: skip

_BY_HEADER = (  # a header whose presence names a hop (lowercase; a trailing * matches a prefix)
    ("cf-ray", "cloudflare"), ("x-amz-cf-id", "cloudfront"), ("x-amz-cf-pop", "cloudfront"),
    ("x-amz-apigw-id", "aws-api-gateway"),  # (x-amzn-RequestId names none: every AWS API sends it, Bedrock too)
    ("x-vercel-id", "vercel"), ("x-nf-request-id", "netlify"),
    ("fly-request-id", "fly"), ("x-envoy-*", "envoy"), ("x-varnish", "varnish"), ("x-azure-ref", "azure-front-door"),
    ("x-cloud-trace-context", "google-frontend"), ("x-akamai-*", "akamai"),
)  # fmt: skip

_HOSTS = (  # the request's host, by its ending
    (r"\.run\.app$", "cloud-run"), (r"\.herokuapp\.com$", "heroku"), (r"\.vercel\.app$", "vercel"),
    (r"\.netlify\.app$", "netlify"), (r"\.fly\.dev$", "fly"), (r"\.cloudfront\.net$", "cloudfront"),
    (r"\.execute-api\.[a-z0-9-]+\.amazonaws\.com$", "aws-api-gateway"), (r"\.azurefd\.net$", "azure-front-door"),
)  # fmt: skip
_VIA_ENTRY = r"(?:[^,(]|\([^)]*\))+"
"""One entry of a Via header: up to a comma outside a comment (a comment may hold commas)."""
_SHOWN = 60
"""Characters of a header value the hops line shows."""

_KIND_ORDER = {"cdn": 0, "platform": 1, "proxy": 2, "server": 3}
"""Outermost (nearest the client) first, where the headers tell no order of their own."""


def read_hops(capture: Capture) -> tuple[Hop, ...]:
    """The hops the response passed, as far as its headers (and the request's host) tell, nearest the
    client first; each hop once, as the first header that showed it. A raw body has none."""
    response = capture.response
    if response is None:
        return ()
    found = [hop for name, value in response.headers for hop in _from_header(name, value)]
    if capture.request is not None:
        host = _host(capture.request.url)
        found += [_hop(hop, "Host", host) for pattern, hop in _HOSTS if re.search(pattern, f".{host}")]
    seen: dict[str, Hop] = {}
    for hop in found:
        seen.setdefault(hop.name, hop)
    if "cloud-run" in seen:  # Cloud Run's front end is Google's: one hop
        seen.pop("google-frontend", None)
    if "fastly" in seen:  # Fastly runs Varnish: its Via says varnish
        seen.pop("varnish", None)
    # a proxy that adds a Via entry stands in front of the server whose Server header went through it
    return tuple(sorted(seen.values(), key=lambda h: (_KIND_ORDER[h.kind], h.header.lower() != "via")))


def _host(url: str) -> str:
    """The URL's host, lowercase ("" for none, or a URL that does not parse: `http://[::1`)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _from_header(name: str, value: str) -> list[Hop]:
    """The hops one header names (a Via header, one per entry, the last entry first: each proxy adds its
    entry at the end, so the last is nearest the client)."""
    low = name.strip().lower()
    if low == "server":
        return _named(name, value, value)
    if low == "via":
        entries = [e.strip() for e in re.findall(_VIA_ENTRY, value) if e.strip()]
        return [hop for entry in reversed(entries) for hop in _named(name, entry, entry.split(None, 1)[-1])]
    if low == "x-powered-by" and re.search(r"\bexpress\b", value, re.IGNORECASE):
        return [_hop("express", name, value)]
    if low == "x-served-by" and value.strip().lower().startswith("cache-"):
        return [_hop("fastly", name, value)]
    if low == "x-cache" and "cloudfront" in value.lower():
        return [_hop("cloudfront", name, value)]
    for key, hop in _BY_HEADER:
        if low == key or (key.endswith("*") and low.startswith(key[:-1])):
            return [_hop(hop, name, value)]
    return []


def _named(header: str, value: str, product: str) -> list[Hop]:
    """The hop a Server value or Via entry names (`product`: the part after a Via entry's protocol)."""
    name = next((name for pattern, name in _SERVER if re.search(pattern, product, re.IGNORECASE)), None)
    return [] if name is None else [_hop(name, header, value)]


def _hop(name: str, header: str, value: str) -> Hop:
    return Hop(name, CATALOGUE[name].kind, header, value.strip())


# -- the culprit ---------------------------------------------------------------------------------

BUFFERING = ("single-flush", "buffering-burst", "fixed-size-flush")
CAUSES = (*BUFFERING, "idle-timeout-cut", "total-timeout-cut", "headers-held", "content-length-on-stream")
"""The codes of a stream buffered, held or cut, in the order the report's culprit is chosen from. A
compressed stream (`compressed-stream`) gets its compressor's fix too, but is the report's culprit only
through the buffering it caused: compressed and flushed per event, nothing was held."""
QUIET_COMPRESSORS = "Apache, HAProxy and Traefik"
"""Proxies that compress and, by default, add no header of their own (the lab's Apache and HAProxy
passed gunicorn's Server header on): the culprit's reason says so when it names the app's compression."""

QUIET_PROXIES = ("apache", "haproxy")
"""Proxies that, by default, add no header of their own: unseen, they remain suspects of fixed-size slices."""

_PAGE_SLICES = (4096, 8192)
"""nginx's `proxy_buffer_size` is one memory page (4 or 8 KiB): slices of that size behind nginx are nginx's."""

_GENERAL = {
    "buffering": "make every hop pass each event on as it comes",
    "compression": f"exclude text/event-stream from the compression {_NO_TRANSFORM}",
    "length": "stream the body (a generator, no Content-Length) and let no hop read it whole",
    "headers": "send the headers at once: write a comment line (`: ok`) before the first token",
    "idle": "send a comment line (`: keep-alive`) every 15 s, from before the first token and during long tool "
            "calls, or raise the idle timeout",
    "total": "raise the hop's request duration limit, or split the work: keep-alives do not help against it",
}
"""Each cause's fix when the catalogue has none of its own for the hop."""


def with_culprits(findings: Sequence[Finding], hops: Sequence[Hop]) -> tuple[list[Finding], Culprit | None]:
    """`findings` with each cause's finding advising its culprit's fix, and the report's culprit: that
    of the first cause in `CAUSES` order (None when no finding is a cause). The buffering findings share
    one culprit, a decided one when any of them decides (slices of nginx's page size behind nginx)."""
    blamed = {f.code: c for f in findings if (c := blame(f, hops, findings)) is not None}
    held = [blamed[code] for code in BUFFERING if code in blamed]
    if held:
        shared = _shared(blamed, findings)
        blamed.update({code: shared for code in BUFFERING if code in blamed})
        if shared.decided and "headers-held" in blamed:  # the headers waited for the same held body
            blamed["headers-held"] = _headers_with_body(shared, hops)
    out = [replace(f, advice=blamed[f.code].fix) if f.code in blamed else f for f in findings]
    return out, next((blamed[code] for code in CAUSES if code in blamed), None)


def culprit(findings: Sequence[Finding], hops: Sequence[Hop]) -> Culprit | None:
    """The report's culprit: that of the first finding of `CAUSES` order found."""
    return with_culprits(findings, hops)[1]


def blame(f: Finding, hops: Sequence[Hop], findings: Sequence[Finding] = ()) -> Culprit | None:
    """Which hop most likely caused `f` (one of `CAUSES` or `compressed-stream`), or None for a finding
    no hop causes. `findings` are all the report's: a compressed stream changes who buffers."""
    between = [h.name for h in hops if h.kind != "server"]  # what stood between the app and the client
    server = next((h.name for h in hops if h.kind == "server"), None)
    compressed = any(g.code == "compressed-stream" for g in findings)
    buffering = [h for h in between if CATALOGUE[h].buffers]
    if f.code in BUFFERING:
        return _buffering(f, between, server, compressed)
    if f.code == "compressed-stream":
        return _compression(between, server, "the stream was compressed")
    if f.code == "content-length-on-stream":
        if isinstance(f.evidence, ContentLength) and f.evidence.streamed:
            return None  # the body arrived spread out: nothing held it, the header is only wrong
        return _among([APPLICATION, *buffering], "length", "a Content-Length was set, so the whole body was held "
                      "before it was sent", between, server)  # fmt: skip
    if f.code == "headers-held":  # a WSGI server sends them with the first write; a buffering proxy with its flush
        compressing = [h for h in between if compressed and CATALOGUE[h].compression]
        return _among([*compressing, APPLICATION, *buffering], "headers", "the headers came only with the first "
                      "event", between, server)  # fmt: skip
    if f.code in ("idle-timeout-cut", "total-timeout-cut"):
        return _timeout(f, [h.name for h in hops])
    return None


def _buffering(f: Finding, between: list[str], server: str | None, compressed: bool) -> Culprit:
    ev = f.evidence
    if isinstance(ev, SingleFlush) and ev.events == 1:
        why = (f"one event held the whole answer after {ev.held_s:.1f} s, so the app sent it in one write: "
               "a hop holds bytes, it never merges events into one")  # fmt: skip
        return Culprit(APPLICATION, True, (APPLICATION,), why, _fix(APPLICATION, "buffering", server))
    size = ev.size if isinstance(ev, FixedSizeFlush) else None
    if size in _PAGE_SLICES and "nginx" in between:
        why = f"slices of exactly {size} bytes cut across events behind nginx: its proxy_buffer_size"
        return Culprit("nginx", True, ("nginx",), why, _fix("nginx", "buffering", server))
    buffering = [h for h in between if CATALOGUE[h].buffers]
    others = [h for h in between if h not in buffering]
    if isinstance(ev, Bursts) and ev.lumps:  # a merging hop's doing, compressed or not (each lump decodes whole)
        lumps = f"text events arrived in lumps of a few, read after read ({len(ev.bursts)} reads)"
        if not between:
            return _unseen_lumper(lumps, server)
        return _among([*buffering, APPLICATION, *others], "buffering", lumps, between, server)
    if compressed:
        flushes = "in one flush" if f.code == "single-flush" else "in flushes"
        return _compression(between, server, f"a compressed stream arrived {flushes}")
    if size is not None and not between:
        return _unseen_slicer(size, server)
    if size is not None:
        return _among([*buffering, APPLICATION, *others], "buffering",
                      f"slices of exactly {size} bytes cut across events", between, server)  # fmt: skip
    if f.code == "single-flush":  # the whole answer at the end: most often the app collecting it
        return _among([APPLICATION, *buffering, *others], "buffering", "the whole answer arrived in one flush",
                      between, server)  # fmt: skip
    return _among([*buffering, APPLICATION, *others], "buffering", "events arrived held and released together",
                  between, server)  # fmt: skip


def _shared(blamed: dict[str, Culprit], findings: Sequence[Finding]) -> Culprit:
    """The one culprit of the buffering findings: one event holding the whole answer (the app's, decided)
    first; then the slices' (their size says more than a burst's timing, and unseen proxies cut slices);
    then a decided one; else the first."""
    one_event = any(f.code == "single-flush" and isinstance(f.evidence, SingleFlush) and f.evidence.events == 1
                    for f in findings)  # fmt: skip
    if one_event:
        return blamed["single-flush"]
    if "fixed-size-flush" in blamed:
        return blamed["fixed-size-flush"]
    held = [blamed[code] for code in BUFFERING if code in blamed]
    return next((c for c in held if c.decided), held[0])


def _unseen_slicer(size: int, server: str | None) -> Culprit:
    """Fixed-size slices with no proxy in the headers: the app's stack may have cut them, or a proxy that
    names itself in no header (the lab's Apache mod_proxy and HAProxy pass the app's Server header on)."""
    return _unseen((APPLICATION, *QUIET_PROXIES), f"slices of exactly {size} bytes cut across events",
                   f"{' and '.join(QUIET_PROXIES)} name themselves in no header", "the same slices", server)


def _unseen_lumper(lumps: str, server: str | None) -> Culprit:
    """Lumps of a few events with no proxy in the headers: most likely HAProxy merging small writes (it
    names itself in no header; the lab's HAProxy 2.6 delivered 4 events every 240 ms until `option
    http-no-delay`), else the app writing a few events at a time."""
    return _unseen(("haproxy", APPLICATION), lumps,
                   "HAProxy merges small writes by default and names itself in no header", "lumps", server)


def _unseen(candidates: tuple[str, ...], what: str, unseen: str, sign: str, server: str | None) -> Culprit:
    """Undecided between `candidates` (most likely first) when the headers show no proxy but one that names
    itself in no header may stand in front: recording the app on its own port decides."""
    why = f"{what}, and the headers show no proxy; but {unseen}: recording the app directly decides"
    fixes = "; ".join(f"for {label(c)}: {_fix(c, 'buffering', server)}" for c in candidates)
    decide = (f"record the app on its own port (no proxy) and run `sse-inspect diff --by timing APP CLIENT`: "
              f"{sign} there are the app's, none are a proxy's; {fixes}")
    return Culprit(candidates[0], False, candidates, why, decide)


def _headers_with_body(held: Culprit, hops: Sequence[Hop]) -> Culprit:
    """Held headers when the body's holder is decided: the headers waited for that held body, so the
    same hop held them, and its fix for headers applies."""
    server = next((h.name for h in hops if h.kind == "server"), None)
    why = f"the headers came only with the first event, which {label(held.hop)} held: the body's cause held them"
    return Culprit(held.hop, True, (held.hop,), why, _fix(held.hop, "headers", server))


def _compression(between: list[str], server: str | None, what: str) -> Culprit:
    """The hops seen that compress, then the app's middleware (alone, decided, with no proxy seen)."""
    compressing = [h for h in between if CATALOGUE[h].compression]
    others = [h for h in between if h not in compressing]
    return _among([*compressing, APPLICATION, *others], "compression", what, between, server)


def _among(candidates: list[str], cause: str, what: str, between: list[str], server: str | None) -> Culprit:
    """The culprit among `candidates`, most likely first: decided when there is one (the application,
    with no proxy between it and the client), otherwise how to decide and each candidate's fix."""
    if candidates == [APPLICATION]:
        if between:
            seen = f"none of the hops seen ({', '.join(between)}) does this"
        else:
            seen = "the headers show no proxy" + (f" (only {server}, the app's own server)" if server else "")
        why = f"{what}, and {seen}: the app or its framework did it"
        fix = _fix(APPLICATION, cause, server)
        if cause == "compression" and not between:
            why += f" ({QUIET_COMPRESSORS} compress without naming themselves in any header: one in front looks "
            why += "the same)"
            quiet = QUIET_COMPRESSORS.replace(" and ", " or ")
            fix += f"; if {quiet} stands in front (they name themselves in no header), turn its compression off instead"
        return Culprit(APPLICATION, True, (APPLICATION,), why, fix)
    suspect = next(c for c in candidates if c != APPLICATION)
    why = f"{what}; recording both sides of {suspect} decides"
    fixes = "; ".join(f"for {label(c)}: {_fix(c, cause, server)}" for c in candidates)
    decide = f"record both sides of {suspect} and run `sse-inspect diff --by timing UPSTREAM CLIENT` to decide; {fixes}"
    return Culprit(candidates[0], False, tuple(candidates), why, decide)


def _timeout(f: Finding, seen: list[str]) -> Culprit | None:
    ev = f.evidence
    if not isinstance(ev, TimeoutCut):
        return None
    cause = "idle" if f.code == "idle-timeout-cut" else "total"
    limit = f"{ev.limit_s:g} s"
    matched = [h for h in ev.hops if h in seen]
    if len(matched) == 1:
        hop = matched[0]
        why = f"cut after {ev.seconds:.1f} s, the {limit} {cause} limit of {label(hop)}, which the headers show"
        return Culprit(hop, True, (hop,), why, _fix(hop, cause))
    candidates = tuple(matched or ev.hops)
    if not candidates:
        return None
    if not matched and cause == "total" and all(CATALOGUE[h].kind != "server" for h in candidates):
        return _unseen_total(ev, candidates, seen)
    shown = "the headers show" if matched else "none of them is in the headers"
    why = f"cut after {ev.seconds:.1f} s, near the {limit} {cause} limit of {' or '.join(map(label, candidates))} "
    why += f"({shown})"
    fixes = "; ".join(f"for {label(c)}: {_fix(c, cause)}" for c in candidates)
    return Culprit(candidates[0], False, candidates, why, f"{_GENERAL[cause]}; {fixes}")  # the general fix helps whichever it was


def _unseen_total(ev: TimeoutCut, unseen: tuple[str, ...], seen: list[str]) -> Culprit:
    """A cut while flowing near a platform's or proxy's duration limit (Vercel 10 s, Envoy 15 s, API
    Gateway 29 s) that no header shows: those name themselves in every response, so the app's own
    server or worker (a crash, a worker timeout) comes first, and the unseen hops after it."""
    candidates = (APPLICATION, *unseen)
    hops = " or ".join(map(label, unseen))
    shown = f"the headers show {', '.join(seen)}, not {hops}" if seen else f"no header shows {hops}"
    why = (f"cut after {ev.seconds:.1f} s while the stream flowed, near the {ev.limit_s:g} s total limit of {hops}, "
           f"but {shown}: the app's server or worker may have ended it")
    server = next((h for h in seen if CATALOGUE[h].kind == "server"), None)
    fixes = "; ".join(f"for {label(c)}: {_fix(c, 'total', server)}" for c in candidates)
    return Culprit(APPLICATION, False, candidates, why, f"{_GENERAL['total']}; {fixes}")


def _fix(hop: str, cause: str, server: str | None = None) -> str:
    """`hop`'s fix for `cause`, its own or the cause's general one; the application's names its server."""
    known = CATALOGUE[hop]
    held = known.buffering if known.buffers else known.compression  # a proxy sends held headers with its flush
    own = {"buffering": known.buffering, "compression": known.compression, "idle": known.idle,
           "total": known.total, "headers": None if hop == APPLICATION else held}.get(cause)  # fmt: skip
    fix = own or _GENERAL[cause]
    said = _SERVER_FIX.get((server, cause)) if hop == APPLICATION and server else None
    return f"{fix} {said}" if said else fix


def label(hop: str) -> str:
    """How a view names a hop: "the application" or the catalogue name."""
    return "the application" if hop == APPLICATION else hop


def hops_line(hops: Iterable[Hop]) -> str:
    """The hops as one line, nearest the client first: `nginx (Server: nginx/1.22.1) -> gunicorn (...)`,
    with "no proxy seen in the headers" when none stood between the app and the client."""
    hops = list(hops)
    line = " -> ".join(f"{h.name} ({h.header}: {_clip(h.value)})" for h in hops)
    if not any(h.kind != "server" for h in hops):
        line = f"{line}; no proxy seen in the headers" if line else "no proxy seen in the headers"
    return line


def _clip(value: str) -> str:
    return value if len(value) <= _SHOWN else value[:_SHOWN] + "…"


def culprit_line(c: Culprit) -> str:
    """The culprit as one sentence: "most likely: the application (why)" or "cannot tell: A or B (why)"."""
    if c.decided:
        return f"most likely: {label(c.hop)} ({c.why})"
    return f"cannot tell: {' or '.join(map(label, c.candidates))} ({c.why})"
