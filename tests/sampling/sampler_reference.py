#!/usr/bin/env python3
"""Independent reference for k3's sampler (lib/sampling/sampler.h).

Implements MT19937-64 from its published definition (Matsumoto & Nishimura,
the parameters the C++ standard gives std::mt19937_64) and the documented
sampling steps, without using any k3 code. sampler_test.cpp pins the values
this script prints; re-run it to check them:  python3 sampler_reference.py
"""
import math

MASK = (1 << 64) - 1


class MT19937_64:
    N, M = 312, 156
    A = 0xB5026F5AA96619E9
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed):
        self.mt = [0] * self.N
        self.mt[0] = seed & MASK
        for i in range(1, self.N):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK
        self.index = self.N

    def _twist(self):
        for i in range(self.N):
            x = (self.mt[i] & self.UPPER) | (self.mt[(i + 1) % self.N] & self.LOWER)
            xa = x >> 1
            if x & 1:
                xa ^= self.A
            self.mt[i] = self.mt[(i + self.M) % self.N] ^ xa
        self.index = 0

    def next(self):
        if self.index >= self.N:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK


def raw_at(seed, position):
    g = MT19937_64(seed)
    for _ in range(position):
        g.next()
    return g.next()


def unit(x):
    return (x >> 11) * 2.0 ** -53


def candidates(logits, temp, top_k=0, top_p=1.0, min_p=0.0):
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
    if top_k > 0:
        order = order[:top_k]
    z0 = logits[order[0]] / temp
    w = [math.exp(logits[i] / temp - z0) for i in order]
    total = 0.0
    for x in w:
        total += x
    p = [x / total for x in w]
    n = len(order)
    if top_p < 1.0:
        cum = 0.0
        for i in range(n):
            cum += p[i]
            if cum >= top_p:
                n = i + 1
                break
    if min_p > 0.0:
        keep = 1
        while keep < n and p[keep] >= min_p * p[0]:
            keep += 1
        n = keep
    return order[:n], w[:n]


def penalise(logits, sequence, repetition=1.0, frequency=0.0, presence=0.0, last_n=64):
    """llama.cpp's repeat/frequency/presence penalties over the last last_n ids."""
    window = sequence if last_n < 0 else sequence[len(sequence) - min(last_n, len(sequence)):]
    out = list(logits)
    for i in sorted(set(window)):
        c = window.count(i)
        x = out[i] / repetition if out[i] > 0 else out[i] * repetition
        out[i] = x - c * frequency - presence
    return out


def pick(order, w, u):
    total = 0.0
    for x in w:
        total += x
    target = u * total
    cum = 0.0
    margin = float("inf")
    chosen = None
    for i, x in zip(order, w):
        margin = min(margin, abs(target - (cum + x)) / total)
        cum += x
        if chosen is None and target < cum:
            chosen = i
    return (chosen if chosen is not None else order[-1]), margin


# Multiples of 1/8: exact in float32, so C++ sees the same values.
LOGITS = [1.5, 2.25, -0.5, 2.25, 0.0, 3.0, 1.0, -1.25, 2.5, 0.75, 3.0, -2.0]

CASES = [
    # name, seed, first position, count, temp, top_k, top_p, min_p
    ("plain", 42, 0, 16, 1.0, 0, 1.0, 0.0),
    ("filtered", 12345, 100, 16, 0.7, 5, 0.85, 0.0),
    ("minp", 7, 3, 16, 0.7, 0, 1.0, 0.4),
    ("hot", 2**64 - 1, 7, 12, 2.5, 0, 1.0, 0.0),
]

# Top-p boundaries: running sums that land exactly on p, so `cum >= p` and
# `cum > p` keep different sets. Two tied top logits under top-k 2 give
# exactly 1/2 each; a level row of eight gives running sums k/8 exactly.
LEVEL = [0.625] * 8

BOUNDARY_CASES = [
    # name, row, seed, first position, count, temp, top_k, top_p, min_p
    ("half", LOGITS, 99, 0, 16, 0.7, 2, 0.5, 0.0),
    ("three-eighths", LEVEL, 2026, 5, 16, 1.0, 0, 0.375, 0.0),
    ("six-eighths", LEVEL, 31, 0, 16, 1.3, 0, 0.75, 0.0),
]

# Min-p boundaries: candidates whose probability equals min_p times the most
# likely one's exactly (tied logits give equal weights exp(0) = 1), so
# `p >= min_p * p0` and `p > min_p * p0` keep different sets.
MIN_P_BOUNDARY_CASES = [
    # name, row, seed, first position, count, temp, top_k, top_p, min_p
    ("tied-top", LOGITS, 17, 0, 16, 0.7, 0, 1.0, 1.0),
    ("level-under-top-k", LEVEL, 8, 2, 16, 1.0, 5, 1.0, 1.0),
]


def run(row, seed, first, count, temp, k, tp, mp):
    order, w = candidates(row, temp, k, tp, mp)
    g = MT19937_64(seed)
    for _ in range(first):
        g.next()
    ids, worst = [], 1.0
    for _ in range(count):
        chosen, margin = pick(order, w, unit(g.next()))
        ids.append(chosen)
        worst = min(worst, margin)
    return order, ids, worst


# Penalised: the row after penalties, then sampled as above.
PENALTY_SEQUENCE = [5, 10, 5, 3, 8, 5, 1, 10]
PENALTY_CASES = [
    # name, seed, first position, count, temp, repetition, frequency, presence, last_n
    ("penalised", 99, 8, 16, 1.0, 1.3, 0.25, 0.5, 6),
]

if __name__ == "__main__":
    print("raw seed 42:", [raw_at(42, p) for p in range(4)])
    print("raw seed 5489 at 9999:", raw_at(5489, 9999))
    for name, seed, first, count, temp, k, tp, mp in CASES:
        order, ids, worst = run(LOGITS, seed, first, count, temp, k, tp, mp)
        print(name, "kept", order, "ids", ids, "closest boundary %.3g" % worst)
    for name, row, seed, first, count, temp, k, tp, mp in BOUNDARY_CASES:
        order, ids, worst = run(row, seed, first, count, temp, k, tp, mp)
        print("top-p boundary", name, "kept", order, "ids", ids, "closest boundary %.3g" % worst)
    for name, row, seed, first, count, temp, k, tp, mp in MIN_P_BOUNDARY_CASES:
        order, ids, worst = run(row, seed, first, count, temp, k, tp, mp)
        print("min-p boundary", name, "kept", order, "ids", ids, "closest boundary %.3g" % worst)
    for name, seed, first, count, temp, rep, freq, pres, last_n in PENALTY_CASES:
        row = penalise(LOGITS, PENALTY_SEQUENCE, rep, freq, pres, last_n)
        order, w = candidates(row, temp)
        g = MT19937_64(seed)
        for _ in range(first):
            g.next()
        ids, worst = [], 1.0
        for _ in range(count):
            chosen, margin = pick(order, w, unit(g.next()))
            ids.append(chosen)
            worst = min(worst, margin)
        print(name, "row", row, "ids", ids, "closest boundary %.3g" % worst)
