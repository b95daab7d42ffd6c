// eventsource-parser (npm), reading an LLM-Stream 1.0 response as a browser or Node client does:
// the response body decoded as UTF-8 text, piece by piece as it arrives, fed to the parser.
//
//   node llm_stream.mjs '[{"id": "a", "url": "http://127.0.0.1:8787/v1/chat/completions",
//                          "headers": {...}, "body": "{...}"}, ...]'
//
// One result per spec (common.mjs): the HTTP status, the response's Content-Type and
// X-Request-Id, every event as the parser gave it (`event`, `id`, `data` parsed as JSON when it
// is JSON), the number of comments, the parser's errors, the body itself when the response is
// not an event stream (an HTTP error), and `cut` when the body broke off (fetch's error).
import { createParser } from "eventsource-parser";

import { describeError, main } from "./common.mjs";

function parsed(data) {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

await main(async (spec) => {
  const res = await fetch(spec.url, {
    method: spec.method ?? "POST",
    headers: spec.headers ?? {},
    body: spec.body,
  });
  const contentType = res.headers.get("content-type");
  const out = {
    status: res.status,
    contentType,
    requestId: res.headers.get("x-request-id"),
    events: [],
    comments: 0,
    errors: [],
  };
  if (!(contentType ?? "").startsWith("text/event-stream")) {
    out.body = parsed(await res.text());
    return out;
  }
  const parser = createParser({
    onEvent: (e) =>
      out.events.push({ event: e.event ?? null, id: e.id ?? null, data: parsed(e.data) }),
    onComment: () => {
      out.comments += 1;
    },
    onError: (error) => out.errors.push(String(error)),
  });
  const decoder = new TextDecoder();
  try {
    for await (const piece of res.body) {
      parser.feed(decoder.decode(piece, { stream: true }));
    }
    parser.feed(decoder.decode());
  } catch (error) {
    out.cut = describeError(error); // the body ended before its framing said: what came stays
  }
  return out;
});
