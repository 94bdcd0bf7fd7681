"""`sse-inspect certify`: real clients (tests/clients/) run against replays under every cut, each table
checked for the reason each client passes or fails: the SDKs and a correct Node reader read any cut;
a client that decodes each network chunk alone dies exactly where a cut splits a multi-byte character;
a client that parses every `data:` line as JSON dies exactly where `[DONE]` reaches it.

Under faults, the SDKs and the Node reader fail loudly (or keep the answer whole); the JSON client
reports success on an error status; `--incomplete-marker` is the way out for a client that says so.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from sse_inspect import load_capture
from sse_inspect._faults import FAULT_MATRIX
from sse_inspect._rechunk import RECHUNK_MATRIX, parse_rechunk_spec, rechunk
from sse_inspect.cli import _certify, cli

from .helpers import CORPUS, INTERRUPTED, ROOT, running

CLIENTS = ROOT / "tests" / "clients"
OPENAI = str(ROOT / "captures" / "openai-chat-text.jsonl")
ANTHROPIC = str(ROOT / "captures" / "anthropic-text-then-tooluse.jsonl")
EMOJI = str(CORPUS / "ollama-openai-compat-reasoning-gptoss.sse")
"""A real OpenAI-compatible stream (ollama) whose answer holds a four-byte character (👋)."""
NODE = "/usr/bin/node"
PY = sys.executable

e2e = pytest.mark.e2e  # replay servers and client processes


def certify(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`sse-inspect certify ARGS` in process: exit code, stdout, stderr."""
    result = CliRunner(env=env).invoke(cli, ["certify", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def certify_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = certify("--json", "--jobs", "2", *args)
    assert code in (0, 1), err
    return code, json.loads(out)


def cuts(*specs: str) -> list[str]:
    """The options that run these cuts alone."""
    return ["--no-faults", *(a for s in specs for a in ("--rechunk", s))]


def verdicts(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["capture"], c["case"]): c for c in doc["cases"]}


def splits_a_character(capture: str, spec: str) -> bool:
    """Whether cutting the capture's body as `spec` says puts a cut inside a multi-byte character: a
    piece that is not UTF-8 on its own (the body as a whole is)."""
    pieces = rechunk(load_capture(capture).chunks, parse_rechunk_spec(spec))
    try:
        for piece in pieces:
            piece.data.decode()
    except UnicodeDecodeError:
        return True
    return False


# -- the cuts, on real clients ---------------------------------------------------------------------


@e2e
@pytest.mark.parametrize(
    ("client", "captures", "specs"),
    [
        # the SDKs cost 0.5-1.5 s a case to start: the cuts that break naive clients, where they break them
        ([PY, "openai_sdk.py"], [EMOJI], ["bytes:1", "utf8", "random:1"]),
        ([PY, "anthropic_sdk.py"], [ANTHROPIC], ["bytes:1", "event", "random:2"]),
        ([NODE, "fetch_reader.mjs"], [OPENAI, EMOJI], list(RECHUNK_MATRIX)),
    ],
    ids=["openai-sdk", "anthropic-sdk", "node-fetch"],
)
def test_correct_clients_pass_every_cut(client: list[str], captures: list[str], specs: list[str]) -> None:
    command = [client[0], str(CLIENTS / client[1])]
    code, doc = certify_json(*captures, *cuts(*specs), "--", *command)
    assert [(c["capture"], c["case"]) for c in doc["cases"]] == [(c, s) for c in captures for s in specs]
    failed = [(c["case"], c["detail"]) for c in doc["cases"] if not c["passed"]]
    assert failed == [] and code == 0 and doc["failed"] == 0


@e2e
def test_a_client_decoding_each_chunk_alone_fails_exactly_the_cuts_inside_a_character() -> None:
    code, doc = certify_json(OPENAI, EMOJI, "--no-faults", "--", PY, str(CLIENTS / "naive_split.py"))
    results = verdicts(doc)
    for capture in (OPENAI, EMOJI):
        splitting = {s for s in RECHUNK_MATRIX if splits_a_character(capture, s)}
        failed = {s for s in RECHUNK_MATRIX if not results[capture, s]["passed"]}
        assert failed == splitting
        for spec in failed:
            assert results[capture, spec]["exit_code"] == 1
            assert results[capture, spec]["detail"].startswith("exit 1: UnicodeDecodeError: 'utf-8' codec can't")
    # the ASCII stream has nothing to split; the emoji is split by `utf8` and `bytes:1` at least
    assert not any(splits_a_character(OPENAI, s) for s in RECHUNK_MATRIX)
    assert {"utf8", "bytes:1"} <= {s for s in RECHUNK_MATRIX if splits_a_character(EMOJI, s)}
    assert code == 1 and doc["failed"] == len({s for s in RECHUNK_MATRIX if splits_a_character(EMOJI, s)})


@e2e
def test_a_client_parsing_every_data_line_as_json_fails_where_done_reaches_it() -> None:
    """Every cut delivers the whole stream, `data: [DONE]` included: the client dies on it at every
    cut, after printing the whole answer (a stream without it passes: see the faults below)."""
    assert b"data: [DONE]" in b"".join(c.data for c in load_capture(OPENAI).chunks)
    code, doc = certify_json(OPENAI, "--no-faults", "--", PY, str(CLIENTS / "json_every_line.py"))
    assert code == 1 and doc["passed"] == 0 and len(doc["cases"]) == len(RECHUNK_MATRIX)
    for case in doc["cases"]:
        assert case["exit_code"] == 1
        assert case["detail"] == "exit 1: json.decoder.JSONDecodeError: Expecting value: line 1 column 2 (char 1)"
    with pytest.raises(json.JSONDecodeError, match=r"Expecting value: line 1 column 2 \(char 1\)"):
        json.loads("[DONE]")  # the detail is json's own for the end marker


@e2e
def test_the_answer_compared_is_what_text_prints_and_a_difference_is_its_first_line(tmp_path: Path) -> None:
    """A client that gets the answer wrong fails with the first differing line; `{url}` and the
    environment variables reach it."""
    script = tmp_path / "client.py"
    script.write_text(
        "import os, sys, httpx\n"
        "assert sys.argv[1] == os.environ['SSE_INSPECT_URL'] and sys.argv[2] == os.environ['SSE_INSPECT_BASE_URL']\n"
        "assert sys.argv[1] == sys.argv[2] + '/v1/chat/completions', sys.argv\n"
        "assert os.environ['SSE_INSPECT_CASE'] == 'line'\n"
        "httpx.post(sys.argv[1])\n"
        "print('The capital of the UK is Paris.')\n"
    )
    code, doc = certify_json(OPENAI, *cuts("line"), "--", PY, str(script), "{url}", "{base_url}")
    (case,) = doc["cases"]
    assert code == 1 and not case["passed"] and case["exit_code"] == 0
    assert case["detail"] == "line 1: expected '…tal of the UK is London.', got '…ital of the UK is Paris.'"
    code, _, _ = certify(OPENAI, *cuts("line"), "--", PY, "-c", "print('The capital of the UK is London.')")
    assert code == 0  # the same answer (print's newline is the one `text` ends with)


# -- the output ------------------------------------------------------------------------------------


@e2e
def test_json_shape() -> None:
    code, doc = certify_json(OPENAI, EMOJI, *cuts("line", "utf8"), "--", PY, str(CLIENTS / "naive_split.py"))
    assert set(doc) == {"captures", "command", "cases", "passed", "failed"}
    assert doc["captures"] == [OPENAI, EMOJI] and doc["command"] == [PY, str(CLIENTS / "naive_split.py")]
    assert doc["passed"] + doc["failed"] == len(doc["cases"]) == 4
    assert doc["failed"] == sum(not c["passed"] for c in doc["cases"]) == 1
    for case in doc["cases"]:
        assert set(case) == {"capture", "case", "kind", "passed", "exit_code", "detail", "seconds"}
        assert case["kind"] == "cut" and isinstance(case["exit_code"], int) and case["seconds"] > 0


@e2e
@pytest.mark.parametrize("columns", [60, 120])
def test_the_table_fits_the_terminal_and_says_how_many_passed(columns: int) -> None:
    code, out, err = certify("--jobs", "2", OPENAI, EMOJI, *cuts("line", "utf8", "bytes:1"), "--", PY,
                             str(CLIENTS / "naive_split.py"), env={"COLUMNS": str(columns)})  # fmt: skip
    lines = out.splitlines()
    assert code == 1 and lines[-1] == "4 of 6 cases passed"
    assert max(cell_len(line) for line in lines) <= columns
    rows = [line.split() for line in lines]
    if columns < _certify.WIDE:  # each capture's name on a line of its own, over its cases
        assert rows[0] == ["case", "kind", "result", "detail"]
        assert [r[0] for r in rows if r[0].endswith((".jsonl", ".sse"))] == [Path(OPENAI).name, Path(EMOJI).name]
    else:  # a column, its name on its first case only
        assert rows[0] == ["capture", "case", "kind", "result", "detail"]
        assert [r[0] for r in rows if r[0].endswith((".jsonl", ".sse"))] == [Path(OPENAI).name, Path(EMOJI).name]
        rows = [r[1:] if r[0].endswith((".jsonl", ".sse")) else r for r in rows]
    assert [r[:3] for r in rows if r[:1] in (["line"], ["utf8"], ["bytes:1"])] == [
        ["line", "cut", "PASS"], ["utf8", "cut", "PASS"], ["bytes:1", "cut", "PASS"],
        ["line", "cut", "PASS"], ["utf8", "cut", "FAIL"], ["bytes:1", "cut", "FAIL"],
    ]  # fmt: skip
    assert out.count("UnicodeDecodeError") == 2
    assert err.count("\n") == 6 and "[6/6]" in err  # progress off a terminal: a line a case


# -- bad input, exit codes, timeouts, Ctrl-C -------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([OPENAI, "--rechunk", "bytes:0", "--", PY], "bad rechunk spec 'bytes:0'"),
        ([OPENAI, "--fault", "cut:nowhere=1", "--", PY], "bad fault spec 'cut:nowhere=1'"),
        ([OPENAI, "--", "no-such-client-here"], "command not found: no-such-client-here"),
        ([OPENAI, "--", "./no/such/client"], "command not found: ./no/such/client"),
        ([OPENAI], "no command"),
        ([OPENAI, "--no-cuts", "--no-faults", "--", PY], "no cases"),
        (["no-such-capture.jsonl", "--", PY], "no-such-capture.jsonl"),
    ],
    ids=["bad-cut", "bad-fault", "not-on-path", "not-a-file", "no-command", "no-cases", "no-capture"],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    code, out, err = certify(*args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err, err


def _gone(pid: int) -> bool:
    """Whether process `pid` is dead (a zombie nobody reaps counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


@e2e
def test_a_case_that_times_out_fails_and_its_process_group_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    # the client's own child (a shell's background job) must die with it
    command = ["/bin/sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"]
    code, doc = certify_json(OPENAI, *cuts("line"), "--timeout", "1", "--", *command)
    (case,) = doc["cases"]
    assert code == 1 and not case["passed"] and case["exit_code"] is None
    assert case["detail"] == "timed out after 1 s"
    assert _gone(int(pidfile.read_text()))


@e2e
def test_ctrl_c_kills_the_clients_and_exits_130(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    argv = [PY, "-m", "sse_inspect", "certify", OPENAI, *cuts("line"), "--", "/bin/sh", "-c",
            f"sleep 60 & echo $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait"]  # fmt: skip
    with running(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + 60
        while not pidfile.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pidfile.exists(), "the client started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode in INTERRUPTED
    assert err.decode().splitlines()[-1:] == ["interrupted"] and b"Traceback" not in err
    assert _gone(int(pidfile.read_text()))


# -- the rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "code", "out", "marker", "passed", "detail"),
    [
        ("cut", 0, "a\nb\n", None, True, ""),
        ("cut", 0, "a\nb", None, True, ""),  # one newline less
        ("cut", 0, "a\nb\n\n", None, True, ""),  # one more
        ("cut", 0, "a\nc\n", None, False, "line 2: expected 'b', got 'c'"),
        ("cut", 0, "a\n", None, False, "line 2: expected 'b', got nothing"),
        ("cut", 1, "a\nb\n", None, False, "exit 1: boom"),
        ("cut", -9, "", None, False, "killed by SIGKILL: boom"),
        ("cut", None, "", None, False, "timed out after 5 s"),
        ("fault", 1, "a\n", None, True, "exit 1: boom"),
        ("fault", 0, "a\nb\n", None, True, "answer whole"),
        ("fault", 0, "a\n[partial]\n", "[partial]", True, "marked incomplete"),
        ("fault", 0, "a\n[partial]\n", None, False, "exit 0, partial answer: line 2: expected 'b', got '[partial]'"),
        ("fault", 0, "a\n", "[partial]", False, "exit 0, partial answer: line 2: expected 'b', got nothing"),
        ("fault", None, "", None, False, "timed out after 5 s"),
    ],
)
def test_the_rules(kind: str, code: int | None, out: str, marker: str | None, passed: bool, detail: str) -> None:
    assert _certify.judge(kind, code, out, "trace\nboom\n", "a\nb\n", marker=marker, timeout=5) == (passed, detail)


def test_a_long_line_is_shown_around_its_difference() -> None:
    expected = "x" * 100 + "London" + "y" * 100
    detail = _certify.judge("cut", 0, expected.replace("London", "Paris!"), "", expected, marker=None, timeout=1)[1]
    assert detail == f"line 1: expected '…{'x' * 8}London{'y' * 10}…', got '…{'x' * 8}Paris!{'y' * 10}…'"


# -- faults ----------------------------------------------------------------------------------------

BENIGN = ("keepalive:every=50ms", "stall:after-event=50%,for=1s")
"""Faults after which the whole answer still comes (keep-alive comments; a second of silence)."""
CUTS = ("cut:event=50%", "cut:event=50%,reset", "cut:byte=50%")
"""Faults that end the connection mid-body: every HTTP/1.1 client sees the chunked body unfinished."""


def fault_verdicts(capture: str, *args: str) -> tuple[int, dict[str, tuple[bool, str]]]:
    code, doc = certify_json(capture, "--no-cuts", *args)
    assert {c["kind"] for c in doc["cases"]} == {"fault"}
    return code, {c["case"]: (c["passed"], c["detail"]) for c in doc["cases"]}


@e2e
@pytest.mark.parametrize(
    ("client", "capture", "faults"),
    [
        # a fault of each kind but the benign ones (the Node reader and the JSON client show those)
        ([PY, "openai_sdk.py"], OPENAI, ("cut:event=50%,reset", "error:after-event=50%", "no-end-marker",
                                         "status:500")),
        ([PY, "anthropic_sdk.py"], ANTHROPIC, ("cut:event=50%", "error:after-event=50%", "no-end-marker",
                                               "status:429,retry-after=1")),
    ],
    ids=["openai-sdk", "anthropic-sdk"],
)  # fmt: skip
def test_the_sdks_fail_loudly_on_every_fault_or_keep_the_answer_whole(client: list[str], capture: str,
                                                                      faults: tuple[str, ...]) -> None:  # fmt: skip
    """Cuts are connection errors (the chunked body unfinished), the in-band error and the statuses are
    the SDK's own errors; without the end marker, with keep-alives or a stall, the answer is whole.
    (Neither SDK notices a missing end marker: the answer is whole, so that is no failure here.)"""
    code, got = fault_verdicts(capture, *[a for f in faults for a in ("--fault", f)], "--", client[0],
                               str(CLIENTS / client[1]))  # fmt: skip
    assert list(got) == list(faults) and code == 0
    for fault, (passed, detail) in got.items():
        assert passed, (fault, detail)
        if fault in (*BENIGN, "no-end-marker"):
            assert detail == "answer whole", (fault, detail)
        elif fault.startswith("status:429"):
            assert detail.startswith("exit 1: ") and "RateLimitError: Error code: 429" in detail
        elif fault.startswith("status:500"):
            assert detail.startswith("exit 1: ") and "InternalServerError: Error code: 500" in detail
        else:  # cuts, the in-band error
            assert detail.startswith("exit 1: "), (fault, detail)


@e2e
def test_the_node_reader_fails_loudly_on_every_fault_but_the_benign_ones() -> None:
    code, got = fault_verdicts(OPENAI, "--", NODE, str(CLIENTS / "fetch_reader.mjs"))
    assert list(got) == list(FAULT_MATRIX) and code == 0
    expected = {**{f: "exit 1: fetch_reader: terminated" for f in CUTS}, **{f: "answer whole" for f in BENIGN},
                "no-end-marker": "exit 1: fetch_reader: the stream ended without its end marker",
                "error:after-event=50%": "exit 1: fetch_reader: in-band error: ",
                "status:429,retry-after=1": "exit 1: fetch_reader: HTTP 429", "status:500": "exit 1: fetch_reader: HTTP 500"}  # fmt: skip
    assert {f: passed for f, (passed, _) in got.items()} == dict.fromkeys(expected, True)
    assert {f: detail[: len(expected[f])] for f, (_, detail) in got.items()} == expected


OLLAMA = str(ROOT / "tests" / "data" / "formats" / "ollama-chat-text.jsonl")
BEDROCK = str(ROOT / "tests" / "data" / "formats" / "bedrock-converse-text.jsonl")


@e2e
@pytest.mark.parametrize(
    ("client", "capture", "raises"),
    [
        ("ollama_chat.py", OLLAMA, {"cut:event=50%": "httpx.RemoteProtocolError", "cut:event=50%,reset": "httpx.ReadError",
                                    "cut:byte=50%": "httpx.RemoteProtocolError",
                                    "error:after-event=50%": "ollama._types.ResponseError",
                                    # the blank line: the library's json.loads of every line crashes on it
                                    "keepalive:every=50ms": "json.decoder.JSONDecodeError",
                                    "status:429,retry-after=1": "ollama._types.ResponseError",
                                    "status:500": "ollama._types.ResponseError"}),
        # botocore lets urllib3's ProtocolError out at a cut, not an exception of its own
        ("bedrock_converse.py", BEDROCK, {"cut:event=50%": "urllib3.exceptions.ProtocolError",
                                          "cut:event=50%,reset": "urllib3.exceptions.ProtocolError",
                                          "cut:byte=50%": "urllib3.exceptions.ProtocolError",
                                          "error:after-event=50%": "botocore.exceptions.EventStreamError",
                                          "status:429,retry-after=1": "botocore.exceptions.ClientError",
                                          "status:500": "botocore.exceptions.ClientError"}),
    ],
    ids=["ollama", "botocore"],
)  # fmt: skip
def test_the_ollama_library_and_botocore_under_every_fault(client: str, capture: str, raises: dict[str, str]) -> None:
    """Beyond SSE: the ollama library on an NDJSON replay and botocore on an AWS event stream replay, the whole
    fault matrix. Each raises where `raises` says (its last stderr line names the exception); neither notices
    a missing end marker (the answer is whole) nor a stall. An AWS event stream has no keep-alive: that case
    does not apply (SKIP), and the run still exits 0."""
    code, got = fault_verdicts(capture, "--", PY, str(CLIENTS / client))
    assert list(got) == list(FAULT_MATRIX) and code == 0
    for fault, (passed, detail) in got.items():
        if fault in raises:
            assert passed and detail.startswith(f"exit 1: {raises[fault]}"), (fault, detail)
        elif fault.startswith("keepalive:"):  # only botocore's capture gets here
            assert passed is None and "does not apply" in detail and "no keep-alive" in detail, detail
        else:
            assert fault in ("no-end-marker", *BENIGN) and (passed, detail) == (True, "answer whole"), (fault, detail)


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_a_fault_a_capture_cannot_have_is_skipped_not_failed(as_json: bool) -> None:
    """`keepalive:` on an AWS event stream: the case says why it does not apply, the command never runs
    (here it would fail: `false`), and the run exits 0."""
    code, out, _ = certify(*(["--json"] if as_json else []), BEDROCK, "--no-cuts", "--fault", "keepalive:every=1s",
                           "--", "false")  # fmt: skip
    assert code == 0, out
    if as_json:
        doc = json.loads(out)
        assert (doc["passed"], doc["failed"], doc["skipped"]) == (0, 0, 1)
        [case] = doc["cases"]
        assert case["passed"] is None and case["exit_code"] is None and case["detail"].startswith("does not apply: ")
    else:
        assert "SKIP" in out and "0 of 0 cases passed (1 did not apply)" in out


@e2e
def test_the_json_every_line_client_reports_success_on_an_error_status() -> None:
    """It never looks at the status: a 429 or 500's JSON body has no `data:` lines, so it prints an empty
    answer and exits 0, the failure certify is for. Elsewhere it fails loudly for its own reasons: an
    httpx error at a cut, `choices` missing from the in-band error, `[DONE]` (which still comes after
    keep-alives or a stall); without `[DONE]` its answer is whole."""
    code, got = fault_verdicts(OPENAI, "--", PY, str(CLIENTS / "json_every_line.py"))
    empty = "exit 0, partial answer: line 1: expected 'The capital of the UK is…', got ''"
    expected = {**{f: (True, "exit 1: httpx.") for f in CUTS},
                **{f: (True, "exit 1: json.decoder.JSONDecodeError") for f in BENIGN},
                "no-end-marker": (True, "answer whole"), "error:after-event=50%": (True, "exit 1: KeyError: 'choices'"),
                "status:429,retry-after=1": (False, empty), "status:500": (False, empty)}  # fmt: skip
    assert {f: (passed, detail[: len(expected[f][1])]) for f, (passed, detail) in got.items()} == expected
    assert code == 1


MARKING = """\
import json, os, httpx
text, done = "", False
with httpx.stream("POST", os.environ["SSE_INSPECT_URL"]) as r:
    for line in r.iter_lines():
        if line == "data: [DONE]":
            done = True
        elif line.startswith("data: "):
            text += "".join(c["delta"].get("content") or "" for c in json.loads(line[6:])["choices"])
print(text)
if not done:
    print("[incomplete]")
"""
"""A client that says, with a last line, when it saw no end marker (and ignores the status)."""


@e2e
@pytest.mark.parametrize("marker", ["[incomplete]", None], ids=["announced", "unannounced"])
def test_an_incomplete_marker_passes_a_fault_when_the_command_announces_it(marker: str | None) -> None:
    faults = ["--fault", "no-end-marker", "--fault", "status:500", "--fault", "cut:byte=50%"]
    code, got = fault_verdicts(OPENAI, *faults, *(["--incomplete-marker", marker] if marker else []),
                               "--", PY, "-c", MARKING)  # fmt: skip
    assert got["cut:byte=50%"][0] and got["cut:byte=50%"][1].startswith("exit 1: httpx.RemoteProtocolError")
    if marker:
        assert got["no-end-marker"] == got["status:500"] == (True, "marked incomplete") and code == 0
    else:  # an extra line on a whole answer; an empty answer
        assert got["no-end-marker"] == (False, "exit 0, partial answer: line 2: expected nothing, got '[incomplete]'")
        assert got["status:500"] == (False, "exit 0, partial answer: line 1: expected 'The capital of the UK is…', got ''")
        assert code == 1


@e2e
def test_the_matrices_and_what_replaces_them() -> None:
    node = ["--", NODE, str(CLIENTS / "fetch_reader.mjs")]
    _, doc = certify_json(OPENAI, *node)
    assert [(c["kind"], c["case"]) for c in doc["cases"]] == [
        *(("cut", s) for s in RECHUNK_MATRIX), *(("fault", f) for f in FAULT_MATRIX)]  # fmt: skip
    _, doc = certify_json(OPENAI, "--rechunk", "utf8", "--fault", "status:500", *node)
    assert [(c["kind"], c["case"]) for c in doc["cases"]] == [("cut", "utf8"), ("fault", "status:500")]
    # faults that compose make one case
    _, doc = certify_json(OPENAI, "--no-cuts", "--fault", " stall:after-event=2,for=0.2s  keepalive:every=50ms", *node)
    assert [(c["case"], c["passed"], c["detail"]) for c in doc["cases"]] == [
        ("stall:after-event=2,for=0.2s keepalive:every=50ms", True, "answer whole")]  # fmt: skip


@pytest.mark.parametrize("spec", ["status:500 cut:event=1", "cut:event=1 cut:byte=2", "cut:event=150%", " "])
def test_faults_that_cannot_be_are_one_line(spec: str) -> None:
    code, out, err = certify(OPENAI, "--fault", spec, "--", PY)
    assert code == 2 and out == "" and err.count("\n") == 1 and "fault" in err, err
