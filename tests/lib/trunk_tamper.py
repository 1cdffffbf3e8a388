#!/usr/bin/env python3
"""Edits the tensor table of a packed trunk the way a damaged or hand-edited
trunk.json would be, for the tests of the checks that must refuse it
(k3-doctor, k3-pack --check, k3-forward).

  trunk_tamper.py KIND TRUNK_DIR

rewrites TRUNK_DIR/trunk.json in place and prints the entry the refusal must
name (a tensor, or "section S" / "block N"). KIND is one of the names in
EDITS below; the ones starting with "block" need a trunk packed with
--compress (their blocks carry stored sizes). All but block_shifted are
visible in trunk.json alone; block_shifted keeps every stored size within
its bounds and their sum, so only reading trunk.bin shows it.
"""
import json
import os
import sys


def layer(d, i=1):
    return [s for s in d["sections"] if s["name"] == f"layer.{i}"][0]


def same_shape_pair(tensors):
    for a in range(len(tensors)):
        for b in range(a + 1, len(tensors)):
            x, y = tensors[a], tensors[b]
            if x["shape"] == y["shape"] and x["dtype"] == y["dtype"]:
                return x, y
    raise SystemExit("no two tensors of one shape in the section")


def offset_plus_4(d):  # a tensor moved by 4 bytes
    t = layer(d)["tensors"][1]
    t["offset"] += 4
    return t["name"]


def alias(d):  # a tensor aliased to the one before it
    ts = layer(d)["tensors"]
    ts[2]["offset"] = ts[1]["offset"]
    return ts[2]["name"]


def swap(d):  # two names of one shape swapped: same bytes, other meaning
    x, y = same_shape_pair(layer(d)["tensors"])
    x["name"], y["name"] = y["name"], x["name"]
    return x["name"]


def moved_to_end(d):  # a tensor moved to the end of its section
    s = layer(d)
    t = s["tensors"][0]
    t["offset"] = (s["offset"] + s["length"] - t["nbytes"]) // 4096 * 4096
    return t["name"]


def head_alias(d):  # a head tensor's offset set to another's
    ts = [s for s in d["sections"] if s["name"] == "head"][0]["tensors"]
    ts[-1]["offset"] = ts[0]["offset"]
    return ts[-1]["name"]


def nbytes(d):  # a tensor claiming fewer bytes than its shape holds
    t = layer(d)["tensors"][1]
    t["nbytes"] -= 2
    return t["name"]


def section_moved(d):  # a section stored one page further on
    s = layer(d, 2)
    s["stored_offset"] += 4096
    return "section " + s["name"]


def compressed_blocks(d):
    s = layer(d, 0)
    if not s.get("compressed"):
        raise SystemExit("block edits need a trunk packed with --compress")
    return s["blocks"]


def decoded_sizes(d, s):  # each block's decoded size: every tensor cut into block_bytes pieces
    return [min(d["block_bytes"], t["nbytes"] - at) for t in s["tensors"] for at in range(0, t["nbytes"], d["block_bytes"])]


def block_over(d):  # a block one byte over its decoded size plus the codec header
    b = compressed_blocks(d)
    b[0][0] = decoded_sizes(d, layer(d, 0))[0] + 9
    return "section layer.0 block 0 claims"


def block_huge(d):  # a block larger than its whole section
    b = compressed_blocks(d)
    b[1][0] = 1 << 30
    return "section 'layer.0'"


def block_under(d):  # a block shorter than the codec's header
    b = compressed_blocks(d)
    b[0][0] = 7
    return "block 0"


def block_sum(d):  # the largest block shrunk by more than a page: the section's blocks no longer fill it
    b = compressed_blocks(d)
    k = max(range(len(b)), key=lambda i: b[i][0])
    b[k][0] -= 8192
    return "section layer.0 has stored_length"


def block_shifted(d):  # one byte moved from block 0 to block 1: every size in bounds, the sum unchanged
    b = compressed_blocks(d)
    b[0][0] -= 1
    b[1][0] += 1
    return "section layer.0 block"


EDITS = {f.__name__: f for f in (offset_plus_4, alias, swap, moved_to_end, head_alias, nbytes, section_moved,
                                 block_over, block_huge, block_under, block_sum, block_shifted)}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in EDITS:
        raise SystemExit("usage: trunk_tamper.py {" + ",".join(EDITS) + "} TRUNK_DIR")
    path = os.path.join(sys.argv[2], "trunk.json")
    with open(path) as f:
        d = json.load(f)
    entry = EDITS[sys.argv[1]](d)
    with open(path, "w") as f:
        json.dump(d, f, indent=1)
    print(entry)
