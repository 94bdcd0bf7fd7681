"""A chat client as the openai SDK's README writes one: stream a completion, print the text as it comes.

    sse-inspect certify captures/openai-chat-text.jsonl -- python tests/clients/openai_sdk.py

Exit code as such a client has: 1 (a traceback) when the SDK raises, 0 otherwise, whatever the stream.
"""

import os

from openai import OpenAI

# max_retries=0: a replay answers every request the same, so a retry would only wait
client = OpenAI(base_url=os.environ["SSE_INSPECT_BASE_URL"] + "/v1", api_key="sk-certify", max_retries=0)
stream = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": "What is the capital of the UK?"}],
    stream=True,
)
for chunk in stream:
    for choice in chunk.choices:
        if choice.delta.content:
            print(choice.delta.content, end="", flush=True)
print()
