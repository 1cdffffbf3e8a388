#!/usr/bin/env python3
"""The side-by-side table of a bench/llamacpp/e2e.sh bench run: medians over reps.

    e2e_table.py RESULTS_DIR

Reads k3-t{T}.{rep}.json (k3-forward --stats-json) and llama-t{T}.{rep}.jsonl
(llama-bench -o jsonl) and prints one markdown row per thread count.
"""
import glob
import json
import re
import statistics
import sys


def main() -> None:
    if len(sys.argv) != 2:
        print(__doc__.strip())
        sys.exit(2)
    res = sys.argv[1]
    k3: dict[int, dict[str, list[float]]] = {}
    llama: dict[int, dict[str, list[float]]] = {}
    prompt = gen = None
    for path in sorted(glob.glob(f"{res}/k3-t*.json")):
        t = int(re.search(r"k3-t(\d+)\.", path).group(1))
        s = json.load(open(path))
        prompt = s["prompt_tokens"]
        row = k3.setdefault(t, {"pp": [], "tg": []})
        row["pp"].append(s["prompt_tokens"] / s["prefill"]["seconds"])
        row["tg"].append(s["decode"]["s_per_token"])
    for path in sorted(glob.glob(f"{res}/llama-t*.jsonl")):
        t = int(re.search(r"llama-t(\d+)\.", path).group(1))
        row = llama.setdefault(t, {"pp": [], "tg": []})
        for line in open(path):
            if not line.strip():
                continue
            r = json.loads(line)
            if r["n_gen"] == 0:
                row["pp"].append(r["avg_ts"])
            else:
                gen = r["n_gen"]
                row["tg"].append(1.0 / r["avg_ts"])
    loads = [float(m.group(1)) for m in re.finditer(r"load (\d+\.\d+)", open(f"{res}/load.txt").read())]
    print(f"prompt {prompt} tokens, decode {gen} tokens after it; medians of "
          f"{min(len(v['pp']) for v in k3.values())} interleaved runs; 1-min load {min(loads):.2f}-{max(loads):.2f}")
    print("| threads | k3 prefill tok/s | llama.cpp prefill tok/s | k3/llama.cpp (speed) "
          "| k3 decode s/token | llama.cpp decode s/token | k3/llama.cpp (time) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for t in sorted(k3):
        kp, lp = statistics.median(k3[t]["pp"]), statistics.median(llama[t]["pp"])
        kt, lt = statistics.median(k3[t]["tg"]), statistics.median(llama[t]["tg"])
        print(f"| {t} | {kp:.2f} | {lp:.2f} | {kp / lp:.2f} | {kt:.4f} | {lt:.4f} | {kt / lt:.2f} |")
    for t in sorted(k3):
        print(f"threads {t}: k3 prefill tok/s {['%.2f' % x for x in k3[t]['pp']]}, llama.cpp {['%.2f' % x for x in llama[t]['pp']]}; "
              f"k3 decode s/token {['%.4f' % x for x in k3[t]['tg']]}, llama.cpp {['%.4f' % x for x in llama[t]['tg']]}")


if __name__ == "__main__":
    main()
