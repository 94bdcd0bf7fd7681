"""The faults a replay can add to a recorded stream: what real networks, hops and providers do to streams.

A fault spec names one fault; a replay takes several, which compose (and compose with a re-cut):

    cut:event=N[,reset]            the connection ends once N events have been sent (N = 0: before any)
    cut:byte=N[,reset]             ... once N body bytes have been sent (mid-event, mid-character)
    cut:time=S[,reset]             ... S seconds (recorded time) into the stream
    stall:after-event=N,for=S      S seconds of silence once N events have been sent
    no-end-marker                  the dialect's end-marker events are left out; the stream ends cleanly
    error:after-event=N            the provider's own in-band error once N events have been sent, then the end
    keepalive:every=S[,text=T]     a comment line (`: T`) every S seconds between events
    slow:bytes-per-s=N             the body dripped at N bytes a second
    status:CODE[,retry-after=S]    an error response (4xx or 5xx) instead of the stream

A count of events or bytes may be a share of the stream's, `P%` (`cut:event=50%`: once half its events
have been sent), so that one spec fits captures of any length. A cut closes the connection cleanly
(a FIN in the middle of the body) unless `reset` says a TCP reset. Durations are seconds, written
`2.5`, `2.5s`, `500ms` or `1m`. `str(fault)` is its spec, in this canonical form: parsing it gives the
same fault. A replay takes a `FaultSet`: faults that compose (a status replaces the whole stream, so it
takes no other; one cut, one keep-alive, one drip and one error at most). This module only reads and
writes specs; `_fault_plan` plays them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from ._errors import FaultSpecError

__all__ = [
    "FAULT_FORMS",
    "FAULT_MATRIX",
    "Cut",
    "Fault",
    "FaultSet",
    "InbandError",
    "Keepalive",
    "NoEndMarker",
    "Slow",
    "Share",
    "Stall",
    "Status",
    "parse_fault",
]

FAULT_FORMS = (
    "cut:event=N|byte=N|time=S[,reset], stall:after-event=N,for=S, no-end-marker, error:after-event=N, "
    "keepalive:every=S[,text=T], slow:bytes-per-s=N, status:CODE[,retry-after=S] (N may be P%)"
)
FAULT_MATRIX = (
    "cut:event=50%", "cut:event=50%,reset", "cut:byte=50%", "no-end-marker", "error:after-event=50%",
    "keepalive:every=50ms", "stall:after-event=50%,for=1s", "status:429,retry-after=1", "status:500",
)  # fmt: skip
"""The standard faults, each fast enough for a test suite (a second at most): a close and a reset halfway
through the events, a close mid-event, no end marker, the provider's in-band error, keep-alive comments,
a one-second stall, a rate limit and a server error. A correct client, on each, either fails loudly
(raises, exits non-zero) or gives the whole answer: never a part of it as if it were all (the pytest
plugin's `sse_fault` runs a test once per fault, `certify` runs a client under each)."""
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}


@dataclass(frozen=True, slots=True)
class Share:
    """A count given as a share of the stream's whole: `50%` of its events (or bytes)."""

    percent: float
    """From 0 to 100."""

    def of(self, total: int) -> int:
        """The count this share is of `total`, rounded down (50% of 5 events: 2)."""
        return min(total, math.floor(total * self.percent / 100 + 1e-9))

    def __str__(self) -> str:
        return f"{self.percent:g}%" if float(f"{self.percent:g}") == self.percent else f"{self.percent!r}%"


Count = int | Share
"""A number of events or bytes: as given, or a share of the stream's."""


def resolve(count: Count, total: int | None) -> int:
    """The number `count` stands for in a stream of `total` (events or bytes; a share needs the total)."""
    if isinstance(count, Share):
        if total is None:
            raise ValueError("a share needs the stream's total")
        return count.of(total)
    return count


@dataclass(frozen=True, slots=True)
class Cut:
    """The connection ends at a point of the stream: after `value` events, body bytes or recorded seconds."""

    at: str
    """"event", "byte" or "time"."""
    value: float | Share
    """Events or bytes (a whole number, or a `Share` of the stream's), or seconds of recorded time."""
    reset: bool = False
    """A TCP reset rather than a clean close."""

    def __str__(self) -> str:
        value = self.value
        text = str(value) if isinstance(value, Share) else _seconds(value) if self.at == "time" else str(int(value))
        return f"cut:{self.at}={text}" + (",reset" if self.reset else "")


@dataclass(frozen=True, slots=True)
class Stall:
    """`seconds` of silence once `after_event` events have been sent (a client's read timeout)."""

    after_event: Count
    seconds: float

    def __str__(self) -> str:
        return f"stall:after-event={self.after_event},for={_seconds(self.seconds)}"


@dataclass(frozen=True, slots=True)
class NoEndMarker:
    """The stream ends cleanly without its dialect's end marker (`[DONE]`, `message_stop`, ...)."""

    def __str__(self) -> str:
        return "no-end-marker"


@dataclass(frozen=True, slots=True)
class InbandError:
    """The provider's in-band error (in its dialect's own shape) once `after_event` events have been sent."""

    after_event: Count

    def __str__(self) -> str:
        return f"error:after-event={self.after_event}"


@dataclass(frozen=True, slots=True)
class Keepalive:
    """A comment line `: text` every `every` seconds of recorded time, between events."""

    every: float
    text: str = "keep-alive"

    def __str__(self) -> str:
        return f"keepalive:every={_seconds(self.every)}" + (f",text={self.text}" if self.text != "keep-alive" else "")


@dataclass(frozen=True, slots=True)
class Slow:
    """The body sent at `bytes_per_s` bytes a second, whatever its recorded pace."""

    bytes_per_s: int

    def __str__(self) -> str:
        return f"slow:bytes-per-s={self.bytes_per_s}"


@dataclass(frozen=True, slots=True)
class Status:
    """An error response with status `code` (and a Retry-After of `retry_after` seconds) instead of the stream."""

    code: int
    retry_after: float | None = None

    def __str__(self) -> str:
        return f"status:{self.code}" + (f",retry-after={_seconds(self.retry_after)}" if self.retry_after is not None else "")


Fault = Cut | Stall | NoEndMarker | InbandError | Keepalive | Slow | Status
F = TypeVar("F", Cut, Stall, NoEndMarker, InbandError, Keepalive, Slow, Status)
_ONCE = (Cut, NoEndMarker, InbandError, Keepalive, Slow, Status)
"""The faults a replay takes one of at most (stalls may be several)."""


@dataclass(frozen=True, slots=True)
class FaultSet:
    """The faults of one replay, checked to compose: `FaultSet.parse(["cut:event=5", "keepalive:every=15s"])`.

    Empty (`FaultSet()`, false) is a replay as recorded. `str()` is the specs, space-separated."""

    faults: tuple[Fault, ...] = ()

    @classmethod
    def parse(cls, specs: Iterable[str | Fault]) -> FaultSet:
        """The set of `specs` (texts or faults); a FaultSpecError for a bad spec or faults that cannot go together."""
        faults = tuple(parse_fault(s) if isinstance(s, str) else s for s in specs)
        status = [f for f in faults if isinstance(f, Status)]
        if status and len(faults) > 1:
            others = " ".join(str(f) for f in faults if not isinstance(f, Status))
            raise FaultSpecError(f"{status[0]} replaces the whole stream: it takes no other fault (given: {others})")
        for kind in _ONCE:
            same = [str(f) for f in faults if isinstance(f, kind)]
            if len(same) > 1:
                raise FaultSpecError(f"one {same[0].partition(':')[0]} fault at most: {' and '.join(same)}")
        return cls(faults)

    @classmethod
    def of(cls, faults: FaultSet | str | Fault | Iterable[str | Fault] | None) -> FaultSet:
        """The set of what an API takes as `faults`: one spec or fault, several, a set already made, or None."""
        if isinstance(faults, FaultSet):
            return faults
        if faults is None:
            return cls()
        return cls.parse([faults] if isinstance(faults, str | Fault) else faults)

    def __bool__(self) -> bool:
        return bool(self.faults)

    def __str__(self) -> str:
        return " ".join(map(str, self.faults))

    def _one(self, kind: type[F]) -> F | None:
        return next((f for f in self.faults if isinstance(f, kind)), None)

    @property
    def cut(self) -> Cut | None:
        return self._one(Cut)

    @property
    def stalls(self) -> tuple[Stall, ...]:
        return tuple(f for f in self.faults if isinstance(f, Stall))

    @property
    def no_end_marker(self) -> bool:
        return self._one(NoEndMarker) is not None

    @property
    def error(self) -> InbandError | None:
        return self._one(InbandError)

    @property
    def keepalive(self) -> Keepalive | None:
        return self._one(Keepalive)

    @property
    def slow(self) -> Slow | None:
        return self._one(Slow)

    @property
    def status(self) -> Status | None:
        return self._one(Status)


def parse_fault(text: str) -> Fault:
    """The fault a spec such as "cut:event=5,reset" names; a FaultSpecError saying what is wrong otherwise."""
    kind, sep, rest = text.strip().partition(":")
    kind = kind.lower()
    args = _arguments(text, rest) if sep else {}
    try:
        if kind == "cut":
            reset = args.pop("reset", None)
            if reset not in (None, ""):
                raise _bad(text, "reset takes no value")
            at, raw = next(iter(args.items())) if len(args) == 1 else ("", "")
            if at in ("event", "byte"):
                return Cut(at, _count(text, at, raw), reset is not None)
            if at == "time":
                return Cut("time", _duration(text, "time", raw), reset is not None)
            raise _bad(text, "cut: takes one of event=N, byte=N, time=S (and reset)")
        if kind == "stall":
            _only(text, args, "after-event", "for")
            return Stall(_count(text, "after-event", args["after-event"]), _duration(text, "for", args["for"]))
        if kind == "no-end-marker":
            _only(text, args)
            return NoEndMarker()
        if kind == "error":
            _only(text, args, "after-event")
            return InbandError(_count(text, "after-event", args["after-event"]))
        if kind == "keepalive":
            text_arg = args.pop("text", "keep-alive")
            _only(text, args, "every")
            every = _duration(text, "every", args["every"])
            if not every > 0:
                raise _bad(text, "every= takes a time above 0")
            if "\n" in text_arg or "\r" in text_arg:
                raise _bad(text, "text= takes one line")
            return Keepalive(every, text_arg)
        if kind == "slow":
            _only(text, args, "bytes-per-s")
            rate = _whole(text, "bytes-per-s", args["bytes-per-s"])
            if rate < 1:
                raise _bad(text, "bytes-per-s= takes at least 1")
            return Slow(rate)
        if kind == "status":
            code_text, _, more = rest.partition(",")
            retry = _arguments(text, more) if more else {}
            retry_after = retry.pop("retry-after", None)
            _only(text, retry)
            if not code_text.strip().isdigit() or not 400 <= int(code_text) <= 599:
                raise _bad(text, "status: takes an error code from 400 to 599")
            return Status(int(code_text), None if retry_after is None else _duration(text, "retry-after", retry_after))
    except KeyError as missing:
        raise _bad(text, f"{kind}: needs {missing.args[0]}=") from None
    raise FaultSpecError(f"unknown fault {text!r}; use one of: {FAULT_FORMS}", hint=f"forms: {FAULT_FORMS}")


def _arguments(spec: str, rest: str) -> dict[str, str]:
    """`a=1,b=2,flag` as {"a": "1", "b": "2", "flag": ""}: names lower-cased, each once."""
    found: dict[str, str] = {}
    for part in rest.split(","):
        name, _, value = part.strip().partition("=")
        name = name.strip().lower()
        if not name or name in found:
            raise _bad(spec, f"{'an empty' if not name else 'a repeated'} argument")
        found[name] = value.strip()
    return found


def _only(spec: str, args: dict[str, str], *names: str) -> None:
    """Every one of `names` given, and nothing else."""
    extra = sorted(set(args) - set(names))
    if extra:
        raise _bad(spec, f"unknown argument {extra[0]}")
    for name in names:
        if name not in args:
            raise KeyError(name)


def _count(spec: str, name: str, raw: str) -> Count:
    """A whole number, or a share `P%` from 0 to 100."""
    if not raw.endswith("%"):
        return _whole(spec, name, raw, " or a share such as 50%")
    try:
        percent = float(raw[:-1]) if raw[:-1].strip() == raw[:-1] else math.nan
    except ValueError:
        percent = math.nan
    if not 0 <= percent <= 100:  # (NaN fails too)
        raise _bad(spec, f"{name}= takes a whole number or a share from 0% to 100%")
    return Share(percent)


def _whole(spec: str, name: str, raw: str, other: str = "") -> int:
    if not raw.isdigit():
        raise _bad(spec, f"{name}= takes a whole number{other}")
    return int(raw)


def _duration(spec: str, name: str, raw: str) -> float:
    """Seconds from `2.5`, `2.5s`, `500ms` or `1m`."""
    number, unit = raw, "s"
    for suffix in ("ms", "s", "m"):  # ("ms" before "s")
        if raw.endswith(suffix):
            number, unit = raw[: -len(suffix)], suffix
            break
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0) or number.strip() != number or not number:
        raise _bad(spec, f"{name}= takes a time such as 2.5s or 500ms")
    return value


def _seconds(value: float) -> str:
    return f"{value:g}s" if float(f"{value:g}") == value else f"{value!r}s"


def _bad(spec: str, why: str) -> FaultSpecError:
    return FaultSpecError(f"bad fault spec {spec!r}: {why}", hint=f"forms: {FAULT_FORMS}")
