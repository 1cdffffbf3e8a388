// The official Anthropic client for Node against a running k3-serve (started
// by tests/serve/k3_serve_messages_test.sh on the tiny model with an API key,
// loopback only): /v1/messages and /v1/messages/count_tokens.
// Usage: node anthropic_client_checks.mjs BASE_URL API_KEY K3_TOKENIZE MODEL_DIR
import { execFileSync } from "node:child_process";
import Anthropic from "@anthropic-ai/sdk";
import Ajv from "ajv";
import { check, done, holds } from "./checks.mjs";

const [baseURL, apiKey, tokenizeTool, modelDir] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey, timeout: 120000, maxRetries: 0 });

const user = (content) => ({ role: "user", content });
const off = { thinking: { type: "disabled" } };
const textOf = (m) => m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
const thinkingOf = (m) => m.content.filter((b) => b.type === "thinking").map((b) => b.thinking).join("");

// The same conversation through /v1/chat/completions (plain HTTP, the key as a Bearer token).
async function chatCompletion(body) {
  const r = await fetch(`${baseURL}/v1/chat/completions`, {
    method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model: "k3-tiny", ...body }),
  });
  return r.json();
}

// Streams a request with the raw event iterator: the event names and the message they add up to.
async function rawStream(params) {
  const stream = await client.messages.create({ ...params, stream: true });
  const names = [];
  const blocks = [];
  let stop = null, usage = null;
  for await (const event of stream) {
    names.push(event.type);
    if (event.type === "content_block_start") blocks[event.index] = { ...event.content_block };
    if (event.type === "content_block_delta") {
      const b = blocks[event.index], d = event.delta;
      if (d.type === "text_delta") b.text += d.text;
      if (d.type === "thinking_delta") b.thinking += d.thinking;
      if (d.type === "signature_delta") b.signature = d.signature;
      if (d.type === "input_json_delta") b.partial = (b.partial ?? "") + d.partial_json;
    }
    if (event.type === "message_delta") { stop = event.delta.stop_reason; usage = event.usage; }
  }
  return { names, blocks, stop, usage };
}

// A plain message, non-streamed.
const base = { model: "k3-tiny", max_tokens: 10, messages: [user("Name three colours.")] };
const plain = await client.messages.create({ ...base, ...off });
check("message type", "message", plain.type);
check("message role", "assistant", plain.role);
check("message model", "k3-tiny", plain.model);
holds("message id", /^msg_/.test(plain.id));
check("max_tokens reached", "max_tokens", plain.stop_reason);
check("stop_sequence null", null, plain.stop_sequence);
check("output_tokens", 10, plain.usage.output_tokens);
holds("cache_read_input_tokens reported", typeof plain.usage.cache_read_input_tokens === "number");
check("thinking off: no thinking block", [], plain.content.filter((b) => b.type === "thinking"));

// Greedy: the same reply as /v1/chat/completions for the same conversation.
const cc = await chatCompletion({ ...base, chat_template_kwargs: { thinking: false } });
check("greedy text equals chat completions'", cc.choices[0].message.content, textOf(plain));
check("output_tokens equal completion_tokens", cc.usage.completion_tokens, plain.usage.output_tokens);
check("input tokens equal prompt_tokens", cc.usage.prompt_tokens,
  plain.usage.input_tokens + plain.usage.cache_read_input_tokens);

// Streamed (the SDK's MessageStream): the same message.
const stream = client.messages.stream({ ...base, ...off });
let textDeltas = "";
stream.on("text", (t) => { textDeltas += t; });
const fin = await stream.finalMessage();
check("streamed content equals non-streamed", plain.content, fin.content);
check("streamed text deltas", textOf(plain), textDeltas);
check("streamed stop_reason", plain.stop_reason, fin.stop_reason);
check("streamed output_tokens", plain.usage.output_tokens, fin.usage.output_tokens);

// The raw event sequence.
const raw = await rawStream({ ...base, ...off });
check("stream opens with message_start", "message_start", raw.names[0]);
check("stream ends with message_delta, message_stop", ["message_delta", "message_stop"], raw.names.slice(-2));
holds("content_block_start before its deltas", raw.names.indexOf("content_block_start") < raw.names.indexOf("content_block_delta"));
check("raw stream's text", textOf(plain), raw.blocks.filter((b) => b.type === "text").map((b) => b.text).join(""));

// Thinking on (adaptive: the server's default effort; enabled: effort from the budget): thinking blocks,
// streamed equal to non-streamed, and equal to chat completions' reasoning_content.
const think = { ...base, thinking: { type: "adaptive" } };
const thought = await client.messages.create(think);
holds("thinking on: a thinking block", thought.content[0]?.type === "thinking" && thinkingOf(thought).length > 0);
check("thinking block signature", "k3:unsigned", thought.content[0]?.signature);
const thoughtStream = await client.messages.stream(think).finalMessage();
check("thinking streamed equals non-streamed", thought.content, thoughtStream.content);
const ccThink = await chatCompletion({ ...base, chat_template_kwargs: { thinking: true } });
check("thinking equals chat completions' reasoning_content", ccThink.choices[0].message.reasoning_content, thinkingOf(thought));
const budget = await client.messages.create({ ...base, max_tokens: 1100, thinking: { type: "enabled", budget_tokens: 1024 } });
const ccLow = await chatCompletion({ ...base, max_tokens: 1100, reasoning_effort: "low" });
check("budget 1024 is effort low", ccLow.choices[0].message.reasoning_content, thinkingOf(budget));
check("budget 1024 text", ccLow.choices[0].message.content ?? "", textOf(budget));

// Tool round trip: a declared tool, the tool_use as the API returns it, its
// tool_result sent back; the prompt is rendered as SPEC section 5 says
// (k3-tokenize --chat on the OpenAI-shaped conversation gives as many ids).
const tools = [{ name: "get_weather", description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
const round = {
  model: "k3-tiny", max_tokens: 6, tools, tool_choice: { type: "auto" }, ...off, system: "You check the weather.",
  messages: [user("Weather in Paris?"),
    { role: "assistant", content: [{ type: "text", text: "Let me look." },
      { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: JSON.stringify({ temp_c: 21 }) }] }],
};
const openaiRound = {
  tools: [{ type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: tools[0].input_schema } }],
  tool_choice: "auto", thinking: false,
  messages: [{ role: "system", content: "You check the weather." }, user("Weather in Paris?"),
    { role: "assistant", content: "Let me look.",
      tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: JSON.stringify({ city: "Paris" }) } }] },
    { role: "tool", tool_call_id: "toolu_1", content: JSON.stringify({ temp_c: 21 }) }],
};
const expected = execFileSync(tokenizeTool, ["--tok", modelDir, "--chat"], { input: JSON.stringify(openaiRound) })
  .toString().trim().split(/\s+/).map(Number);
const { max_tokens: _unused, ...countable } = round;
const counted = await client.messages.countTokens(countable);
check("count_tokens: the prompt's ids as SPEC 5 renders them", expected.length, counted.input_tokens);
const answered = await client.messages.create(round);
check("tool round trip: input tokens", expected.length, answered.usage.input_tokens + answered.usage.cache_read_input_tokens);
holds("tool round trip: answered", ["end_turn", "max_tokens", "tool_use"].includes(answered.stop_reason));
const ccRound = await chatCompletion({ ...openaiRound, thinking: undefined, chat_template_kwargs: { thinking: false }, max_tokens: 6 });
check("tool round trip equals chat completions'", ccRound.choices[0].message.content ?? "", textOf(answered));
const again = await client.messages.create(round);
holds("the same conversation again continues from its kept state", again.usage.cache_read_input_tokens > 0);
check("kept state: the same reply", answered.content, again.content);
// The beta path (what Claude Code calls: /v1/messages?beta=true).
const beta = await client.beta.messages.create({ ...base, ...off });
check("beta path: the same reply", plain.content, beta.content);

// Stop sequences.
const firstWord = textOf(plain).trim().split(/\s+/)[1];
if (firstWord) {
  const stopped = await client.messages.create({ ...base, ...off, stop_sequences: [firstWord] });
  check("stop_sequence reason", "stop_sequence", stopped.stop_reason);
  check("stop_sequence named", firstWord, stopped.stop_sequence);
  holds("text cut before the stop sequence", !textOf(stopped).includes(firstWord));
}

// Abort mid-stream: the client stops reading; the server frees the slot and keeps serving.
const controller = new AbortController();
let seen = 0;
try {
  const s = await client.messages.create({ ...base, ...off, max_tokens: 2000, stream: true }, { signal: controller.signal });
  const afterAbort = new Promise((resolve) => controller.signal.addEventListener("abort", () => setTimeout(resolve, 2000)));
  const read = (async () => { for await (const event of s) { if (++seen === 5) controller.abort(); } })();
  read.catch(() => {});
  await Promise.race([read, afterAbort]);
} catch (e) {
  holds("abort raises the client's abort error", e.name === "APIUserAbortError" || e.name === "AbortError");
}
holds("abort came mid-stream", seen >= 5);
let busy = -1;
for (let i = 0; i < 100 && busy !== 0; i++) {
  const metrics = await (await fetch(`${baseURL}/metrics`, { headers: { "x-api-key": apiKey } })).text();
  busy = Number(/^k3_slots_busy (\d+)/m.exec(metrics)[1]);
  if (busy !== 0) await new Promise((r) => setTimeout(r, 100));
}
check("aborted stream's slot freed", 0, busy);
const after = await client.messages.create({ ...base, ...off });
check("serving after abort", plain.content, after.content);

// Errors reach the client as its typed errors, with Anthropic's error shape.
async function refused(name, params, status, type, words, c = client) {
  try {
    await c.messages.create(params);
    holds(`${name} refused`, false);
  } catch (e) {
    check(`${name} status`, status, e.status);
    check(`${name} error type`, type, e.error?.error?.type);
    holds(`${name} message names ${words}`, String(e.error?.error?.message).includes(words));
  }
}
await refused("unknown field", { ...base, service_tier: "auto" }, 400, "invalid_request_error", "service_tier");
await refused("image block", { ...base, messages: [user([{ type: "image", source: { type: "base64", media_type: "image/png", data: "AA==" } }])] },
  400, "invalid_request_error", "messages[0].content[0].type");
await refused("budget over max_tokens", { ...base, thinking: { type: "enabled", budget_tokens: 2048 } }, 400,
  "invalid_request_error", "thinking.budget_tokens");
await refused("unknown model", { ...base, model: "claude-sonnet-4-5" }, 404, "not_found_error", "is not served here");
await refused("wrong key", base, 401, "authentication_error", "x-api-key",
  new Anthropic({ baseURL, apiKey: "wrong", maxRetries: 0 }));
// Authorization: Bearer works too (the SDK's authToken).
const bearer = await new Anthropic({ baseURL, apiKey: null, authToken: apiKey, maxRetries: 0 }).messages.create({ ...base, ...off });
check("Bearer key", plain.content, bearer.content);

// GET /v1/models: Anthropic's shape for a request with anthropic-version (the SDK sends it), OpenAI's otherwise.
const anthropicModels = await client.models.list();
check("models: Anthropic's shape", [{ type: "model", id: "k3-tiny", display_name: "k3-tiny", created_at: "1970-01-01T00:00:00Z" }],
  anthropicModels.data);
const openaiModels = await (await fetch(`${baseURL}/v1/models`, { headers: { Authorization: `Bearer ${apiKey}` } })).json();
check("models without anthropic-version: OpenAI's shape", ["list", "k3-tiny"], [openaiModels.object, openaiModels.data[0].id]);

// Forced tool_choice (any, tool) is enforced: the reply is one tool_use whose input validates against its input_schema.
const ajv = new Ajv();
const forcedTools = [
  { name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: {
    city: { type: "string", maxLength: 10 }, unit: { type: "string", enum: ["c", "f"] } }, required: ["city", "unit"], additionalProperties: false } },
  { name: "add", input_schema: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } },
    required: ["a", "b"], additionalProperties: false } },
];
const inputValid = Object.fromEntries(forcedTools.map((t) => [t.name, ajv.compile(t.input_schema)]));
for (const [label, choice] of [["any", { type: "any" }], ["tool", { type: "tool", name: "add" }]]) {
  for (const [i, q] of ["call a tool", "weather?", "sum two", "go"].entries()) {
    const m = await client.messages.create({ model: "k3-tiny", max_tokens: 400, ...off, temperature: 1, tools: forcedTools,
      tool_choice: choice, messages: [user(q)] });
    check(`tool_choice ${label} ${i}: stop_reason`, "tool_use", m.stop_reason);
    const uses = m.content.filter((b) => b.type === "tool_use");
    check(`tool_choice ${label} ${i}: one tool_use`, 1, uses.length);
    if (!uses.length) continue;
    if (label === "tool") check(`tool_choice tool ${i}: the tool asked for`, "add", uses[0].name);
    holds(`tool_choice ${label} ${i}: input validates (${JSON.stringify(uses[0].input)})`, inputValid[uses[0].name]?.(uses[0].input));
  }
}

done("anthropic_client_checks");
