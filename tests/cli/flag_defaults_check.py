"""Compares every default a tool's --help states with the code's, and
requires every flag that takes a value to state one.

Usage: flag_defaults_check.py HELP_FILE DEFAULTS_FILE LABEL

HELP_FILE is the tool's rendered --help; DEFAULTS_FILE what the tool prints
with K3_FLAG_DEFAULTS=1 ("--flag<TAB>KIND<TAB>value" per line: switch,
required or optional, and the bound value before parsing).

Stated: every flag that takes a value and is shown in the help states what
happens without it. A required one is marked REQUIRED (CLI11's column); an
optional one says "(default X)", "default: X", "X (default)", CLI11's
"=X" after the type, or, when there is none, "(default: none)" (the one
wording for no default; a colon and more may follow it: "(default: none:
greedy)").

Compared: for each flag whose help states a default, X must be the code's
value (numbers compared as numbers). A flag whose code value is empty
(worked out at run time: "the model directory", "the plan's"), or one of
RUN_TIME, is not compared, and neither is a stated word ("none", "the
preset's") against a code value of 0 or less, the sentinel for "worked out
at run time" (a positive code value is a real default and must be stated
as that number).

Prints one FAIL line per disagreement or missing statement, then
"checked N" (the flags compared) and "stated N" (the flags taking a value
whose statement was found).
"""
import re
import sys

help_text = open(sys.argv[1]).read()
label = sys.argv[3]
code = {}
kind = {}
for line in open(sys.argv[2]).read().splitlines():
    flag, _, rest = line.partition("\t")
    flag_kind, _, value = rest.partition("\t")
    code[flag.split(" ")[-1]] = value
    kind[flag.split(" ")[-1]] = flag_kind

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
# "TEXT:{ids,line}", "INT:1..64=4" with its shown default), "REQUIRED",
# and "Excludes: --flag ..." / "Needs: --flag ...". The columns are kept
# apart: CLI11's "=X" states a default, REQUIRED that there is none.
# What follows a type's colon: "1..64", "{ids,line}", "PATH", "INT in [1 - 1000]", ">= 0".
TYPE_RANGE = r"(?::(?:INT in \[[^\]]*\]|>= [0-9]+|[^\s=]+))"
columns = {}
for names in entries:
    m = re.match(r"^\s*((?:[A-Z][A-Z_]+" + TYPE_RANGE + r"?(?:=\S+)?(?=\s|$))?(?:\s+\.\.\.)?(?:\s+REQUIRED)?)"
                 r"(?:\s+(?:Excludes|Needs):(?:\s+--[\w-]+)+)*\s*", entries[names])
    columns[names] = m.group(1)
    entries[names] = entries[names][m.end():]


def stated(text):
    # "(default 4096)", "(default 0: off)", "a: ...; b: ... (default)" (the
    # value a clause names before its colon), "low, high, max (default)",
    # "(...; default: none: stdin)".
    for pattern in (r"\(default:? ([^)]*?)\)", r"(?:^|; )([\w.-]+):[^;]*?\(default\)", r"default:? ([0-9][0-9.e+-]*)",
                    r"([\w.-]+) \(default\)", r"\(([\w.-]+), the default\)", r"\bdefault: ([^;)]+)"):
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

def shown_default(column):
    # CLI11's "TYPE=X" (a default the code shows through CLI11).
    m = re.match(r"^[A-Z][A-Z_]+" + TYPE_RANGE + r"?=(\S+)", column)
    return m.group(1) if m else None


def worked_out_at_run_time(said, value):
    # A word ("none", "the preset's") for a code value of 0 or less.
    n = as_number(value)
    return as_number(said) is None and n is not None and n <= 0


checked = 0
stated_count = 0
fails = 0
for names, text in entries.items():
    flag_kind = next((kind[n] for n in names if n in kind), None)
    said = stated(text) or shown_default(columns[names])
    if flag_kind == "required":
        if "REQUIRED" in columns[names] or said is not None:
            stated_count += 1
        else:
            print(f"FAIL {label} {names[0]}: required, but its help does not say so")
            fails += 1
    elif flag_kind == "optional":
        if said is not None:
            stated_count += 1
        else:
            print(f"FAIL {label} {names[0]}: takes a value, but its help states no default "
                  "(say \"(default X)\", or \"(default: none)\" when there is none)")
            fails += 1
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
    if worked_out_at_run_time(said_first, value):
        continue
    n_said, n_code = as_number(said_first), as_number(value)
    same = (said_first.lower() == "none" and value in ("", "[]")) or (n_said is not None and n_code is not None and n_said == n_code) or \
        said_first.lower() == value.lower() or (value.lower() in ("true", "false") and said_first.lower() in ("on", "off") and
                                                (value.lower() == "true") == (said_first.lower() == "on"))
    checked += 1
    if not same:
        print(f"FAIL {label} {names[0]}: --help says default {said!r}, the code's value is {value!r}")
        fails += 1
print(f"checked {checked}")
print(f"stated {stated_count}")
sys.exit(1 if fails else 0)
