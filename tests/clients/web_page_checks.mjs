// k3-serve's chat page in a real browser (Debian's chromium, headless,
// driven by playwright-core), started by tests/serve/k3_serve_web_test.sh.
// Usage: node web_page_checks.mjs BASE_URL API_KEY SCREENSHOT_DIR
//
// Part 1 drives the page against a stub server in this process that serves
// the page without its Content-Security-Policy and streams a crafted reply
// (markup, a tool call, reasoning, prefill progress), so what is checked is
// the page's own renderer. Part 2 drives it against the real k3-serve on the
// tiny model, started with --api-key API_KEY.
import http from "node:http";
import { chromium } from "playwright-core";
import { check, done, holds } from "./checks.mjs";

const [base, key, shots] = process.argv.slice(2);
// A condition that a transition or a reply brings about: holds once it is
// true in the page, fails if it is still false after `ms` (a loaded machine
// runs a .15 s transition late, so a single look can come too early).
async function becomes(page, name, fn, ms = 5000) {
  holds(name, await page.waitForFunction(fn, null, { timeout: ms }).then(() => true, () => false));
}
const squash = (s) => s.replace(/\s+/g, "");
const auth = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };

// What a page did: console errors (CSP violations among them), uncaught
// exceptions, failed requests and answers of 400 and over.
function watch(page) {
  const log = { errors: [], failed: [], urls: [] };
  page.on("console", (m) => { if (m.type() === "error") log.errors.push(m.text()); });
  page.on("pageerror", (e) => log.errors.push(`uncaught: ${e.message}`));
  page.on("requestfailed", (r) => log.failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on("response", (r) => { if (r.status() >= 400) log.failed.push(`${r.request().method()} ${r.url()}: ${r.status()}`); });
  page.on("request", (r) => log.urls.push(new URL(r.url()).pathname));
  return log;
}
const clear = (log) => { log.errors.length = 0; log.failed.length = 0; log.urls.length = 0; };

async function settings(page, fields) {
  await page.click("#open-settings");
  for (const [id, value] of Object.entries(fields)) {
    if (typeof value === "boolean") await page.setChecked(`#${id}`, value);
    else if (id === "s-effort") await page.selectOption(`#${id}`, value);
    else await page.fill(`#${id}`, value);
  }
  await page.click("#s-save");
}
async function sendKeys(page, text) {
  await page.click("#input");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}
// Waits until the last reply has ended and the page is idle again.
async function replyEnded(page) {
  await page.waitForFunction(() => {
    const all = document.querySelectorAll(".msg.assistant");
    const last = all[all.length - 1];
    return last && last.dataset.state !== "streaming" && !document.getElementById("send").hidden;
  }, null, { timeout: 60000 });
}
const lastReply = (page) => page.evaluate(() => {
  const all = document.querySelectorAll(".msg.assistant");
  const m = all[all.length - 1];
  const d = m.querySelector("details.reasoning");
  return { text: m.querySelector(".body").innerText, state: m.dataset.state, figures: m.querySelector(".figures").textContent,
           reasoning: d ? d.querySelector(".text").textContent : null, open: d ? d.open : null };
});
// The current conversation as the page saved it (no messages when it saved none).
const stored = (page) => page.evaluate(() => {
  const all = JSON.parse(localStorage.getItem("k3.conversations")) || {};
  return all[JSON.parse(localStorage.getItem("k3.current"))] || { id: null, messages: [] };
});
// The page's last chat request, sent again non-streamed through the API.
async function replay(body) {
  const req = JSON.parse(body);
  req.stream = false;
  delete req.stream_options;
  const res = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify(req) });
  return res.json();
}
function lastChatRequest(page) {
  return new Promise((resolve) => page.on("request", (r) => {
    if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions")) resolve(r.postData());
  }));
}
async function metric(name) {
  const text = await (await fetch(`${base}/metrics`, { headers: auth })).text();
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : NaN;
}

// ---- The stub: the page without its CSP, and a crafted streamed reply ------
const page_html = await (await fetch(`${base}/`)).text();
const releases = [];
const held = () => new Promise((resolve) => releases.push(resolve));
const chunk = (delta, finish = null) =>
  `data: ${JSON.stringify({ id: "stub", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const HOSTILE = "Here is **bold** and `<i>code</i>`.\n<script>window.__k3pwned=1</script>\n" +
  "<img src=x onerror=\"window.__k3pwned=2\">\n[click](javascript:window.__k3pwned=3)\n\n```html\n<b>not bold</b>\n```\n" +
  "- item <u>one</u>\n";
const stub = http.createServer(async (req, res) => {
  if (req.url === "/") { res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }); res.end(page_html); return; }
  if (req.url === "/v1/models") { res.writeHead(200, { "Content-Type": "application/json" }); res.end('{"data":[{"id":"stub"}]}'); return; }
  if (req.url === "/metrics") { res.writeHead(200); res.end("k3_bytes_read_total 0\nk3_generated_tokens_total 0\n"); return; }
  if (req.url === "/release") { releases.shift()?.(); res.end("ok"); return; }
  if (req.url !== "/v1/chat/completions") { res.writeHead(404); res.end(); return; }
  for await (const _ of req);  // the body
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  res.write(chunk({ role: "assistant", content: "" }));
  res.write(": prefill 0/4430\n\n");
  await new Promise((r) => setTimeout(r, 300));
  res.write(": prefill 1234/4430\n\n");
  await held();
  res.write(": prefill 1234/4430\n: layer 2 of 13, 150 tokens/s, 3 min left\n\n");  // a layer-major pass
  await held();
  res.write(": prefill 4430/4430\n\n");
  res.write(chunk({ reasoning_content: "Thinking about <b>markup</b> <script>window.__k3pwned=4</script>" }));
  await held();
  for (const piece of HOSTILE.match(/[\s\S]{1,7}/g)) res.write(chunk({ content: piece }));
  res.write(chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function",
    function: { name: "get_weather", arguments: '{"city": "Paris <img src=z onerror=window.__k3pwned=6>"}' } }] }));
  res.write(chunk({}, "tool_calls"));
  res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 3 } } })}\n\n`);
  res.end("data: [DONE]\n\n");
});
await new Promise((resolve) => stub.listen(0, "127.0.0.1", resolve));
const stubUrl = `http://127.0.0.1:${stub.address().port}`;
const release = () => fetch(`${stubUrl}/release`);

const browser = await chromium.launch({
  executablePath: process.env.K3_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"], timeout: 30000,
});
try {
  // ---- 1. The renderer, on the stub ----------------------------------------
  {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    const log = watch(page);
    await page.goto(stubUrl);
    await sendKeys(page, '<img src=y onerror="window.__k3pwned=5">hello');
    await page.waitForSelector(".msg.assistant .prefill progress");
    await page.waitForFunction(() => document.querySelector(".msg.assistant .prefill span")?.textContent.includes("1,234"));
    const progress = await page.textContent(".msg.assistant .prefill span");
    // 1,234 ids in about 0.3 s: the other 3,196 in about 0.8 s more (1 s as shown, rounded up; 2 on a loaded machine).
    holds(`prefill progress shown with the time left ("${progress}")`, /^prompt 1,234 \/ 4,430, [1-9] s left$/.test(progress));
    check("prefill progress bar", [1234, 4430], await page.evaluate(() => {
      const p = document.querySelector(".msg.assistant .prefill progress"); return [p.value, p.max]; }));
    holds("stop button shown while streaming", await page.isVisible("#stop"));
    await release();
    await page.waitForFunction(() => document.querySelector(".msg.assistant .prefill span")?.textContent.includes("layer"));
    check("a layer-major pass's progress: the layer, the server's rate and time left",
      "prompt 1,234 / 4,430, layer 2 of 13, 150 tokens/s, 3 min left", await page.textContent(".msg.assistant .prefill span"));
    await release();
    await page.waitForSelector(".msg.assistant details.reasoning");
    check("reasoning open while it streams", true, await page.evaluate(() => document.querySelector("details.reasoning").open));
    check("reasoning streamed as text", "Thinking about <b>markup</b> <script>window.__k3pwned=4</script>",
      await page.textContent("details.reasoning .text"));
    await release();
    await replyEnded(page);
    const r = await lastReply(page);
    check("reasoning folded after the reply", false, r.open);
    await page.click("details.reasoning summary");
    check("reasoning opens on click", true, await page.evaluate(() => document.querySelector("details.reasoning").open));
    check("no markup from the model ran", "undefined", await page.evaluate(() => typeof window.__k3pwned));
    check("no element made from model or user text", 0,
      await page.evaluate(() => document.querySelectorAll("#messages img, #messages script, #messages b, #messages u, #messages i, #list img").length));
    check("no javascript: link", 0, await page.evaluate(() => document.querySelectorAll("a[href^='javascript']").length));
    holds("<script> shown as text", r.text.includes("<script>window.__k3pwned=1</script>"));
    holds("<img onerror> shown as text", r.text.includes('<img src=x onerror="window.__k3pwned=2">'));
    holds("user's <img> shown as text", (await page.textContent(".msg.user .body")).startsWith("<img src=y"));
    check("side panel title as text", '<img src=y onerror="window.__k3pwned=5">hello', await page.textContent("#list li .open"));
    check("code block as code", "<b>not bold</b>", await page.textContent(".msg.assistant .body pre code"));
    check("inline code", "<i>code</i>", await page.textContent(".msg.assistant .body p code"));
    check("bold", "bold", await page.textContent(".msg.assistant .body strong"));
    check("list item", "item <u>one</u>", await page.textContent(".msg.assistant .body li"));
    check("tool call shown as such", ["tool call", "get_weather"],
      [await page.textContent(".tool .label"), await page.textContent(".tool .name")]);
    holds("tool call arguments as text", (await page.textContent(".tool pre")).includes('"city": "Paris <img src=z'));
    holds("figures from the usage", r.figures.includes("30 tokens") && r.figures.includes("3/10 prompt tokens cached") &&
      r.figures.includes("finish: tool_calls"));
    // s/token: as the page saw the tokens arrive, or, when they all came in
    // one read (no time between the first and the last), the server's decode
    // seconds per token from /metrics.
    check("s/token from the arrivals", "5 tokens · 0.100 s/token · TTFT 0.10 s", await page.evaluate(() =>
      figures({ start: 0, first: 100, last: 500, tokens: 5, serverSecondsPerToken: 0.25 })));
    check("s/token from the server when the tokens came at once", "5 tokens · 0.250 s/token · TTFT 0.10 s", await page.evaluate(() =>
      figures({ start: 0, first: 100, last: 100, tokens: 5, serverSecondsPerToken: 0.25 })));
    check("no s/token without either", "5 tokens", await page.evaluate(() =>
      figures({ start: 0, first: 0, last: 0, tokens: 5 })));
    // Inline Markdown in time linear in the line: texts that made the old
    // pattern backtrack over the rest of the line at every "[" or "](".
    const slowest = await page.evaluate(() => {
      const texts = ["[".repeat(50000), "[a](".repeat(12500), "[".repeat(25000) + "](" + "(".repeat(25000),
        "`".repeat(50000), "*a".repeat(25000), "**a".repeat(16000), "[a]".repeat(16000) + "(" + "x".repeat(1000)];
      let worst = 0;
      for (const t of texts) {
        const t0 = performance.now();
        markdown(document.createElement("div"), t);
        worst = Math.max(worst, performance.now() - t0);
      }
      return worst;
    });
    holds(`inline Markdown of 50k-character lines under 250 ms each (slowest ${slowest.toFixed(0)} ms)`, slowest < 250);
    check("links still found", ["https://k3.example/a", "b"], await page.evaluate(() => {
      const d = document.createElement("div");
      markdown(d, "[x [b](https://k3.example/a) and [not](javascript:alert(1))");
      const a = d.querySelectorAll("a");
      return a.length === 1 ? [a[0].href, a[0].textContent] : [a.length];
    }));
    check("no image was requested", [], log.urls.filter((u) => ["/x", "/y", "/z"].includes(u)));
    check("stub: no console errors", [], log.errors);
    await page.screenshot({ path: `${shots}/k3-web-rendering.png`, fullPage: true });
    await ctx.close();
  }

  // ---- 2. The real k3-serve, started with --api-key --------------------------
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const log = watch(page);
  await page.goto(base);
  await page.waitForSelector("#notice:not([hidden])");
  const asked = await page.textContent("#notice");
  holds("no key: the page says one is needed and where", asked.includes("needs an API key") && asked.includes("Settings"));
  await settings(page, { "s-key": "not-the-key" });
  await page.waitForFunction(() => document.getElementById("notice").textContent.includes("refused"));
  holds("wrong key: the page says it was refused", (await page.textContent("#notice")).includes("refused the API key"));
  await settings(page, { "s-key": key });
  await page.waitForFunction(() => document.getElementById("model").textContent.includes("k3-tiny"));
  check("right key: notice gone", true, await page.evaluate(() => document.getElementById("notice").hidden));

  await settings(page, { "s-thinking": false, "s-max-tokens": "12" });
  await page.reload();
  clear(log);
  await page.waitForFunction(() => document.getElementById("model").textContent.includes("k3-tiny"));
  await page.waitForTimeout(200);
  check("load: no console errors", [], log.errors);
  check("load: no failed requests", [], log.failed);

  // A message sent: the streamed reply is the API's non-streamed answer.
  let sent = lastChatRequest(page);
  await sendKeys(page, "Name three colours.");
  await replyEnded(page);
  let api = await replay(await sent);
  let r = await lastReply(page);
  const answer = api.choices[0].message.content;
  holds("the API answered", answer.length > 0);
  check("streamed reply as stored equals the API's answer", answer, (await stored(page)).messages[1]?.content);
  check("streamed reply as shown equals the API's answer", squash(answer), squash(r.text));
  holds(`figures: tokens, s/token, TTFT, cached, bytes (shown: "${r.figures}")`,
    r.figures.includes(`${api.usage.completion_tokens} tokens`) && /s\/token/.test(r.figures) &&
    r.figures.includes("TTFT") && r.figures.includes("prompt tokens cached") && r.figures.includes("read/token"));

  // Regenerate: the same greedy reply, its prompt now continued from the kept state.
  await page.click(".msg.assistant .regenerate");
  await replyEnded(page);
  let conv = await stored(page);
  check("regenerate keeps two messages", 2, conv.messages.length);
  check("regenerated greedy reply is the same", answer, conv.messages[1]?.content);
  holds("regenerated prompt continued from the kept state", conv.messages[1]?.stats.cached > 0);

  // Shift+Enter is a new line, not a send.
  await page.click("#input");
  await page.keyboard.type("line one");
  await page.keyboard.press("Shift+Enter");
  await page.keyboard.type("line two");
  check("Shift+Enter adds a line", "line one\nline two", await page.inputValue("#input"));
  check("Shift+Enter sends nothing", 2, (await stored(page)).messages.length);
  await page.fill("#input", "");

  // Edit and resend the last user message.
  await page.click(".msg.user .edit");
  check("edit puts the message back", "Name three colours.", await page.inputValue("#input"));
  await page.fill("#input", "Name three animals.");
  sent = lastChatRequest(page);
  await page.press("#input", "Enter");
  await replyEnded(page);
  api = await replay(await sent);
  conv = await stored(page);
  check("edit replaces the message and its reply", ["Name three animals.", api.choices[0].message.content],
    conv.messages.map((m) => m.content));
  const animals = conv.id;

  // Thinking on: the reasoning streams, then is folded; a click opens it.
  await page.click("#new");
  check("new conversation is empty", 0, await page.evaluate(() => document.querySelectorAll(".msg").length));
  await settings(page, { "s-thinking": true, "s-effort": "max", "s-max-tokens": "40" });
  sent = lastChatRequest(page);
  await sendKeys(page, "Hello");
  await replyEnded(page);
  api = await replay(await sent);
  r = await lastReply(page);
  check("reasoning as the API gives it", api.choices[0].message.reasoning_content, r.reasoning);
  check("reasoning folded", false, r.open);
  await page.click(".msg.assistant details.reasoning summary");
  check("reasoning opens on click", true, (await lastReply(page)).open);

  // Stop: the stream ends and the server's slot frees.
  await page.click("#new");
  await settings(page, { "s-thinking": false, "s-max-tokens": "3000" });
  await sendKeys(page, "Tell me a long story.");
  await page.waitForFunction(() => {
    const b = document.querySelector(".msg.assistant .body");
    return b && b.textContent.length > 40;
  }, null, { timeout: 30000 });
  await page.click("#stop");
  await replyEnded(page);
  r = await lastReply(page);
  check("stopped reply marked", "stopped", r.state);
  holds("stopped figures say so", r.figures.includes("stopped"));
  let busy = NaN;
  for (let i = 0; i < 100; i++) {
    busy = await metric("k3_slots_busy");
    if (busy === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  check("slots busy after stop", 0, busy);
  const stoppedText = r.text;
  await page.waitForTimeout(300);
  check("stopped reply no longer grows", stoppedText, (await lastReply(page)).text);
  check("only the stopped stream failed", true,
    log.failed.every((f) => f.startsWith("POST ") && f.includes("/v1/chat/completions") && f.includes("ERR_ABORTED")));

  // A reload keeps the conversations.
  const titles = await page.evaluate(() => [...document.querySelectorAll("#list .open")].map((b) => b.textContent));
  await page.reload();
  await page.waitForFunction(() => document.getElementById("model").textContent.includes("k3-tiny"));
  check("reload keeps the list", titles,
    await page.evaluate(() => [...document.querySelectorAll("#list .open")].map((b) => b.textContent)));
  check("reload keeps the current conversation", stoppedText, (await lastReply(page)).text);
  await page.click(`#list li[data-id="${animals}"] .open`);
  check("a listed conversation opens", "Name three animals.", await page.textContent(".msg.user .body"));
  check("console errors while chatting", [], log.errors);

  check("the title follows the edited message", "Name three animals.", await page.textContent("#list li.current .open"));

  // Screenshots (desktop and phone width, light and dark) of a second turn with thinking on.
  await settings(page, { "s-thinking": true, "s-max-tokens": "40" });
  await sendKeys(page, "And three birds?");
  await replyEnded(page);
  check("a second turn", 4, (await stored(page)).messages.length);
  for (const [name, size] of [["desktop", { width: 1280, height: 800 }], ["phone", { width: 390, height: 844 }]]) {
    await page.setViewportSize(size);
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: `${shots}/k3-web-${name}-${scheme}.png` });
    }
  }
  await becomes(page, "phone width: the side panel is folded away", () =>
    document.getElementById("side").getBoundingClientRect().right <= 0);
  await page.click("#menu");
  await becomes(page, "phone width: the menu shows the side panel", () =>
    document.getElementById("side").getBoundingClientRect().left >= 0);
  await ctx.close();
} finally {
  await browser.close();
  stub.close();
}
done("web page checks");
