// The Vercel AI SDK as an application uses it: `ai`'s streamText and generateText on a chat model
// of @ai-sdk/openai-compatible or of @ai-sdk/openai (`.chat(...)`, Chat Completions), the
// Responses model of @ai-sdk/openai (`.responses(...)`), @ai-sdk/anthropic's Messages model and
// @ai-sdk/google's Gemini model (`base`: the server's /v1beta URL for it).
//
//   node ai_sdk.mjs '[{"id": "a", "base": "http://127.0.0.1:8787/v1", "provider": "openai",
//                      "call": "stream", "model": "m", "prompt": "hi", "tools": {...}}, ...]'
//
// A spec: `base` (the server's /v1 URL), `provider` ("compatible", "openai", "responses",
// "anthropic" or "google"), `call` ("stream"
// or "generate"), `model`, `prompt` or `messages`, and optionally `tools` ({name: {description,
// parameters}}: JSON Schema, no execute, so a call ends the step), `toolChoice`,
// `maxOutputTokens`, `temperature`, `wireMessages` (OpenAI messages sent in place of the ones
// the SDK writes, by a fetch of its own: llama.cpp's small model calls a tool only after turns
// the SDK cannot write, calls without results; the answer is read by the SDK as always).
// One result per spec (common.mjs): for a stream every part of `fullStream` (the raw chunks
// apart, under `raw`), then what the result reports (text, tool calls, usage, finish reason,
// provider metadata, response id and model); for generateText the same and the response body.
// What differs between two servers by nature (request bodies, response headers, the request's
// timestamps) is left out.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, jsonSchema, streamText, tool } from "ai";

import { describeError, main } from "./common.mjs";

function wire(spec) {
  if (spec.wireMessages === undefined) {
    return undefined;
  }
  return (url, init) => {
    const body = JSON.parse(init.body);
    body.messages = spec.wireMessages;
    return fetch(url, { ...init, body: JSON.stringify(body) });
  };
}

function model(spec) {
  const settings = { baseURL: spec.base, apiKey: "sk-test", fetch: wire(spec) };
  if (spec.provider === "openai") {
    return createOpenAI(settings).chat(spec.model);
  }
  if (spec.provider === "responses") {
    return createOpenAI(settings).responses(spec.model);
  }
  if (spec.provider === "anthropic") {
    return createAnthropic(settings).messages(spec.model);
  }
  if (spec.provider === "google") {
    return createGoogleGenerativeAI(settings).languageModel(spec.model);
  }
  return createOpenAICompatible({ ...settings, name: "upstream", includeUsage: true }).chatModel(
    spec.model,
  );
}

function options(spec) {
  const out = { model: model(spec), maxRetries: 0 };
  if (spec.messages !== undefined) {
    out.messages = spec.messages;
  } else {
    out.prompt = spec.prompt ?? "hi";
  }
  if (spec.tools !== undefined) {
    out.tools = Object.fromEntries(
      Object.entries(spec.tools).map(([name, t]) => [
        name,
        tool({ description: t.description, inputSchema: jsonSchema(t.parameters) }),
      ]),
    );
  }
  for (const key of ["toolChoice", "maxOutputTokens", "temperature"]) {
    if (spec[key] !== undefined) {
      out[key] = spec[key];
    }
  }
  return out;
}

function response(r) {
  if (r == null) {
    return null;
  }
  // an answer without an id gets one the SDK makes up (generateId, prefix "aitxt-")
  const id = typeof r.id === "string" && r.id.startsWith("aitxt-") ? "aitxt-(made up)" : r.id;
  return { id, modelId: r.modelId };
}

function part(p) {
  switch (p.type) {
    case "start-step":
      return { type: p.type, warnings: p.warnings };
    case "finish-step":
      return {
        type: p.type,
        finishReason: p.finishReason,
        rawFinishReason: p.rawFinishReason,
        usage: p.usage,
        providerMetadata: p.providerMetadata,
        response: response(p.response),
      };
    case "error":
      return { type: p.type, error: describeError(p.error) };
    case "tool-error":
      return { ...p, error: describeError(p.error) };
    default:
      return p;
  }
}

async function settled(promise) {
  try {
    return { value: await promise };
  } catch (error) {
    return { error: describeError(error) };
  }
}

async function stream(spec) {
  const result = streamText({ ...options(spec), includeRawChunks: true, onError: () => {} });
  const parts = [];
  const raw = [];
  for await (const p of result.fullStream) {
    if (p.type === "raw") {
      raw.push(p.rawValue);
    } else {
      parts.push(part(p));
    }
  }
  const out = { parts, raw };
  for (const key of ["text", "toolCalls", "usage", "finishReason", "rawFinishReason"]) {
    out[key] = await settled(result[key]);
  }
  out.providerMetadata = await settled(result.providerMetadata);
  const r = await settled(result.response);
  out.response = r.error ? r : { value: response(r.value) };
  return out;
}

async function generate(spec) {
  const result = await generateText(options(spec));
  return {
    content: result.content.map(part),
    text: result.text,
    toolCalls: result.toolCalls,
    usage: result.usage,
    finishReason: result.finishReason,
    rawFinishReason: result.rawFinishReason,
    providerMetadata: result.providerMetadata,
    response: { ...response(result.response), body: result.response.body },
  };
}

await main((spec) => (spec.call === "generate" ? generate(spec) : stream(spec)));
