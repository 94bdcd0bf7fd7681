"""The tutorial's Flask proxy (the seed's story): it reads an OpenAI-style upstream with `requests`
and `iter_lines`, and streams the answer on as `data: <delta>` events, then forwards `data: [DONE]`.

One route per version, all alike but for where the `yield` is:

- `/chat/good`: yields each delta as it comes (the tutorial's fix);
- `/chat/bug-string`: collects the answer into one string and yields it once after the loop (the
  tutorial's "classic bug");
- `/chat/bug-list`: collects the events in a list and yields them after the loop;
- `/chat/json-good` and `/chat/json-bug-list`: the same with `{"content": <delta>}` JSON as data.

The upstream is `LLM_URL` (the environment's). Run by gunicorn (`tests.lab_apps.flask_proxy:app`)
or by Flask's dev server (`python -m tests.lab_apps.flask_proxy PORT`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import requests
from flask import Flask, Response

app = Flask(__name__)
LLM_URL = os.environ.get("LLM_URL", "http://127.0.0.1:9/v1/chat/completions")


def deltas() -> Iterator[str]:
    """The upstream's content deltas, each as soon as it arrives; "[DONE]" last when it was sent."""
    messages = [{"role": "user", "content": "Count."}]
    payload: dict[str, Any] = {"model": "lab-model", "messages": messages, "stream": True}
    with requests.post(LLM_URL, json=payload, stream=True, timeout=60) as r:
        for line in r.iter_lines():
            decoded = line.decode("utf-8")
            if not decoded.startswith("data: "):
                continue
            data = decoded[6:]
            if data.strip() == "[DONE]":
                yield "[DONE]"
                break
            delta = json.loads(data)["choices"][0]["delta"].get("content", "")
            if delta:
                yield delta


def text_event(delta: str) -> str:
    return f"data: {delta}\n\n"


def json_event(delta: str) -> str:
    return "data: [DONE]\n\n" if delta == "[DONE]" else f"data: {json.dumps({'content': delta})}\n\n"


@app.post("/chat/good")
def chat_good() -> Response:
    return Response((text_event(d) for d in deltas()), mimetype="text/event-stream")


@app.post("/chat/bug-string")
def chat_bug_string() -> Response:
    def generate() -> Iterator[str]:
        answer = ""
        done = False
        for delta in deltas():
            if delta == "[DONE]":
                done = True
            else:
                answer += delta
        yield text_event(answer)  # after the loop: the whole answer at once
        if done:
            yield text_event("[DONE]")

    return Response(generate(), mimetype="text/event-stream")


def collected(event: Callable[[str], str]) -> Iterator[str]:
    """The list bug: every event built in the loop, all yielded after it."""
    events = [event(d) for d in deltas()]
    yield from events  # after the loop: every event at once


@app.post("/chat/bug-list")
def chat_bug_list() -> Response:
    return Response(collected(text_event), mimetype="text/event-stream")


@app.post("/chat/json-good")
def chat_json_good() -> Response:
    return Response((json_event(d) for d in deltas()), mimetype="text/event-stream")


@app.post("/chat/json-bug-list")
def chat_json_bug_list() -> Response:
    return Response(collected(json_event), mimetype="text/event-stream")


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(sys.argv[1]), threaded=True)
