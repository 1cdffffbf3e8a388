# k3-serve's layer-major passes on the tiny model (run by
# tests/serve/k3_serve_layer_major_test.sh), against k3-forward and against a
# server that runs prompts in 256-row passes (K3_PREFILL_CHUNK=256):
# - a long prompt takes one pass that evaluates prompt ids (its layers' weights
#   read once), and reads the bytes k3-forward's prefill reads for it; the
#   layer-major server lends its expert cache to each prompt pass
#   (K3_PREFILL_LEND=1, --cache-gb LENT_CACHE_GB): the reply is the unlent
#   server's, and /metrics shows the loan given back;
# - a long prompt and a decoding conversation at once: both sequences' ids and
#   logprobs equal k3-forward's for the same prompt and seed, and the long
#   prompt still takes one prompt pass (the decode row rides in it);
# - a client that goes away during a long prompt's pass stops it part-way
#   (k3_stopped_passes_total), the decoding conversation in that pass still
#   equals k3-forward, and the next request is unaffected;
# - a streamed reply's progress comments say the layer the pass is at.
# Usage: python3 layer_major_checks.py URL URL_256 BIN_DIR MODEL_DIR TRUNK WORK_DIR LOG LENT_CACHE_GB
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

url, url256, bindir, tiny, trunk, work, log, lent_cache_gb = sys.argv[1:9]
from check_tally import check, finish


def metrics(base):
    text = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
    return {m[1]: float(m[2]) for m in re.finditer(r"^(k3_\w+) (\S+)$", text, re.M)}


def post(base, body):
    req = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def stream(base, body, on_token=None):
    """A streamed completion: its ids' logprobs, in order."""
    body = dict(body, stream=True)
    req = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    lps = []
    with urllib.request.urlopen(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: {"):
                j = json.loads(line[6:])
                if j["choices"] and j["choices"][0].get("logprobs"):
                    lps += j["choices"][0]["logprobs"]["token_logprobs"]
                    if on_token:
                        on_token(len(lps))
    return lps


def forward(ids, gen, seed, *flags, env=None):
    """k3-forward's logprobs for `ids`, sampled at 0.9 with `seed`, and its --stats-json."""
    with open(f"{work}/ids.txt", "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    subprocess.run([f"{bindir}/k3-forward", tiny, "--ids", f"{work}/ids.txt", "--gen", str(gen), "--threads", "2",
                    "--temp", "0.9", "--seed", str(seed), "--logprobs", "2", "--logprobs-file", f"{work}/lp.jsonl",
                    "--stats-json", f"{work}/stats.json", *flags], capture_output=True, text=True, check=True,
                   env=dict(os.environ, **(env or {})))
    return [json.loads(x)["logprob"] for x in open(f"{work}/lp.jsonl")], json.load(open(f"{work}/stats.json"))


def request(ids, gen, seed):
    return {"prompt": ids, "max_tokens": gen, "temperature": 0.9, "seed": seed, "logprobs": 2}


prompt = [int(x) for x in open(f"{tiny}/prompt_ids.txt").read().split()]
# Prompts that share no first id (no kept state continues another).
def long_prompt(first, n):
    return [first] + [(7 * i + first) % 8000 for i in range(1, n)]


# 1. One long prompt alone: one prompt pass here, three of 256 rows there; the
#    bytes k3-forward's prefill reads. The layer-major server lends its
#    expert cache to every prompt pass (K3_PREFILL_LEND=1), the other keeps
#    none: the same reply, and the loan given back.
lp700 = long_prompt(11, 700)
figures, replies = {}, {}
for name, base in (("layer-major", url), ("256-row passes", url256)):
    m0 = metrics(base)
    r = post(base, request(lp700, 1, 5))
    m1 = metrics(base)
    replies[name] = r["choices"][0]
    figures[name] = (m1["k3_prefill_passes_total"] - m0["k3_prefill_passes_total"],
                     m1["k3_bytes_read_total"] - m0["k3_bytes_read_total"],
                     m1["k3_expert_cache_lends_total"] - m0["k3_expert_cache_lends_total"],
                     m1["k3_expert_cache_reclaims_total"] - m0["k3_expert_cache_reclaims_total"],
                     m1["k3_expert_cache_lent_slots"])
    check(f"{name}: the long prompt's first id is k3-forward's", forward(lp700, 1, 5)[0],
          r["choices"][0]["logprobs"]["token_logprobs"])
check("the lent pass's reply = the unlent one's (text and logprobs)", replies["256-row passes"],
      replies["layer-major"])
check("layer-major: the prompt pass borrowed the expert cache and gave it back (lends, reclaims, slots lent)",
      (1.0, 1.0, 0.0), figures["layer-major"][2:])
check("256-row passes: no cache, no loan", (0.0, 0.0, 0.0), figures["256-row passes"][2:])
fwd_stats = forward(lp700, 1, 5, "--trunk", trunk, "--trunk-gb", "0", "--cache-gb", lent_cache_gb,
                    env={"K3_PREFILL_LEND": "1"})[1]
print("700-id prompt: prompt passes and bytes read:", figures, "k3-forward prefill:", fwd_stats.get("prefill"))
check("layer-major: one prompt pass", 1.0, figures["layer-major"][0])
check("256-row passes: three", 3.0, figures["256-row passes"][0])
check("layer-major: the bytes k3-forward's prefill reads for the prompt",
      fwd_stats["prefill"]["trunk_bytes"] + fwd_stats["prefill"]["expert_bytes"], figures["layer-major"][1])
holds = figures["layer-major"][1] * 2 < figures["256-row passes"][1]
check("layer-major reads under half the bytes of 256-row passes", True, holds)

# 2. The long prompt arrives while another conversation decodes: both equal
#    k3-forward, and the long prompt is still one prompt pass.
short_ref = forward(prompt, 40, 7)[0]
lp900 = long_prompt(13, 900)
long_ref = forward(lp900, 6, 3)[0]
for name, base, want in (("layer-major", url, 2.0), ("256-row passes", url256, 5.0)):
    m0 = metrics(base)
    started = threading.Event()
    got = {}
    t = threading.Thread(target=lambda: got.update(short=stream(base, request(prompt, 40, 7),
                                                                lambda n: n >= 3 and started.set())))
    t.start()
    started.wait(120)
    got["long"] = post(base, request(lp900, 6, 3))["choices"][0]["logprobs"]["token_logprobs"]
    t.join()
    m1 = metrics(base)
    check(f"{name}: the decoding conversation's logprobs = k3-forward's", short_ref, got.get("short"))
    check(f"{name}: the long prompt's logprobs = k3-forward's", long_ref, got["long"])
    check(f"{name}: prompt passes (the short prompt's and the long one's)", want,
          m1["k3_prefill_passes_total"] - m0["k3_prefill_passes_total"])

# 3. A client that goes away within a long prompt's pass: the pass stops
#    part-way, the decoding conversation in it is unaffected, the next
#    request too.
lp = long_prompt(17, 3000)
m0 = metrics(url)
started = threading.Event()
got = {}
t = threading.Thread(target=lambda: got.update(short=stream(url, request(prompt, 40, 7),
                                                            lambda n: n >= 3 and started.set())))
t.start()
started.wait(120)
body = json.dumps(request(lp, 4, 3)).encode()
host, port = re.match(r"http://([^:]+):(\d+)", url).groups()
sock = socket.create_connection((host, int(port)))
lines0 = open(log).read().count("\n")
sock.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n".encode()
             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
# Gone once the log says the pass is at a layer (a line per layer step here).
deadline = time.time() + 120
while time.time() < deadline:
    tail = open(log).read().split("\n")[lines0:]
    if any(re.match(r"k3-serve: prompt 0 / 3,000, layer \d+ of 13", x) for x in tail):
        break
    time.sleep(0.01)
sock.close()
while time.time() < deadline and metrics(url)["k3_stopped_passes_total"] == m0["k3_stopped_passes_total"]:
    time.sleep(0.05)
t.join()
m1 = metrics(url)
check("the gone client's pass stopped part-way", 1.0, m1["k3_stopped_passes_total"] - m0["k3_stopped_passes_total"])
check("the conversation decoding in the stopped pass = k3-forward", short_ref, got.get("short"))
lines = open(log).read().split("\n")[lines0:]
progress = [x for x in lines if x.startswith("k3-serve: prompt 0 / 3,000")]
check("progress says the layer, the rate and the time left", True,
      any(re.fullmatch(r"k3-serve: prompt 0 / 3,000, layer \d+ of 13, [0-9,]+ tokens/s, .+ left", x)
          for x in progress))
nxt = long_prompt(17, 700)  # the stopped prompt's first 700 ids: nothing of it was kept
r = post(url, request(nxt, 4, 3))
check("the next request = k3-forward", forward(nxt, 4, 3)[0], r["choices"][0]["logprobs"]["token_logprobs"])
check("the next request continues no state of the stopped one", 0,
      r["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0))

# 4. A streamed reply says where the layer-major pass is: besides
#    ": prefill DONE/TOTAL", a comment line ": layer I of 13, R tokens/s, T left".
body = json.dumps(dict(request(long_prompt(19, 3000), 2, 3), stream=True)).encode()
req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=300) as r:
    comments = [x for x in r.read().decode().split("\n") if x.startswith(":")]
check("the stream's progress says the layer", True,
      any(re.fullmatch(r": layer \d+ of 13, [0-9,]+ tokens/s, .+ left", x) for x in comments))
check("and the prefill ids, the last TOTAL/TOTAL", ": prefill 3000/3000",
      [x for x in comments if x.startswith(": prefill")][-1])

finish("layer_major_checks")
