"""botocore's own `bedrock-runtime` client reads our replays of the Bedrock fixtures, at every cut.

A real client (`converse_stream`, `invoke_model_with_response_stream`) pointed at the replay server (in
process, on loopback): the events it yields rebuild, through our dialect, the answer our dialect rebuilds
from the recorded body and the sidecar promises; the exception fixtures make it raise the modelled
exception (`EventStreamError`, its code the exception's type); the faults our dialects write (an in-band
exception message, an error answer) make it raise too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

botocore = pytest.importorskip("botocore")

import botocore.session  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError, EventStreamError  # noqa: E402

from sse_inspect import Capture, Chunk, End, load_capture, parse_rechunk_spec  # noqa: E402
from sse_inspect._eventstream import EventStreamFrameParser  # noqa: E402
from sse_inspect._rechunk import RECHUNK_MATRIX  # noqa: E402
from sse_inspect._events import Event  # noqa: E402
from sse_inspect.dialects import Answer, get_dialect  # noqa: E402
from sse_inspect.server import ReplayServerThread  # noqa: E402

from .helpers import ROOT  # noqa: E402

FORMATS = ROOT / "tests" / "data" / "formats"
BEDROCK = sorted(FORMATS.glob("bedrock-*.jsonl"))
CUTS = (*RECHUNK_MATRIX, "item")
"""The standard cuts, and per item (an event stream message a chunk)."""
MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def expect_of(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name.removesuffix(".jsonl") + ".expect.json").read_text(encoding="utf-8"))


def client(url: str) -> Any:
    """A real bedrock-runtime client for the replay at `url` (dummy keys: the server checks no signature;
    one attempt: a retried error answer would only repeat)."""
    config = Config(retries={"total_max_attempts": 1, "mode": "standard"})
    return botocore.session.get_session().create_client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=url, aws_access_key_id="x",
        aws_secret_access_key="x", config=config,
    )  # fmt: skip


def stream(url: str, dialect: str) -> Iterator[dict[str, Any]]:
    """The events botocore yields for a call of the fixture's operation."""
    bedrock = client(url)
    if dialect == "bedrock-converse":
        response = bedrock.converse_stream(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
        return iter(response["stream"])
    response = bedrock.invoke_model_with_response_stream(modelId=MODEL, body=b"{}")
    assert response["contentType"] == "application/json"  # the recorded header, read by botocore
    return iter(response["body"])


def as_event(index: int, item: dict[str, Any]) -> Event:
    """What botocore yielded, back as our event: its one member's name and its members as JSON (a chunk's
    `bytes`, which botocore decodes, base64 again as on the wire)."""
    [(name, members)] = item.items()
    if name == "chunk":
        members = {"bytes": base64.b64encode(members["bytes"]).decode()}
    return Event(index=index, type=name, data=json.dumps(members))


def read_with_botocore(url: str, dialect: str) -> tuple[list[Event], EventStreamError | None]:
    events: list[Event] = []
    try:
        for item in stream(url, dialect):
            events.append(as_event(len(events), item))
    except EventStreamError as exc:
        return events, exc
    return events, None


def recorded(capture: Capture) -> list[Event]:
    """The events of the recorded body, as our framer reads them."""
    parser = EventStreamFrameParser()
    items = [x for c in capture.chunks for x in parser.feed(c.data, c.t)] + parser.close()
    return [x for x in items if isinstance(x, Event)]


def seen(answer: Answer) -> dict[str, Any]:
    return {
        "text": answer.text,
        "reasoning": answer.reasoning,
        "tool_calls": [{"name": call.name, "arguments": call.arguments} for call in answer.tool_calls],
        "finish_reason": answer.finish_reason,
        "complete": answer.complete,
        "errors": [error.message for error in answer.errors],
    }


@pytest.mark.parametrize("spec", CUTS)
@pytest.mark.parametrize("path", BEDROCK, ids=lambda p: p.name)
def test_botocore_reads_our_replay(path: Path, spec: str) -> None:
    capture, expect = load_capture(path), expect_of(path)
    dialect = expect["dialect"]
    with ReplayServerThread([capture], speed=None, rechunk_spec=parse_rechunk_spec(spec)) as server:
        events, raised = read_with_botocore(server.url, dialect)

    if expect["errors"]:  # the exception message: botocore raises the modelled exception on it
        assert raised is not None
        error = raised.response["Error"]
        exception = json.dumps({"message": error["Message"]})
        events.append(Event(index=len(events), type=error["Code"], data=exception))
        assert [error["Message"]] == expect["errors"]
    else:
        assert raised is None

    ours_events = recorded(capture)
    assert [e.type for e in events] == [e.type for e in ours_events]  # every message, in order
    ours = get_dialect(dialect).rebuild(ours_events)
    theirs = get_dialect(dialect).rebuild(events)
    assert seen(theirs) == seen(ours) == {key: expect[key] for key in seen(ours)}
    assert [(c.id, c.name) for c in theirs.tool_calls] == [(c.id, c.name) for c in ours.tool_calls]
    assert (theirs.usage, theirs.model, theirs.response_id) == (ours.usage, ours.model, ours.response_id)
    assert theirs.extra == ours.extra  # metrics, latency


@pytest.mark.parametrize("dialect", ["bedrock-converse", "bedrock-invoke"])
@pytest.mark.parametrize("n", [0, 2, 5])
def test_botocore_raises_on_our_in_band_fault(dialect: str, n: int) -> None:
    """`fault_error` after n messages of the text fixture: botocore yields the n, then raises."""
    capture = load_capture(FORMATS / f"{dialect}-text.jsonl")
    fault = get_dialect(dialect).fault_error(n)
    chunks = (*capture.chunks[:n], Chunk(capture.chunks[n].t, fault))
    faulty = Capture(chunks=chunks, request=capture.request, response=capture.response, end=End(kind="complete"))
    with ReplayServerThread([faulty], speed=None) as server:
        events, raised = read_with_botocore(server.url, dialect)
    assert len(events) == n and raised is not None
    assert raised.response["Error"]["Code"] == "modelStreamErrorException"
    assert raised.response["Error"]["Message"] == json.loads(EventStreamFrameParser().feed(fault)[0].data)["message"]


@pytest.mark.parametrize("dialect", ["bedrock-converse", "bedrock-invoke"])
@pytest.mark.parametrize("n", [0, 3])
@pytest.mark.parametrize("spec", ["original", "bytes:7"])
def test_botocore_raises_on_the_servers_error_fault(dialect: str, n: int, spec: str) -> None:
    """`serve --fault error:after-event=N` (the dialect detected from the capture): botocore yields N events,
    then raises the exception our dialect wrote."""
    capture = load_capture(FORMATS / f"{dialect}-tool-use.jsonl")
    faults = f"error:after-event={n}"
    with ReplayServerThread([capture], speed=None, faults=faults, rechunk_spec=parse_rechunk_spec(spec)) as server:
        events, raised = read_with_botocore(server.url, dialect)
    assert len(events) == n and raised is not None
    assert raised.response["Error"]["Code"] == "modelStreamErrorException"


@pytest.mark.parametrize("dialect", ["bedrock-converse", "bedrock-invoke"])
@pytest.mark.parametrize("status", [429, 500])
def test_botocore_raises_on_our_error_answer(dialect: str, status: int) -> None:
    capture = load_capture(FORMATS / f"{dialect}-text.jsonl")
    with ReplayServerThread([capture], speed=None, faults=f"status:{status}", dialect=dialect) as server:
        with pytest.raises(ClientError) as raised:
            stream(server.url, dialect)
    response = raised.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert response["Error"]["Message"] == json.loads(get_dialect(dialect).error_body(status)[1])["message"]
