// The official OpenAI client for Node drives k3-serve's /v1/responses
// (started by tests/serve/k3_serve_responses_test.sh on the tiny model):
// greedy replies equal /v1/chat/completions' for the same conversation (same
// prompt ids, same text), with instructions, thinking on and off, a tool
// round trip through function_call / function_call_output items; streamed
// events in the documented order whose deltas equal the non-streamed text;
// previous_response_id continues the kept conversation (and its kept state:
// cached tokens); store: false keeps nothing; refusals name the field.
// Usage: node openai_responses_checks.mjs BASE_URL
import OpenAI from "openai";
import { check, done, holds } from "./checks.mjs";

const [baseURL] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "unused", timeout: 120000, maxRetries: 0 });
const user = (content) => ({ role: "user", content });
const model = "k3-tiny";
const outputText = (r) => r.output.filter((i) => i.type === "message").flatMap((i) => i.content).map((c) => c.text).join("");

// Plain: the same text and prompt as the chat reply; cut by max_output_tokens.
const plain = await client.responses.create({ model, input: "Name three colours.", max_output_tokens: 10, reasoning: { effort: "none" } });
const chat = await client.chat.completions.create({ model, messages: [user("Name three colours.")], max_tokens: 10, reasoning_effort: "none" });
check("object", "response", plain.object);
holds("id", plain.id.startsWith("resp_"));
check("text equals chat", chat.choices[0].message.content, plain.output_text);
check("output_text is the message's text", outputText(plain), plain.output_text);
check("input tokens equal chat's prompt tokens", chat.usage.prompt_tokens, plain.usage.input_tokens);
check("output tokens", 10, plain.usage.output_tokens);
check("cut by max_output_tokens: incomplete", "incomplete", plain.status);
check("incomplete reason", "max_output_tokens", plain.incomplete_details?.reason);
check("thinking off: no reasoning item", [], plain.output.filter((i) => i.type === "reasoning"));

// Instructions are the system message.
const instructed = await client.responses.create({ model, instructions: "Be brief.", input: "Hi", max_output_tokens: 8, reasoning: { effort: "none" } });
const instructedChat = await client.chat.completions.create({ model, messages: [{ role: "system", content: "Be brief." }, user("Hi")], max_tokens: 8, reasoning_effort: "none" });
check("instructions: text equals chat with a system message", instructedChat.choices[0].message.content, instructed.output_text);
check("instructions: prompt tokens", instructedChat.usage.prompt_tokens, instructed.usage.input_tokens);

// Thinking on: the reasoning item carries what chat's reasoning_content does.
const thought = await client.responses.create({ model, input: "Name three colours.", max_output_tokens: 10, reasoning: { effort: "high" } });
const thoughtChat = await client.chat.completions.create({ model, messages: [user("Name three colours.")], max_tokens: 10, reasoning_effort: "high" });
const summary = thought.output.filter((i) => i.type === "reasoning").flatMap((i) => i.summary).map((s) => s.text).join("");
check("thinking on: reasoning summary equals chat's reasoning_content", thoughtChat.choices[0].message.reasoning_content, summary);
holds("thinking on: reasoning present", summary.length > 0);

// Streamed: the documented events, in order; the deltas make the non-streamed text.
const stream = await client.responses.create({ model, input: "Name three colours.", max_output_tokens: 10, reasoning: { effort: "none" }, stream: true });
const types = [];
let deltas = "", final = null, sequence = 0, ordered = true;
for await (const event of stream) {
  types.push(event.type);
  if (event.sequence_number !== sequence++) ordered = false;
  if (event.type === "response.output_text.delta") deltas += event.delta;
  if (event.type === "response.completed" || event.type === "response.incomplete") final = event.response;
}
check("stream: first events", ["response.created", "response.in_progress", "response.output_item.added"], types.slice(0, 3));
check("stream: last event", "response.incomplete", types[types.length - 1]);
holds("stream: sequence numbers count up", ordered);
for (const t of ["response.content_part.added", "response.output_text.done", "response.content_part.done", "response.output_item.done"])
  holds(`stream: ${t}`, types.includes(t));
check("stream: deltas equal the non-streamed text", plain.output_text, deltas);
check("stream: final response's text", plain.output_text, outputText(final));
// Token by token: a delta per chunk of text, and the final response the non-streamed one (but its id, its time,
// the ids cached from the first request's kept state, and the SDK's output_text, added to non-streamed replies only).
holds(`stream: token by token (${types.filter((t) => t === "response.output_text.delta").length} text deltas)`,
  types.filter((t) => t === "response.output_text.delta").length > 1);
const bare = (r) => JSON.stringify({ ...r, id: null, created_at: null, output_text: undefined,
  output: r.output.map((i) => ({ ...i, id: null })), usage: { ...r.usage, input_tokens_details: null } });
check("stream: final response equals non-streamed", bare(plain), bare(final));
// Thinking on, streamed: the reasoning summary deltas make the non-streamed summary.
const thoughtStream = await client.responses.create({ model, input: "Name three colours.", max_output_tokens: 10, reasoning: { effort: "high" }, stream: true });
let summaryDeltas = "", thoughtFinal = null;
const thoughtTypes = [];
for await (const event of thoughtStream) {
  thoughtTypes.push(event.type);
  if (event.type === "response.reasoning_summary_text.delta") summaryDeltas += event.delta;
  if (event.type === "response.completed" || event.type === "response.incomplete") thoughtFinal = event.response;
}
check("stream, thinking on: summary deltas equal the non-streamed summary", summary, summaryDeltas);
check("stream, thinking on: final response equals non-streamed", bare(thought), bare(thoughtFinal));
check("stream, thinking on: the reasoning item opens first",
  ["response.created", "response.in_progress", "response.output_item.added", "response.reasoning_summary_part.added"],
  thoughtTypes.slice(0, 4));

// Tool round trip as items; the same prompt and answer as chat's.
const tools = [{ type: "function", name: "get_weather", description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
const args = JSON.stringify({ city: "Paris" });
const toolReply = await client.responses.create({ model, tools, tool_choice: "auto", max_output_tokens: 6, reasoning: { effort: "none" },
  input: [{ role: "user", content: "Weather in Paris?" }, { type: "function_call", call_id: "call_1", name: "get_weather", arguments: args },
          { type: "function_call_output", call_id: "call_1", output: JSON.stringify({ temp_c: 21 }) }] });
const toolChat = await client.chat.completions.create({ model, max_tokens: 6, reasoning_effort: "none", tool_choice: "auto",
  tools: [{ type: "function", function: { name: tools[0].name, description: tools[0].description, parameters: tools[0].parameters } }],
  messages: [user("Weather in Paris?"), { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: args } }] },
             { role: "tool", tool_call_id: "call_1", content: JSON.stringify({ temp_c: 21 }) }] });
check("tool round trip: prompt tokens equal chat's", toolChat.usage.prompt_tokens, toolReply.usage.input_tokens);
check("tool round trip: text equals chat's", toolChat.choices[0].message.content ?? "", toolReply.output_text);

// previous_response_id: the kept conversation continues, from its kept state.
const first = await client.responses.create({ model, input: "One", max_output_tokens: 6, reasoning: { effort: "none" } });
const next = await client.responses.create({ model, previous_response_id: first.id, input: "Two", max_output_tokens: 6, reasoning: { effort: "none" } });
const nextChat = await client.chat.completions.create({ model, max_tokens: 6, reasoning_effort: "none",
  messages: [user("One"), { role: "assistant", content: first.output_text }, user("Two")] });
check("previous_response_id: prompt tokens equal the whole conversation's", nextChat.usage.prompt_tokens, next.usage.input_tokens);
check("previous_response_id: text equals chat's", nextChat.choices[0].message.content, next.output_text);
check("previous_response_id echoed", first.id, next.previous_response_id);
holds(`previous_response_id: continued from the kept state (${next.usage.input_tokens_details.cached_tokens} cached)`,
  next.usage.input_tokens_details.cached_tokens > 0);

// store: false keeps nothing to continue.
const unkept = await client.responses.create({ model, input: "One", max_output_tokens: 3, store: false, reasoning: { effort: "none" } });
check("store false echoed", false, unkept.store);
async function status(params) {
  try { await client.responses.create(params); return [200, null]; } catch (e) { return [e.status, e.error?.param ?? e.param ?? null]; }
}
check("store false: not continued", [404, "previous_response_id"], await status({ model, previous_response_id: unkept.id, input: "x" }));
check("unknown field refused", [400, "truncation"], await status({ model, input: "x", truncation: "auto" }));
check("max_output_tokens over the context", 400, (await status({ model, input: "x", max_output_tokens: 1e6 }))[0]);
check("hosted tools refused", [400, "tools[0].type"], await status({ model, input: "x", tools: [{ type: "web_search" }] }));
check("another model: 404", 404, (await status({ model: "gpt-4o", input: "x" }))[0]);

done("openai_responses_checks");
