// Structured output against a running k3-serve on the tiny model (random
// weights: unconstrained text is gibberish), through the official OpenAI
// client; every reply is validated with ajv (JSON Schema, strict mode off
// for the annotations OpenAI allows). The seeded schemas bound their
// strings (maxLength): a random model writes an unbounded string, or
// whitespace between tokens, for hundreds of ids, and a reply cut by
// max_tokens is incomplete by definition (finish_reason "length").
// Usage: node structured_output_checks.mjs BASE_URL REQUESTS
import OpenAI from "openai";
import Ajv from "ajv";
import { check, done, holds, pass, fail } from "./checks.mjs";

const [baseURL, requestsArg] = process.argv.slice(2);
const requests = Number(requestsArg || 200);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "unused", timeout: 120000, maxRetries: 0 });
const ajv = new Ajv({ strict: false, allErrors: true });

const user = (content) => ({ role: "user", content });
const noThink = { chat_template_kwargs: { thinking: false } };

const schemas = {
  person: {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 12 },
      age: { type: "integer" },
      email: { type: ["string", "null"], maxLength: 8 },
      role: { type: "string", enum: ["admin", "user", "guest"] },
    },
    required: ["name", "age", "email", "role"],
    additionalProperties: false,
  },
  order: {
    type: "object",
    properties: {
      id: { type: "integer" },
      items: {
        type: "array", maxItems: 3,
        items: {
          type: "object",
          properties: { sku: { type: "string", maxLength: 6 }, qty: { type: "integer" }, price: { type: "number" } },
          required: ["sku", "qty", "price"], additionalProperties: false,
        },
      },
      paid: { type: "boolean" },
      note: { const: "ok" },
    },
    required: ["id", "items", "paid", "note"],
    additionalProperties: false,
  },
  shape: {
    anyOf: [
      { type: "object", properties: { kind: { const: "circle" }, r: { type: "number" } }, required: ["kind", "r"], additionalProperties: false },
      { type: "object", properties: { kind: { const: "box" }, w: { type: "integer" }, h: { type: "integer" } }, required: ["kind", "w", "h"], additionalProperties: false },
      { type: "null" },
    ],
  },
  list: {
    $defs: {
      node: {
        type: "object",
        properties: { v: { type: "integer" }, next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] } },
        required: ["v", "next"], additionalProperties: false,
      },
    },
    $ref: "#/$defs/node",
  },
  free: {
    type: "object",
    properties: { title: { type: "string", maxLength: 24 }, flags: { type: "array", items: { type: "boolean" }, maxItems: 4 } },
    required: ["title", "flags"],
    additionalProperties: false,
  },
};
const names = Object.keys(schemas);
const validators = Object.fromEntries(names.map((n) => [n, ajv.compile(schemas[n])]));

// 1. Seeded requests across the schemas: every reply parses and validates.
let ok = 0, cut = 0;
const started = Date.now();
const jobs = [];
for (let i = 0; i < requests; i++) {
  const name = names[i % names.length];
  jobs.push(async () => {
    const r = await client.chat.completions.create({
      model: "k3-tiny", messages: [user(`Give me a ${name}.`)], ...noThink, max_tokens: 800,
      temperature: 1.0, seed: i,
      response_format: { type: "json_schema", json_schema: { name, strict: true, schema: schemas[name] } },
    });
    const c = r.choices[0];
    if (c.finish_reason !== "stop") { cut++; fail(`request ${i} (${name}): finish ${c.finish_reason}: ${c.message.content}`); return; }
    let value;
    try { value = JSON.parse(c.message.content); } catch (e) { fail(`request ${i} (${name}): not JSON: ${c.message.content}`); return; }
    if (validators[name](value)) { ok++; pass(); }
    else fail(`request ${i} (${name}): ${ajv.errorsText(validators[name].errors)}: ${c.message.content}`);
  });
}
for (let i = 0; i < jobs.length; i += 4) await Promise.all(jobs.slice(i, i + 4).map((j) => j()));
console.log(`${ok}/${requests} seeded constrained replies validated (${cut} cut by max_tokens) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
check("every seeded reply validates", requests, ok);

// 2. json_object: any JSON object. Its strings are unbounded, so a random
// model may run to max_tokens: every reply that stops is an object, and a
// cut one is the start of one (never text before it but whitespace).
let objects = 0;
for (let seed = 0; seed < 6; seed++) {
  const r = await client.chat.completions.create({
    model: "k3-tiny", messages: [user("JSON please")], ...noThink, max_tokens: 800, temperature: 1.0, seed,
    response_format: { type: "json_object" },
  });
  const text = r.choices[0].message.content;
  if (r.choices[0].finish_reason === "stop") {
    let v = null;
    try { v = JSON.parse(text); } catch (e) { /* checked below */ }
    holds(`json_object seed ${seed} is an object`, v !== null && typeof v === "object" && !Array.isArray(v), text);
    objects++;
  } else {
    holds(`json_object seed ${seed}, cut: only whitespace before "{"`, /^[ \t\n\r]*(\{|$)/.test(text), text.slice(0, 80));
  }
}
holds("json_object: some replies complete", objects > 0);

// 3. Thinking on: the reasoning is free, the answer validates.
{
  const r = await client.chat.completions.create({
    model: "k3-tiny", messages: [user("Think, then answer.")], max_tokens: 600, temperature: 1.0, seed: 3,
    chat_template_kwargs: { thinking: true },
    response_format: { type: "json_schema", json_schema: { name: "person", strict: true, schema: schemas.person } },
  });
  const m = r.choices[0].message;
  if (r.choices[0].finish_reason === "stop") {
    holds("thinking on: the answer validates", validators.person(JSON.parse(m.content)), m.content);
    holds("thinking on: reasoning_content is there", typeof m.reasoning_content === "string");
  } else {
    // A random model may think past max_tokens: then the answer never started, and nothing unconstrained was written.
    check("thinking on, cut while thinking: no answer text", "", m.content ?? "");
  }
}

// 4. Streamed equals non-streamed.
{
  const params = {
    model: "k3-tiny", messages: [user("stream")], ...noThink, max_tokens: 600, temperature: 1.0, seed: 11,
    response_format: { type: "json_schema", json_schema: { name: "order", strict: true, schema: schemas.order } },
  };
  const whole = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  check("streamed constrained reply equals non-streamed", whole.choices[0].message.content, text);
  holds("streamed reply validates", validators.order(JSON.parse(text)), text);
}

// 5. Forced tool calls: tool_choice "required" and a named function; strict arguments validate.
const tools = [
  { type: "function", function: { name: "get_weather", strict: true, parameters: {
      type: "object", properties: { city: { type: "string", maxLength: 10 }, unit: { type: "string", enum: ["c", "f"] } },
      required: ["city", "unit"], additionalProperties: false } } },
  { type: "function", function: { name: "add", strict: true, parameters: {
      type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"], additionalProperties: false } } },
];
const toolValidators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
for (const [label, choice] of [["required", "required"], ["named", { type: "function", function: { name: "add" } }]]) {
  for (let seed = 0; seed < 6; seed++) {
    const r = await client.chat.completions.create({
      model: "k3-tiny", messages: [user("call a tool")], ...noThink, max_tokens: 400, temperature: 1.0, seed, tools, tool_choice: choice,
    });
    const c = r.choices[0];
    const calls = c.message.tool_calls ?? [];
    check(`tool_choice ${label} seed ${seed}: finish`, "tool_calls", c.finish_reason);
    check(`tool_choice ${label} seed ${seed}: one call`, 1, calls.length);
    if (!calls.length) continue;
    const fn = calls[0].function;
    if (label === "named") check(`named: the function asked for`, "add", fn.name);
    let args = null;
    try { args = JSON.parse(fn.arguments); } catch (e) { /* below */ }
    holds(`tool_choice ${label} seed ${seed}: arguments validate`, args && toolValidators[fn.name]?.(args), fn.arguments);
  }
}

// 5b. Strict tools under tool_choice "auto": free text until a call opens, then the
// call's name is a declared tool and its arguments validate. logit_bias on the
// tiny model's <|close|> (8196) and <|open|> (8195) (tests/data/k3-tiny/
// tokenizer_config.json) makes its random weights end the answer soon and
// open the tools section often; the constraint alone decides what follows.
let autoCalls = 0, autoTexts = 0;
for (let seed = 0; seed < 16; seed++) {
  const r = await client.chat.completions.create({
    model: "k3-tiny", messages: [user("call a tool or not")], ...noThink, max_tokens: 400, temperature: 1.0, seed, tools,
    tool_choice: "auto", logit_bias: { 8196: 6, 8195: seed % 2 ? 9 : 0 },
  });
  const calls = r.choices[0].message.tool_calls ?? [];
  if (!calls.length) { autoTexts++; continue; }
  autoCalls++;
  const fn = calls[0].function;
  holds(`auto seed ${seed}: a declared tool`, fn.name in toolValidators, fn.name);
  let args = null;
  try { args = JSON.parse(fn.arguments); } catch (e) { /* below */ }
  holds(`auto seed ${seed}: arguments validate`, args && toolValidators[fn.name]?.(args), fn.arguments);
}
console.log(`strict tools under auto: ${autoCalls} replies called a tool, ${autoTexts} answered in text`);
holds("strict tools under auto: some replies call a tool", autoCalls > 0);

// 6. Fails closed: unsupported keywords and bad tool choices are 400s naming them.
async function refused(name, params, needle) {
  try {
    await client.chat.completions.create({ model: "k3-tiny", messages: [user("x")], max_tokens: 5, ...params });
    holds(`${name}: refused`, false);
  } catch (e) {
    check(`${name}: status`, 400, e.status);
    holds(`${name}: names ${needle}`, String(e.message).includes(needle), e.message);
  }
}
await refused("pattern", { response_format: { type: "json_schema", json_schema: { name: "x", strict: true, schema: {
  type: "object", properties: { a: { type: "string", pattern: "^a" } }, required: ["a"], additionalProperties: false } } } }, 'keyword "pattern"');
await refused("oneOf", { response_format: { type: "json_schema", json_schema: { name: "x", schema: { oneOf: [{ type: "string" }] } } } }, "oneOf");
await refused("self loop", { response_format: { type: "json_schema", json_schema: { name: "x", schema: { $ref: "#" } } } }, "refers back to itself");
await refused("strict tool with format", { tools: [{ type: "function", function: { name: "f", strict: true, parameters: {
  type: "object", properties: { d: { type: "string", format: "date" } }, required: ["d"], additionalProperties: false } } }],
  tool_choice: "required" }, "format");
await refused("named tool missing", { tools, tool_choice: { type: "function", function: { name: "nope" } } }, "nope");

done("structured output checks");
