// The hop lab's Express app (tests/hop_lab.py): reads an OpenAI-style upstream (LLM_URL) and
// streams each content delta on as `data: <delta>\n\n`, then forwards `data: [DONE]`, the way the
// tutorials write it: headers first with res.flushHeaders(), one res.write() per delta, behind the
// `compression` middleware (app.use(compression()), its defaults).
//
//   POST /chat/write  one write per delta: compression holds them (the zlib stream is flushed only
//                     when its buffer fills, or at the end)
//   POST /chat/flush  the same with res.flush() after each write: the middleware's fix
//
// Run: node app.js PORT
"use strict";
const express = require("express");
const compression = require("compression");

const LLM_URL = process.env.LLM_URL || "http://127.0.0.1:9/v1/chat/completions";
const app = express();
app.use(compression());

// Yields each content delta of the upstream's stream as it arrives, then "[DONE]" when it came.
async function* deltas() {
  const payload = { model: "lab-model", messages: [{ role: "user", content: "Count." }], stream: true };
  const upstream = await fetch(LLM_URL, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(payload),
  });
  const decoder = new TextDecoder();
  let pending = "";
  for await (const bytes of upstream.body) {
    pending += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, end).replace(/\r$/, "");
      pending = pending.slice(end + 1);
      if (!line.startsWith("data: ")) continue;
      const data = line.slice(6);
      if (data.trim() === "[DONE]") {
        yield "[DONE]";
        return;
      }
      const delta = JSON.parse(data).choices[0].delta.content || "";
      if (delta) yield delta;
    }
  }
}

function stream(flush) {
  return async (req, res) => {
    res.setHeader("Content-Type", "text/event-stream");
    res.setHeader("Cache-Control", "no-cache");
    res.flushHeaders();
    for await (const delta of deltas()) {
      res.write(`data: ${delta}\n\n`);
      if (flush) res.flush();
    }
    res.end();
  };
}

app.post("/chat/write", stream(false));
app.post("/chat/flush", stream(true));

app.listen(Number(process.argv[2]), "127.0.0.1");
