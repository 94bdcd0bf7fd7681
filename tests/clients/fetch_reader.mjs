// A browser-style client on Node's global fetch: getReader(), a streaming TextDecoder and an SSE line
// parser as the WHATWG spec reads lines (CRLF, CR or LF; a CR at a chunk's end waits for the next).
// Prints the answer's text as it comes (OpenAI chat deltas, Anthropic text deltas), then its tool calls
// a line each (`[tool call] NAME ARGUMENTS`, as `sse-inspect text` writes them); exits 1 when
// the request or the stream fails, an in-band error arrives, or the stream ends without its end
// marker (`data: [DONE]`, `message_stop`).
//
//     sse-inspect certify captures/openai-chat-text.jsonl -- node tests/clients/fetch_reader.mjs

const url = process.env.SSE_INSPECT_URL;

let finished = false;
let printed = false;
const toolCalls = new Map(); // {name, args} by Anthropic content block or OpenAI call index, in order
let data = [];
let eventType = "";

function print(text) {
  process.stdout.write(text);
  printed ||= text !== "";
}

function onEvent(type, payload) {
  if (payload === "[DONE]") {
    finished = true;
    return;
  }
  const message = JSON.parse(payload);
  if (message.error || type === "error" || message.type === "error") {
    throw new Error(`in-band error: ${JSON.stringify(message.error ?? message)}`);
  }
  if (message.type === "message_stop") {
    finished = true;
  } else if (message.type === "content_block_start" && message.content_block.type === "tool_use") {
    toolCalls.set(`block ${message.index}`, { name: message.content_block.name, args: "" });
  } else if (message.type === "content_block_delta" && message.delta.type === "text_delta") {
    print(message.delta.text);
  } else if (message.type === "content_block_delta" && message.delta.type === "input_json_delta") {
    toolCalls.get(`block ${message.index}`).args += message.delta.partial_json;
  }
  for (const choice of message.choices ?? []) {
    if (choice.delta?.content) print(choice.delta.content);
    for (const call of choice.delta?.tool_calls ?? []) {
      const key = `call ${call.index}`;
      if (!toolCalls.has(key)) toolCalls.set(key, { name: "", args: "" });
      toolCalls.get(key).name += call.function?.name ?? "";
      toolCalls.get(key).args += call.function?.arguments ?? "";
    }
  }
}

function onLine(line) {
  if (line === "") {
    if (data.length) onEvent(eventType || "message", data.join("\n"));
    data = [];
    eventType = "";
    return;
  }
  if (line.startsWith(":")) return;
  const colon = line.indexOf(":");
  const field = colon < 0 ? line : line.slice(0, colon);
  let value = colon < 0 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  if (field === "data") data.push(value);
  else if (field === "event") eventType = value;
}

async function main() {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "Hi" }] }),
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
    let end;
    while ((end = /\r\n|\r|\n/.exec(buffer)) !== null) {
      if (end[0] === "\r" && end.index === buffer.length - 1 && !done) break; // maybe the CR of a CRLF
      onLine(buffer.slice(0, end.index));
      buffer = buffer.slice(end.index + end[0].length);
    }
    if (done) break;
  }
  const lines = [...toolCalls.values()].map((call) => `[tool call] ${call.name} ${call.args}\n`);
  process.stdout.write((printed ? "\n" : "") + lines.join(""));
  if (!finished) throw new Error("the stream ended without its end marker");
}

main().catch((error) => {
  console.error(`fetch_reader: ${error.message}${error.cause ? ` (${error.cause.message ?? error.cause})` : ""}`);
  process.exitCode = 1;
});
