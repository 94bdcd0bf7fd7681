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
    InbandError,
    Keepalive,
    NoEndMarker,
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
faults = st.one_of(
    st.builds(Cut, st.just("event"), st.integers(0, 10**9), st.booleans()),
    st.builds(Cut, st.just("byte"), st.integers(0, 10**12), st.booleans()),
    st.builds(Cut, st.just("time"), seconds, st.booleans()),
    st.builds(Stall, st.integers(0, 10**6), seconds),
    st.just(NoEndMarker()),
    st.builds(InbandError, st.integers(0, 10**6)),
    st.builds(Keepalive, st.floats(min_value=1e-3, max_value=1e6), st.text(st.characters(blacklist_characters="\r\n,=", blacklist_categories=("Cs",)), min_size=1).filter(lambda t: t == t.strip())),
    st.builds(Slow, st.integers(1, 10**9)),
    st.builds(Status, st.integers(400, 599), st.none() | seconds),
)


@given(faults)
def test_any_fault_is_written_as_a_spec_that_reads_back(fault: object) -> None:
    assert parse_fault(str(fault)) == fault
