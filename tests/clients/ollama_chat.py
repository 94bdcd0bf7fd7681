"""A chat client as the ollama library's README writes one: stream a chat, print the text as it comes.

    sse-inspect certify tests/data/formats/ollama-chat-text.jsonl -- python tests/clients/ollama_chat.py

Exit code as such a client has: 1 (a traceback) when the library raises, 0 otherwise, whatever the stream.
"""

import os

from ollama import Client

client = Client(host=os.environ["SSE_INSPECT_BASE_URL"])
for part in client.chat(model="llama3.2", messages=[{"role": "user", "content": "Why is the sky blue?"}], stream=True):
    print(part.message.content or "", end="", flush=True)
print()
