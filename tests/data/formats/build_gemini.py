"""Build the Gemini streamed-JSON-array fixtures: `streamGenerateContent` without `alt=sse`.

    python tests/data/formats/build_gemini.py      (from the repository root; deterministic)

Without `alt=sse`, Gemini's `streamGenerateContent` answers `application/json` and writes one JSON array
piece by piece, an element per GenerateContentResponse (the same objects `alt=sse` sends as events):
https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent and the forum thread
https://discuss.ai.google.dev/t/please-update-rest-documentation-to-include-alt-sse-param/2963 (without
`alt=sse` the response is "not streamed" for a client that parses the body whole: the array closes at the
end). The whitespace between elements (`\\n,\\r\\n`) is a guess: no recording of that shape was at hand;
the framer takes any JSON whitespace there.
"""

from __future__ import annotations

import json
from pathlib import Path

from sse_inspect import dump_capture
from sse_inspect._capture import Capture, Chunk, End, Request, Response

HERE = Path(__file__).resolve().parent
URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent"
SOURCE = ("https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent (GenerateContentResponse); "
          "array framing without alt=sse: https://discuss.ai.google.dev/t/please-update-rest-documentation-to-include-"
          "alt-sse-param/2963; whitespace between elements guessed")  # fmt: skip


def response(text: str, *, finish: str | None = None, usage: dict[str, int] | None = None) -> dict[str, object]:
    candidate: dict[str, object] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    element: dict[str, object] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}
    if usage:
        element["usageMetadata"] = usage
    return element


def array_pieces(elements: list[dict[str, object]]) -> list[bytes]:
    """The array as Gemini writes it: `[` with the first element, then `,` before each next one, then `]`."""
    pieces = [("[" if i == 0 else "\n,\r\n") + json.dumps(e, indent=2) for i, e in enumerate(elements)]
    pieces[-1] += "\n]"
    return [p.encode() for p in pieces]


def write(name: str, pieces: list[bytes], expect: dict[str, object]) -> None:
    t0 = 0.42
    chunks = tuple(Chunk(round(t0 + 0.037 * i, 3), piece) for i, piece in enumerate(pieces))
    capture = Capture(
        chunks=chunks,
        request=Request(method="POST", url=URL, headers=(("Content-Type", "application/json"),),
                        body='{"contents": [{"parts": [{"text": "Name three primary colours."}]}]}'),
        response=Response(status=200, reason="OK", headers=(("Content-Type", "application/json; charset=UTF-8"),
                                                            ("Vary", "Origin")), t=0.41),
        end=End(kind="complete", t=round(chunks[-1].t + 0.002, 3)),  # type: ignore[operator]
        recorder=f"built from {SOURCE} by tests/data/formats/build_gemini.py",
    )
    (HERE / f"{name}.jsonl").write_text(dump_capture(capture, recorded_at=None), encoding="utf-8")
    (HERE / f"{name}.expect.json").write_text(json.dumps({**expect, "source": SOURCE}, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    words = ["Red", ", yellow", " and blue", "."]
    elements = [response(w) for w in words[:-1]]
    elements.append(response(words[-1], finish="STOP", usage={"promptTokenCount": 6, "candidatesTokenCount": 7,
                                                             "totalTokenCount": 13}))  # fmt: skip
    write("gemini-array-text", array_pieces(elements), {
        "dialect": "gemini", "framing": "json-array", "text": "".join(words), "reasoning": "", "tool_calls": [],
        "finish_reason": "STOP", "complete": True, "errors": [],
    })  # fmt: skip


if __name__ == "__main__":
    main()
