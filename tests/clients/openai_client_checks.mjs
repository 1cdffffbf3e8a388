// The official OpenAI client for Node against a running k3-serve (started by
// tests/serve/k3_serve_client_test.sh on the tiny model, loopback only).
// Usage: node openai_client_checks.mjs BASE_URL K3_TOKENIZE MODEL_DIR
import { execFileSync } from "node:child_process";
import OpenAI from "openai";
import { check, done, holds } from "./checks.mjs";

const [baseURL, tokenizeTool, modelDir] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "unused", timeout: 120000, maxRetries: 0 });

const user = (content) => ({ role: "user", content });
const noThink = { chat_template_kwargs: { thinking: false } };

// Streams a chat request; returns the concatenated deltas.
async function streamed(params, onChunk) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  const out = { content: "", reasoning: "", finish: null, usage: null, chunks: 0, tool_calls: [] };
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.content) out.content += choice.delta.content;
    if (choice.delta.reasoning_content) out.reasoning += choice.delta.reasoning_content;
    if (choice.delta.tool_calls) out.tool_calls.push(...choice.delta.tool_calls);
    if (choice.finish_reason) out.finish = choice.finish_reason;
    if (onChunk && onChunk(out) === false) break;
  }
  return out;
}

// Models.
const models = await client.models.list();
check("models", ["k3-tiny"], models.data.map((m) => m.id));

// Chat, non-streamed and streamed: the same answer.
const base = { model: "k3-tiny", messages: [user("Name three colours.")], max_tokens: 10 };
const plain = await client.chat.completions.create({ ...base, ...noThink });
check("chat role", "assistant", plain.choices[0].message.role);
check("chat finish", "length", plain.choices[0].finish_reason);
check("chat usage", 10, plain.usage.completion_tokens);
holds("chat cached_tokens reported", typeof plain.usage.prompt_tokens_details.cached_tokens === "number");
check("thinking off: no reasoning_content", undefined, plain.choices[0].message.reasoning_content);
const s = await streamed({ ...base, ...noThink });
check("streamed content equals non-streamed", plain.choices[0].message.content, s.content);
check("streamed finish", "length", s.finish);
check("streamed usage", plain.usage.completion_tokens, s.usage?.completion_tokens);
check("thinking off: no reasoning deltas", "", s.reasoning);

// Thinking on: reasoning_content present, streamed as reasoning deltas.
const thinking = await client.chat.completions.create({ ...base, chat_template_kwargs: { thinking: true } });
holds("thinking on: reasoning_content present", typeof thinking.choices[0].message.reasoning_content === "string" &&
  thinking.choices[0].message.reasoning_content.length > 0);
const st = await streamed({ ...base, reasoning_effort: "high" });
const effortHigh = await client.chat.completions.create({ ...base, reasoning_effort: "high" });
check("streamed reasoning equals non-streamed", effortHigh.choices[0].message.reasoning_content, st.reasoning);

// Tool-call round trip: a declared tool, the call as the API returns it, the
// tool's result sent back; the next prompt is rendered as SPEC section 5 says
// (k3-tokenize --chat on the same messages gives the same ids).
const tools = [{ type: "function", function: { name: "get_weather", description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const call = { id: "call_1", type: "function", function: { name: "get_weather", arguments: JSON.stringify({ city: "Paris" }) } };
const round = {
  model: "k3-tiny", tools, tool_choice: "auto", max_tokens: 6, ...noThink,
  messages: [user("Weather in Paris?"), { role: "assistant", content: null, tool_calls: [call] },
             { role: "tool", tool_call_id: "call_1", content: JSON.stringify({ temp_c: 21 }) }],
};
const answered = await client.chat.completions.create(round);
const request = { messages: round.messages, tools, tool_choice: "auto", thinking: false };
const expected = execFileSync(tokenizeTool, ["--tok", modelDir, "--chat"], { input: JSON.stringify(request) })
  .toString().trim().split(/\s+/).map(Number);
const served = await (await fetch(`${baseURL}/tokenize`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(round) })).json();
check("tool round trip: prompt ids as SPEC 5 renders them", expected, served.tokens);
check("tool round trip: prompt_tokens", expected.length, answered.usage.prompt_tokens);
holds("tool round trip: answered", ["stop", "length", "tool_calls"].includes(answered.choices[0].finish_reason));

// Abort mid-stream: the client stops reading; the server frees the slot and keeps serving.
const controller = new AbortController();
let seen = 0;
try {
  const stream = await client.chat.completions.create({ ...base, max_tokens: 2000, stream: true, ...noThink },
                                                      { signal: controller.signal });
  // With a fast model the client's iterator sometimes stays pending after
  // the abort with no socket left (node then exits 13, its await unsettled:
  // 3 of 10 runs); the loop ends 2 s after the abort at the latest.
  const afterAbort = new Promise((resolve) => controller.signal.addEventListener("abort", () => setTimeout(resolve, 2000)));
  const read = (async () => { for await (const chunk of stream) { if (++seen === 3) controller.abort(); } })();
  read.catch(() => {});  // a rejection after the 2 s is not unhandled (the race below still sees an earlier one)
  await Promise.race([read, afterAbort]);
} catch (e) {
  holds("abort raises the client's abort error", e.name === "APIUserAbortError" || e.name === "AbortError");
}
holds("abort came mid-stream", seen >= 3);
let busy = -1;
for (let i = 0; i < 100 && busy !== 0; i++) {
  const metrics = await (await fetch(`${baseURL}/metrics`)).text();
  busy = Number(/^k3_slots_busy (\d+)/m.exec(metrics)[1]);
  if (busy !== 0) await new Promise((r) => setTimeout(r, 100));
}
check("aborted stream's slot freed", 0, busy);
const after = await client.chat.completions.create({ ...base, ...noThink });
check("serving after abort", plain.choices[0].message.content, after.choices[0].message.content);

// Four concurrent streams, each equal to its run alone (greedy and seeded sampling).
const four = [
  { ...base, messages: [user("One")], ...noThink, max_tokens: 12 },
  { ...base, messages: [user("Two, longer question here")], temperature: 0.8, seed: 7, max_tokens: 9 },
  { ...base, messages: [user("Three")], max_tokens: 14 },
  { ...base, messages: [user("Four")], temperature: 1.0, top_p: 0.9, seed: 3, ...noThink, max_tokens: 7 },
];
const alone = [];
for (const p of four) alone.push(await streamed(p));
const together = await Promise.all(four.map((p) => streamed(p)));
for (let i = 0; i < 4; i++) {
  check(`concurrent stream ${i} content equals its run alone`, alone[i].content, together[i].content);
  check(`concurrent stream ${i} reasoning equals its run alone`, alone[i].reasoning, together[i].reasoning);
  check(`concurrent stream ${i} tokens`, alone[i].usage?.completion_tokens, together[i].usage?.completion_tokens);
}

// Completions with a token-id prompt.
const comp = await client.completions.create({ model: "k3-tiny", prompt: [5, 6, 7, 8], max_tokens: 5, temperature: 0 });
check("completion tokens", 5, comp.usage.completion_tokens);
holds("completion text", typeof comp.choices[0].text === "string");

// logprobs, n and logit_bias through the client (tests/serve/token_controls_checks.py checks the numbers).
const lp = await client.chat.completions.create({ ...base, ...noThink, logprobs: true, top_logprobs: 3 });
check("logprobs: one entry per id", lp.usage.completion_tokens, lp.choices[0].logprobs.content.length);
check("top_logprobs: 3 each", lp.choices[0].logprobs.content.map(() => 3),
  lp.choices[0].logprobs.content.map((c) => c.top_logprobs.length));
holds("logprobs are <= 0", lp.choices[0].logprobs.content.every((c) => c.logprob <= 0));
const lps = await streamed({ ...base, ...noThink, logprobs: true, top_logprobs: 3 });
check("streamed logprobs: same text", lp.choices[0].message.content, lps.content);
const two = await client.chat.completions.create({ ...base, ...noThink, n: 2, temperature: 1, seed: 4 });
check("n=2: two choices", [0, 1], two.choices.map((c) => c.index));
const seeded = await client.chat.completions.create({ ...base, ...noThink, temperature: 1, seed: 5 });
check("n=2: the second choice is seed + 1", seeded.choices[0].message.content, two.choices[1].message.content);
const three = { model: "k3-tiny", prompt: [5, 6, 7, 8], max_tokens: 3, temperature: 0 };
const plain3 = await client.completions.create(three);
const biased = await client.completions.create({ ...three, logit_bias: { 1000: 100 } });
holds("logit_bias +100 changes the greedy text", plain3.choices[0].text !== biased.choices[0].text);
try {
  await client.completions.create({ model: "k3-tiny", prompt: "a", logit_bias: { 99999999: 1 } });
  holds("logit_bias outside the vocabulary refused", false);
} catch (e) {
  check("logit_bias outside the vocabulary: status", 400, e.status);
  check("logit_bias outside the vocabulary: param", "logit_bias", e.param);
}

// Errors reach the client as APIError with the server's status and message.
try {
  await client.chat.completions.create({ ...base, model: "gpt-4o" });
  holds("unknown model refused", false);
} catch (e) {
  check("unknown model status", 404, e.status);
  holds("unknown model message", String(e.message).includes("is not served here"));
}

done("openai_client_checks");
