# k3-serve's logprobs / top_logprobs, n and logit_bias against k3-forward on
# the tiny model (run by tests/serve/k3_serve_token_controls_test.sh).
# Usage: python3 token_controls_checks.py URL BIN_DIR MODEL_DIR WORK_DIR
import json
import subprocess
import sys
import urllib.error
import urllib.request

url, bindir, tiny, work = sys.argv[1:5]
from check_tally import check, finish


def post(path, body):
    """(status, parsed body) of a non-streamed request."""
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def stream(path, body):
    """The parsed data events of a streamed request, and whether [DONE] ended it."""
    body = dict(body, stream=True)
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    events, done = [], 0
    with urllib.request.urlopen(req, timeout=120) as r:
        for line in r.read().decode().split("\n"):
            if line == "data: [DONE]":
                done += 1
            elif line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events, done


def forward(ids, gen, top, *flags):
    """k3-forward's ids and --logprobs lines for `ids`."""
    with open(f"{work}/ids.txt", "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    out = subprocess.run([f"{bindir}/k3-forward", tiny, "--ids", f"{work}/ids.txt", "--gen", str(gen), "--threads",
                          "2", "--logprobs", str(top), "--logprobs-file", f"{work}/lp.jsonl", *flags],
                         capture_output=True, text=True, check=True).stdout
    lines = [json.loads(x) for x in open(f"{work}/lp.jsonl")]
    return [int(x) for x in out.split()], lines


def detok(ids):
    return subprocess.run([f"{bindir}/k3-detok", "--tok", tiny], input=" ".join(map(str, ids)), capture_output=True,
                          text=True, check=True).stdout


prompt = [int(x) for x in open(f"{tiny}/prompt_ids.txt").read().split()]

# ---- logprobs: completions (legacy shape) equal k3-forward --logprobs, greedy and sampled.
for name, fields, flags in [("greedy", {}, []),
                            ("sampled", {"temperature": 0.9, "seed": 7}, ["--temp", "0.9", "--seed", "7"])]:
    status, r = post("/v1/completions", {"prompt": prompt, "max_tokens": 12, "logprobs": 5, **fields})
    check(f"completions {name}: status", 200, status)
    lp = r["choices"][0]["logprobs"]
    ids, fwd = forward(prompt, 12, 5, *flags)
    check(f"completions {name}: one entry per generated id", r["usage"]["completion_tokens"], len(lp["token_logprobs"]))
    check(f"completions {name}: text = k3-forward's", detok(ids), r["choices"][0]["text"])
    check(f"completions {name}: token_logprobs = k3-forward's", [x["logprob"] for x in fwd], lp["token_logprobs"])
    check(f"completions {name}: 5 top ids", [5] * len(fwd), [len(t) for t in lp["top_logprobs"]])
    check(f"completions {name}: top values = k3-forward's", [sorted(t["logprob"] for t in x["top"]) for x in fwd],
          [sorted(t.values()) for t in lp["top_logprobs"]])
    offsets = [0]
    for t in lp["tokens"][:-1]:
        offsets.append(offsets[-1] + len(t.encode()))
    check(f"completions {name}: text_offset counts the tokens' bytes", offsets, lp["text_offset"])

# ---- logprobs: chat shape, against k3-forward over the rendered prompt; streamed = non-streamed.
chat = {"messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 10,
        "chat_template_kwargs": {"thinking": False}, "logprobs": True, "top_logprobs": 2}
status, r = post("/v1/chat/completions", chat)
check("chat: status", 200, status)
content = r["choices"][0]["logprobs"]["content"]
check("chat: one entry per generated id", r["usage"]["completion_tokens"], len(content))
_, tok = post("/tokenize", {"messages": chat["messages"], "chat_template_kwargs": {"thinking": False}})
_, fwd = forward(tok["tokens"], 10, 2)
n = len(content)
check("chat: logprobs = k3-forward's over the rendered prompt", [x["logprob"] for x in fwd][:n],
      [c["logprob"] for c in content])
check("chat: top_logprobs = k3-forward's", [[t["logprob"] for t in x["top"]] for x in fwd][:n],
      [[t["logprob"] for t in c["top_logprobs"]] for c in content])
check("chat: bytes are the token's text", True,
      all(bytes(c["bytes"]).decode("utf-8", "replace") == c["token"] for c in content))
check("chat: the chosen id is in its top 2 when greedy", True,
      all(c["top_logprobs"][0]["logprob"] == c["logprob"] for c in content))
events, done = stream("/v1/chat/completions", chat)
streamed = [e for ev in events for ch in ev["choices"] if ch.get("logprobs") for e in ch["logprobs"]["content"]]
check("chat streamed: logprobs = non-streamed", content, streamed)
check("chat streamed: one [DONE]", 1, done)
status, r = post("/v1/chat/completions", dict(chat, top_logprobs=None))
check("chat logprobs without top_logprobs: no top ids", [[]] * len(r["choices"][0]["logprobs"]["content"]),
      [c["top_logprobs"] for c in r["choices"][0]["logprobs"]["content"]])
status, r = post("/v1/chat/completions", dict(chat, logprobs=None, top_logprobs=None))
check("chat without logprobs: null", None, r["choices"][0]["logprobs"])

# ---- n: choice i equals the n = 1 request with seed + i; usage counts every choice's ids.
sampled = {"prompt": prompt, "max_tokens": 8, "temperature": 1.0, "seed": 5}
status, r = post("/v1/completions", dict(sampled, n=3))
check("n=3: status", 200, status)
check("n=3: indexes", [0, 1, 2], [c["index"] for c in r["choices"]])
singles = [post("/v1/completions", dict(sampled, seed=5 + i))[1] for i in range(3)]
check("n=3: choice i = seed + i", [s["choices"][0]["text"] for s in singles], [c["text"] for c in r["choices"]])
check("n=3: usage sums the choices", sum(s["usage"]["completion_tokens"] for s in singles),
      r["usage"]["completion_tokens"])
check("n=3: the prompt counted once", len(prompt), r["usage"]["prompt_tokens"])
check("n=3: the seeds give different texts", 3, len({c["text"] for c in r["choices"]}))
status, r = post("/v1/completions", dict(sampled, n=2, logprobs=1))
check("n=2 with logprobs: each choice's = its single's", [s["choices"][0]["logprobs"]["token_logprobs"] for s in
                                                          [post("/v1/completions", dict(sampled, seed=5 + i, logprobs=1))[1]
                                                           for i in range(2)]],
      [c["logprobs"]["token_logprobs"] for c in r["choices"]])
chat_n = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "temperature": 1.0, "seed": 9, "n": 2,
          "chat_template_kwargs": {"thinking": False}, "stream_options": {"include_usage": True}}
status, whole = post("/v1/chat/completions", chat_n)
events, done = stream("/v1/chat/completions", chat_n)
texts = ["", ""]
finishes = [None, None]
for ev in events:
    for ch in ev["choices"]:
        texts[ch["index"]] += ch["delta"].get("content", "")
        finishes[ch["index"]] = ch["finish_reason"] or finishes[ch["index"]]
check("chat n=2 streamed: each choice = non-streamed", [c["message"]["content"] for c in whole["choices"]], texts)
check("chat n=2 streamed: finish reasons", [c["finish_reason"] for c in whole["choices"]], finishes)
check("chat n=2 streamed: one usage chunk", [whole["usage"]["completion_tokens"]],
      [ev["usage"]["completion_tokens"] for ev in events if ev.get("usage")])
check("chat n=2 streamed: one [DONE]", 1, done)

# n shares the weight passes: with a slot per choice, three choices take the passes one does (the
# end-of-sequence id banned, so every choice runs to max_tokens; fresh prompts, so no kept state helps).
def weight_passes():
    with urllib.request.urlopen(url + "/metrics", timeout=60) as r:
        for line in r.read().decode().split("\n"):
            if line.startswith("k3_weight_passes_total "):
                return float(line.split()[1])


eos = json.load(open(f"{tiny}/config.json"))["eos_token_id"]
passes_of = {}
for n, first in [(1, 11), (3, 12)]:
    before = weight_passes()
    status, r = post("/v1/completions", {"prompt": [first] + prompt, "max_tokens": 8, "temperature": 1.0, "n": n,
                                         "logit_bias": {str(eos): -100}})
    check(f"n={n} without eos: every choice runs to max_tokens", 8 * n, r["usage"]["completion_tokens"])
    passes_of[n] = weight_passes() - before
print(f"weight passes: n=1 {passes_of[1]:.0f}, n=3 {passes_of[3]:.0f}")
# Choices admitted a pass or two apart (a loaded machine) add a pass each;
# choices that did not share would take 3 x the passes.
check(f"n=3 shares the passes of n=1 ({passes_of[1]:.0f}; fewer than 2 x while the choices join)", True,
      passes_of[3] < 2 * passes_of[1])

# ---- logit_bias: added to the logit; the reported logprobs stay the model's.
_, fwd = forward(prompt, 1, 5)
best, second = fwd[0]["top"][0], fwd[0]["top"][1]
status, r = post("/v1/completions", {"prompt": prompt, "max_tokens": 1, "logprobs": 0,
                                     "logit_bias": {str(best["id"]): -100}})
check("logit_bias -100 on the greedy id: status", 200, status)
check("logit_bias -100 on the greedy id: the second id instead", detok([second["id"]]), r["choices"][0]["text"])
check("logit_bias: the logprob reported is the model's", [second["logprob"]],
      r["choices"][0]["logprobs"]["token_logprobs"])
status, r = post("/v1/completions", {"prompt": prompt, "max_tokens": 4, "logit_bias": {"1000": 100}})
check("logit_bias +100: that id every time", detok([1000] * 4), r["choices"][0]["text"])
status, r = post("/v1/completions", {"prompt": prompt, "max_tokens": 4, "logit_bias": {"1000": 0.5}})
check("logit_bias 0.5: the greedy text unchanged", detok(forward(prompt, 4, 0)[0]), r["choices"][0]["text"])

# ---- refusals: a 400 naming the field.
msg = [{"role": "user", "content": "hi"}]
for name, path, body, param, text in [
        ("top_logprobs without logprobs", "/v1/chat/completions", {"messages": msg, "top_logprobs": 2},
         "top_logprobs", "needs \"logprobs\": true"),
        ("top_logprobs 21", "/v1/chat/completions", {"messages": msg, "logprobs": True, "top_logprobs": 21},
         "top_logprobs", "from 0 to 20"),
        ("chat logprobs 3", "/v1/chat/completions", {"messages": msg, "logprobs": 3}, "logprobs", "true or false"),
        ("completions logprobs true", "/v1/completions", {"prompt": "a", "logprobs": True}, "logprobs", "from 0 to 20"),
        ("n 17", "/v1/completions", {"prompt": "a", "n": 17}, "n", "from 1 to 16"),
        ("n 0", "/v1/chat/completions", {"messages": msg, "n": 0}, "n", "from 1 to 16"),
        ("logit_bias outside the vocabulary", "/v1/completions",
         {"prompt": "a", "logit_bias": {"5": 1, "999999": 1, "8999999": -1}}, "logit_bias",
         "logit_bias: ids 999999, 8999999 are outside the vocabulary"),
        ("logit_bias 101", "/v1/completions", {"prompt": "a", "logit_bias": {"5": 101}}, "logit_bias.5",
         "must be a number from -100 to 100 (found 101)"),
        ("logit_bias key", "/v1/chat/completions", {"messages": msg, "logit_bias": {"x1": 1}}, "logit_bias.x1",
         "must be a token id"),
        ("logit_bias list", "/v1/completions", {"prompt": "a", "logit_bias": [1]}, "logit_bias", "must be an object"),
        ("echo", "/v1/completions", {"prompt": "a", "echo": True}, "echo", "is not supported")]:
    status, r = post(path, body)
    check(f"{name}: status", 400, status)
    check(f"{name}: param", param, r.get("error", {}).get("param"))
    check(f"{name}: message", True, text in r.get("error", {}).get("message", ""))

# The vocabulary's last id is served; the next one is refused (the refusal names the range).
status, r = post("/v1/completions", {"prompt": "a", "logit_bias": {"999999": 1}})
last = int(r["error"]["message"].split("(0..")[1].split(")")[0])
status, r = post("/v1/completions", {"prompt": prompt, "max_tokens": 1, "logit_bias": {str(last): 1}})
check("logit_bias on the last id: served", 200, status)
status, r = post("/v1/completions", {"prompt": prompt, "max_tokens": 1, "logit_bias": {str(last + 1): 1}})
check("logit_bias one past the last id: refused", [400, f"logit_bias: ids {last + 1} are outside the vocabulary (0..{last})"],
      [status, r.get("error", {}).get("message")])

finish("token_controls_checks")
