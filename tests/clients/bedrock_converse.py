"""A ConverseStream client as AWS's boto3 examples write one (botocore's client, which boto3 wraps): print
the text deltas as they come.

    sse-inspect certify tests/data/formats/bedrock-converse-text.jsonl -- python tests/clients/bedrock_converse.py

Exit code as such a client has: 1 (a traceback) when botocore raises, 0 otherwise, whatever the stream.
"""

import os

import botocore.session
from botocore.config import Config

# one attempt: a replay answers every request the same, so a retry would only wait; dummy keys: the replay
# checks no signature
client = botocore.session.get_session().create_client(
    "bedrock-runtime", region_name="us-east-1", endpoint_url=os.environ["SSE_INSPECT_BASE_URL"],
    aws_access_key_id="certify", aws_secret_access_key="certify",
    config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
)
response = client.converse_stream(
    modelId="anthropic.claude-3-5-sonnet-20240620-v1:0",
    messages=[{"role": "user", "content": [{"text": "Tell me a story."}]}],
)
for event in response["stream"]:
    delta = event.get("contentBlockDelta", {}).get("delta", {})
    if "text" in delta:
        print(delta["text"], end="", flush=True)
print()
