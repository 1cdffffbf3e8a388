"""Compares every default a tool's --help states with the code's.

Usage: flag_defaults_check.py HELP_FILE DEFAULTS_FILE LABEL

HELP_FILE is the tool's rendered --help; DEFAULTS_FILE what the tool prints
with K3_FLAG_DEFAULTS=1 ("--flag<TAB>value" per line: the bound value before
parsing). For each flag whose help says "(default X)", "default: X" or
"X (default)", X must be the code's value (numbers compared as numbers).
A flag whose code value is empty (worked out at run time: "the model
directory", "the plan's"), or one of RUN_TIME, is not compared. Prints one FAIL line per
disagreement, then "checked N" (the flags compared).
"""
import re
import sys

help_text = open(sys.argv[1]).read()
label = sys.argv[3]
code = {}
for line in open(sys.argv[2]).read().splitlines():
    flag, _, value = line.partition("\t")
    code[flag.split(" ")[-1]] = value

# The help's option entries: a line starting with spaces then a flag, and
# the deeper-indented lines after it (CLI11 wraps descriptions).
entries = {}
current = None
for line in help_text.splitlines():
    m = re.match(r"^\s{1,4}(?:-\w, ?)?((?:--[\w-]+,? ?)+)", line)
    if m:
        names = re.findall(r"--[\w-]+", m.group(1))
        current = names
        entries[tuple(names)] = line[m.end():]
    elif current and line.startswith("      "):
        entries[tuple(current)] += " " + line.strip()
    else:
        current = None
# The descriptions, without CLI11's columns: the type ("UINT",
# "TEXT:{ids,line}") and "Excludes: --flag ..." / "Needs: --flag ...".
for names in entries:
    entries[names] = re.sub(r"^\s*(?:[A-Z][A-Z_]+(?::\S*)?(?=\s|$))?(?:\s+(?:Excludes|Needs):(?:\s+--[\w-]+)+)*\s*", "",
                            entries[names])


def stated(text):
    # "(default 4096)", "(default 0: off)", "a: ...; b: ... (default)" (the
    # value a clause names before its colon), "low, high, max (default)".
    for pattern in (r"\(default:? ([^)]*?)\)", r"(?:^|; )([\w.-]+):[^;]*?\(default\)", r"default:? ([0-9][0-9.e+-]*)",
                    r"([\w.-]+) \(default\)", r"\(([\w.-]+), the default\)"):
        m = re.search(pattern, text)
        if m:
            return m.group(1).strip()
    return None


def as_number(text):
    text = text.replace(",", "").replace("_", "")
    m = re.fullmatch(r"(-?[0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?)(?: ?[A-Za-z%]*)?", text)
    return float(m.group(1)) if m else None


# Flags the code binds to 0 and works out at run time: --ctx from the plan
# (help_defaults_test checks it against --plan), --read-gbps (0: the 2 GB/s
# a forecast assumes when nothing was measured).
RUN_TIME = {"--ctx", "--read-gbps"}

checked = 0
fails = 0
for names, text in entries.items():
    said = stated(text)
    if said is None:
        continue
    value = next((code[n] for n in names if n in code), None)
    if value is None:
        print(f"FAIL {label} {names[0]}: its help states a default, but the tool has no such flag")
        fails += 1
        continue
    if value == "" or names[0] in RUN_TIME or any(n in RUN_TIME for n in names):
        continue
    said_first = re.split(r"[;:,]| or ", said)[0].strip()
    n_said, n_code = as_number(said_first), as_number(value)
    same = (n_said is not None and n_code is not None and n_said == n_code) or \
        said_first.lower() == value.lower() or (value.lower() in ("true", "false") and said_first.lower() in ("on", "off") and
                                                (value.lower() == "true") == (said_first.lower() == "on"))
    checked += 1
    if not same:
        print(f"FAIL {label} {names[0]}: --help says default {said!r}, the code's value is {value!r}")
        fails += 1
print(f"checked {checked}")
sys.exit(1 if fails else 0)
