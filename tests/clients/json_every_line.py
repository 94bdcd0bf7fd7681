"""A hand-written chat client that parses every `data:` line as JSON: no `[DONE]` check.

It reads lines correctly (httpx decodes and splits them), and dies on the first line that is not
JSON: the `data: [DONE]` that ends every complete OpenAI stream (JSONDecodeError, exit 1). A stream
that never gets there, cut short or without its end marker, ends it with exit 0.
"""

import json
import os

import httpx

request = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
with httpx.stream("POST", os.environ["SSE_INSPECT_URL"], json=request, timeout=30) as response:
    for line in response.iter_lines():
        if line.startswith("data:"):
            chunk = json.loads(line[6:])
            for choice in chunk["choices"]:
                print(choice["delta"].get("content") or "", end="", flush=True)
print()
