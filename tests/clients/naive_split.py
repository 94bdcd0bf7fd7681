"""A hand-written chat client with the most common bug: each network chunk decoded on its own.

`chunk.decode()` raises when a chunk ends inside a multi-byte character (UnicodeDecodeError: the
client dies with exit 1); events split across chunks are handled (the unfinished end is kept), and
it stops at `[DONE]`. It trusts the stream to end well: a stream cut short ends it with exit 0.
"""

import json
import os

import httpx


def main() -> None:
    request = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    with httpx.stream("POST", os.environ["SSE_INSPECT_URL"], json=request, timeout=30) as response:
        buf = ""
        for chunk in response.iter_bytes():
            buf += chunk.decode()
            *events, buf = buf.split("\n\n")
            for event in events:
                for line in event.split("\n"):
                    if not line.startswith("data: "):
                        continue
                    payload = line[len("data: "):]
                    if payload == "[DONE]":
                        return
                    for choice in json.loads(payload)["choices"]:
                        print(choice["delta"].get("content") or "", end="", flush=True)


main()
print()
