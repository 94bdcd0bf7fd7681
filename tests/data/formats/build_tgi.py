"""Build the `tgi-*` fixtures of this folder: text-generation-inference `/generate_stream` (SSE), from its docs.

    python tests/data/formats/build_tgi.py     (deterministic: the same files every time)

No capture of a real TGI server is in the repository, so each stream is written as the router writes it,
from the shapes its documentation and source publish (the `sources` of each case):

- one event per token, `data:` with no space (axum's `Event::json_data`; the curl output in
  docs/source/basic_tutorials/visual_language_models.md), the `StreamResponse` of router/src/lib.rs in its
  field order: `index`, `token` {`id`, `text`, `logprob`, `special`}, `generated_text`, `details`, then
  a blank line;
- the last event with the whole `generated_text`, and `details` {`finish_reason`, `generated_tokens`,
  `seed`, `input_length`} when the request asked for them (null otherwise);
- an error as `data:{"error", "error_type"}` (`ErrorResponse`, `From<InferError> for Event`), then the end.

One event per chunk, 20-60 ms apart (seeded). The sidecar says what a client shows: the texts of the
tokens that are not special, joined; the finish reason of `details`; whether the stream was whole; its errors.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository, for a run as a script

from sse_inspect import End, Request, Response, capture_from_body, dump_capture

REPO = "https://github.com/huggingface/text-generation-inference/blob/main"
LIB = f"{REPO}/router/src/lib.rs (StreamResponse, StreamDetails, Token, ErrorResponse)"
SERVER = f"{REPO}/router/src/server.rs (generate_stream, From<InferError> for Event)"


class Stream:
    def __init__(self, name: str) -> None:
        self.rng = random.Random(name)
        self.t = 0.180  # validation, queue and prefill before the first token
        self.events: list[tuple[float, bytes]] = []
        self.index = 0
        self.text = ""
        self.finish_reason: str | None = None
        self.errors: list[str] = []
        self.complete = False

    def _event(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        self.events.append((round(self.t, 6), f"data:{data}\n\n".encode()))
        self.t += self.rng.uniform(0.020, 0.060)

    def token(self, text: str, *, special: bool = False, generated_text: str | None = None,
              details: dict[str, Any] | None = None, id: int | None = None) -> None:  # fmt: skip
        self.index += 1
        token_id = self.rng.randrange(100, 32000)
        token = {"id": token_id if id is None else id, "text": text, "logprob": round(-self.rng.expovariate(3), 7),
                 "special": special}  # fmt: skip
        self._event({"index": self.index, "token": token, "generated_text": generated_text, "details": details})
        if not special:
            self.text += text
        if generated_text is not None:
            self.complete = True
            if details:
                self.finish_reason = details["finish_reason"]

    def tokens(self, pieces: list[str], *, last: dict[str, Any] | None = None) -> None:
        """Each piece a token; the last one also carries the whole text (and `last`'s details)."""
        for piece in pieces[:-1]:
            self.token(piece)
        if last is None:
            self.token(pieces[-1])
        else:
            self.token(pieces[-1], generated_text="".join(pieces), details=last.get("details"))

    def error(self, message: str, error_type: str) -> None:
        self.errors.append(message)
        self._event({"error": message, "error_type": error_type})


def write(name: str, stream: Stream, request: dict[str, Any], sources: list[str]) -> None:
    source = "; ".join(sources)
    capture = capture_from_body(
        stream.events,
        request=Request(method="POST", url="http://127.0.0.1:8080/generate_stream",
                        headers=(("Host", "127.0.0.1:8080"), ("Content-Type", "application/json"),
                                 ("Accept", "text/event-stream")),
                        body=json.dumps(request)),
        response=Response(status=200, reason="OK",
                          headers=(("content-type", "text/event-stream"), ("cache-control", "no-cache"),
                                   ("x-compute-type", "1-nvidia-a10g"), ("x-accel-buffering", "no"),
                                   ("transfer-encoding", "chunked")),
                          t=0.005),
        end=End(kind="complete", t=round(stream.events[-1][0] + 0.001, 6)),
        recorder=f"built from {source} (tests/data/formats/build_tgi.py)",
    )  # fmt: skip
    (HERE / f"{name}.jsonl").write_text(dump_capture(capture), encoding="utf-8")
    expect = {
        "dialect": "tgi",
        "framing": "sse",
        "text": stream.text,
        "reasoning": "",
        "tool_calls": [],
        "finish_reason": stream.finish_reason,
        "complete": stream.complete and not stream.errors,
        "errors": stream.errors,
        "source": source,
    }
    (HERE / f"{name}.expect.json").write_text(json.dumps(expect, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def text() -> None:
    """The curl example of visual_language_models.md: 16 tokens, `details` not asked for (null on the last)."""
    s = Stream("tgi-text")
    s.tokens(["This", " is", " a", " picture", " of", " an", " anth", "rop", "omorph", "ic", " rabbit", " in", " a",
              " space", " suit", "."], last={"details": None})  # fmt: skip
    inputs = ("![](https://huggingface.co/datasets/huggingface/documentation-images/resolve/main/transformers/"
              "rabbit.png)What is this a picture of?\n\n")  # fmt: skip
    write("tgi-text", s, {"inputs": inputs, "parameters": {"max_new_tokens": 16, "seed": 42}},
          [f"{REPO}/docs/source/basic_tutorials/visual_language_models.md", LIB, SERVER])  # fmt: skip


def details() -> None:
    """The README's request with `details`: the answer, then the special `</s>` with `finish_reason` eos_token."""
    s = Stream("tgi-details")
    pieces = ["Deep", " learning", " is", " a", " subset", " of", " machine", " learning", " that", " uses",
              " neural", " networks", " with", " many", " layers", "."]  # fmt: skip
    s.tokens(pieces)
    done = {"finish_reason": "eos_token", "generated_tokens": len(pieces) + 1, "seed": None, "input_length": 6}
    s.token("</s>", special=True, generated_text="".join(pieces), details=done, id=2)  # Llama's eos
    write("tgi-details", s, {"inputs": "What is Deep Learning?", "parameters": {"max_new_tokens": 20, "details": True}},
          [f"{REPO}/README.md (generate_stream)", LIB, SERVER])  # fmt: skip


def error() -> None:
    """A failure during generation: three tokens, then the router's error event, and no last event."""
    s = Stream("tgi-error")
    for piece in ["Deep", " learning", " is"]:
        s.token(piece)
    s.error("Request failed during generation: Server error: CUDA out of memory. Tried to allocate 2.00 GiB",
            "generation")  # fmt: skip
    write("tgi-error", s, {"inputs": "What is Deep Learning?", "parameters": {"max_new_tokens": 20}},
          [f"{REPO}/router/src/infer/mod.rs (InferError, error_type)", LIB, SERVER])  # fmt: skip


CASES = (text, details, error)

if __name__ == "__main__":
    for case in CASES:
        case()
