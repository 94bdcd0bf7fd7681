"""A messages client as the anthropic SDK's README writes one: `messages.stream`, the text as it comes
from `text_stream`, then the tool calls of the final message (a line each, as `sse-inspect text`
writes them).

    sse-inspect certify captures/anthropic-text-then-tooluse.jsonl -- python tests/clients/anthropic_sdk.py

Exit code as such a client has: 1 (a traceback) when the SDK raises, 0 otherwise.
"""

import json
import os

from anthropic import Anthropic

# max_retries=0: a replay answers every request the same, so a retry would only wait
client = Anthropic(base_url=os.environ["SSE_INSPECT_BASE_URL"], api_key="sk-ant-certify", max_retries=0)
with client.messages.stream(
    model="claude-sonnet-4-20250514",
    max_tokens=1024,
    messages=[{"role": "user", "content": "What is the weather in Paris?"}],
) as stream:
    for text in stream.text_stream:
        print(text, end="", flush=True)
    message = stream.get_final_message()
print()
for block in message.content:
    if block.type == "tool_use":
        print(f"[tool call] {block.name} {json.dumps(block.input)}")
