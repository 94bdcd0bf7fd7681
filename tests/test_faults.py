"""Fault specs (issue 20's grammar): each form parses to its fault, `str` writes it back in the canonical
form, and a bad spec is one line saying what is wrong."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_inspect._errors import FaultSpecError
from sse_inspect._faults import (
    FAULT_FORMS,
    Cut,
    FaultSet,
    InbandError,
    Keepalive,
    NoEndMarker,
    Share,
    Slow,
    Stall,
    Status,
    parse_fault,
)


@pytest.mark.parametrize(
    ("spec", "fault"),
    [
        ("cut:event=5", Cut("event", 5)),
        ("cut:event=0,reset", Cut("event", 0, reset=True)),
        ("CUT:byte=1234", Cut("byte", 1234)),
        ("cut:reset,byte=7", Cut("byte", 7, reset=True)),
        ("cut:time=2.5", Cut("time", 2.5)),
        ("cut:time=500ms", Cut("time", 0.5)),
        ("stall:after-event=3,for=30s", Stall(3, 30.0)),
        ("stall:for=1m,after-event=0", Stall(0, 60.0)),
        ("no-end-marker", NoEndMarker()),
        ("error:after-event=4", InbandError(4)),
        ("keepalive:every=15s", Keepalive(15.0)),
        ("keepalive:every=15,text=OPENROUTER PROCESSING", Keepalive(15.0, "OPENROUTER PROCESSING")),
        ("slow:bytes-per-s=200", Slow(200)),
        ("status:429,retry-after=2", Status(429, 2.0)),
        ("status:529", Status(529)),
        (" status:503 ", Status(503)),
        ("cut:event=50%", Cut("event", Share(50))),
        ("cut:byte=12.5%,reset", Cut("byte", Share(12.5), reset=True)),
        ("stall:after-event=0%,for=1s", Stall(Share(0), 1.0)),
        ("error:after-event=100%", InbandError(Share(100))),
    ],
)
def test_each_form_parses_to_its_fault(spec: str, fault: object) -> None:
    assert parse_fault(spec) == fault
    assert parse_fault(str(fault)) == fault  # the canonical form reads back


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("cut", "cut: takes one of event=N, byte=N, time=S"),
        ("cut:event=5,byte=3", "cut: takes one of"),
        ("cut:event=-1", "event= takes a whole number"),
        ("cut:event=2.5", "event= takes a whole number"),
        ("cut:time=soon", "time= takes a time such as 2.5s or 500ms"),
        ("cut:time=-1s", "time= takes a time"),
        ("cut:time=inf", "time= takes a time"),
        ("cut:event=1,reset=yes", "reset takes no value"),
        ("stall:after-event=3", "stall: needs for="),
        ("stall:after-event=3,for=1s,extra=1", "unknown argument extra"),
        ("no-end-marker:now", "unknown argument now"),
        ("keepalive:every=0", "every= takes a time above 0"),
        ("slow:bytes-per-s=0", "bytes-per-s= takes at least 1"),
        ("status:200", "status: takes an error code from 400 to 599"),
        ("status:abc", "status: takes an error code"),
        ("status:429,retry-after=x", "retry-after= takes a time"),
        ("error:after-event=1,after-event=2", "a repeated argument"),
        ("error:,after-event=1", "an empty argument"),
        ("cut:event=101%", "event= takes a whole number or a share from 0% to 100%"),
        ("cut:event=abc%", "a share from 0% to 100%"),
        ("cut:time=50%", "time= takes a time"),
        ("slow:bytes-per-s=50%", "bytes-per-s= takes a whole number"),
    ],
)
def test_a_bad_spec_says_what_is_wrong_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(FaultSpecError) as raised:
        parse_fault(spec)
    message = str(raised.value)
    assert says in message and "\n" not in message and repr(spec) in message
    assert raised.value.hint == f"forms: {FAULT_FORMS}"


def test_an_unknown_fault_lists_the_forms() -> None:
    with pytest.raises(FaultSpecError, match=r"unknown fault 'drop:1'; use one of: cut:event=N"):
        parse_fault("drop:1")


seconds = st.floats(min_value=0, max_value=1e9, allow_nan=False)
shares = st.builds(Share, st.floats(min_value=0, max_value=100))
faults = st.one_of(
    st.builds(Cut, st.just("event"), st.integers(0, 10**9) | shares, st.booleans()),
    st.builds(Cut, st.just("byte"), st.integers(0, 10**12) | shares, st.booleans()),
    st.builds(Cut, st.just("time"), seconds, st.booleans()),
    st.builds(Stall, st.integers(0, 10**6) | shares, seconds),
    st.just(NoEndMarker()),
    st.builds(InbandError, st.integers(0, 10**6) | shares),
    st.builds(Keepalive, st.floats(min_value=1e-3, max_value=1e6), st.text(st.characters(blacklist_characters="\r\n,=", blacklist_categories=("Cs",)), min_size=1).filter(lambda t: t == t.strip())),
    st.builds(Slow, st.integers(1, 10**9)),
    st.builds(Status, st.integers(400, 599), st.none() | seconds),
)


@given(faults)
def test_any_fault_is_written_as_a_spec_that_reads_back(fault: object) -> None:
    assert parse_fault(str(fault)) == fault


@given(st.floats(min_value=0, max_value=100), st.integers(0, 10**6))
def test_a_share_is_of_the_whole_rounded_down(percent: float, total: int) -> None:
    n = Share(percent).of(total)
    assert 0 <= n <= total
    assert n <= total * percent / 100 + 1e-6 < n + 1 + 1e-6


@pytest.mark.parametrize(
    ("specs", "says"),
    [
        (["status:429", "cut:event=1"], "status:429 replaces the whole stream: it takes no other fault (given: cut:event=1)"),
        (["cut:event=2", "cut:byte=1"], "one cut fault at most: cut:event=2 and cut:byte=1"),
        (["keepalive:every=1s", "keepalive:every=2s"], "one keepalive fault at most"),
        (["error:after-event=1", "error:after-event=2"], "one error fault at most"),
        (["slow:bytes-per-s=1", "slow:bytes-per-s=2"], "one slow fault at most"),
        (["cut:event=1", "bogus"], "unknown fault 'bogus'"),
    ],
)
def test_faults_that_cannot_go_together_are_one_line_errors(specs: list[str], says: str) -> None:
    with pytest.raises(FaultSpecError) as raised:
        FaultSet.parse(specs)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_a_fault_set_composes_and_says_its_specs() -> None:
    faults = FaultSet.parse(["stall:after-event=1,for=1s", "stall:after-event=3,for=2s", "cut:event=50%,reset",
                             "keepalive:every=15s", "no-end-marker", "error:after-event=4", Slow(100)])
    assert str(faults) == ("stall:after-event=1,for=1s stall:after-event=3,for=2s cut:event=50%,reset "
                           "keepalive:every=15s no-end-marker error:after-event=4 slow:bytes-per-s=100")
    assert faults.cut == Cut("event", Share(50), reset=True) and len(faults.stalls) == 2
    assert faults.no_end_marker and faults.error == InbandError(4) and faults.slow == Slow(100)
    assert faults.status is None and faults.keepalive == Keepalive(15.0)
    assert FaultSet.parse([str(f) for f in faults.faults]) == faults
    assert not FaultSet() and FaultSet.parse([]) == FaultSet()
