#!/usr/bin/env bash
# Each tool's --help states the defaults its code uses: every "(default N)"
# of the flags a memory plan shows (--ctx, --plan's context, k3-serve's
# --slots and --keep-mb) is read from the rendered --help and compared with
# what --plan plans when the flag is not given; every flag a tool's help
# names (--gen, --batch, ...) is one that tool takes. Then every tool (and
# subcommand): each default its --help states for any flag ("(default X)",
# "X (default)") is the value the code binds the flag to before parsing
# (K3_FLAG_DEFAULTS=1 prints those; tests/cli/flag_defaults_check.py compares),
# and every flag that takes a value states its default, "(default: none)"
# when it has none, or is marked REQUIRED.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

help_default() {  # help_default TOOL FLAG: the N of "(default N" in FLAG's help line
  "$BIN/$1" --help | awk -v f="$2" '$1 == f || index($1, f ",") == 1 {on = 1} on {print; if (/\)/) exit}' |
    tr '\n' ' ' | sed -nE 's/.*default[: ]*(otherwise )?([0-9]+).*/\2/p; s/.*otherwise ([0-9]+)\).*/\1/p' | tail -1
}
planned() {  # planned TOOL ARGS...: a --preset laptop plan's (no packed trunk: nothing sized for it) "x N positions[ x S sequences]" and kept states
  "$BIN/$1" "$TINY" --preset laptop "${@:2}" --plan < /dev/null 2>&1 > /dev/null | grep -E 'MLA latent cache|kept states'
}

for tool in k3-forward k3-chat k3-serve; do
  "$BIN/$tool" --help > "$work/$tool.help"
  # The flags named in a help text are the tool's own.
  for named in $(grep -oE -- '--[a-z][a-z-]+' "$work/$tool.help" | sort -u); do
    holds "$tool --help names $named, which it takes" "grep -qE -- '^ +(-[a-zA-Z], ?)?(--[a-z-]+,)*$named[ ,=]' '$work/$tool.help'"
  done
done

plan_ctx=$(grep -A2 -E '^ +--plan' "$work/k3-forward.help" | tr '\n' ' ' | sed -nE 's/.*--ctx \(default ([0-9]+)\).*/\1/p')
check "k3-forward --help states --plan's context" 4096 "$plan_ctx"
contains "k3-forward --plan plans it" "x $plan_ctx positions" "$(planned k3-forward)"

chat_ctx=$(help_default k3-chat --ctx)
check "k3-chat --help states --ctx's default" 8192 "$chat_ctx"
contains "k3-chat --plan plans it" "x $chat_ctx positions" "$(planned k3-chat)"

serve_ctx=$(help_default k3-serve --ctx)
slots=$(help_default k3-serve --slots)
keep=$(help_default k3-serve --keep-mb)
check "k3-serve --help states --ctx's default without a preset" 8192 "$serve_ctx"
check "k3-serve --help states --slots' default" 4 "$slots"
check "k3-serve --help states --keep-mb's default" 512 "$keep"
plan=$(planned k3-serve)
contains "k3-serve --plan plans them" "x $serve_ctx positions x $slots sequences" "$plan"
contains "k3-serve --plan keeps --keep-mb's default" "(--keep-mb)  $keep.0 MB" "$plan"
# Every tool, every flag: the stated defaults are the code's.
checked=0 stated=0 takes=0
for dir in "$K3_SOURCE_DIR"/tools/*/; do
  tool=$(basename "$dir")
  K3_FLAG_DEFAULTS=1 "$BIN/$tool" > "$work/$tool.defaults"
  check "$tool: K3_FLAG_DEFAULTS=1 lists its flags" 0 \
    "$(grep -cvE $'^[a-z-]* *--[a-z0-9-]*\t(switch|required|optional)\t' "$work/$tool.defaults")"
  subs=$(sed -nE 's/^([a-z-]+) --.*/\1/p' "$work/$tool.defaults" | sort -u)
  for sub in "" $subs; do
    # shellcheck disable=SC2086
    "$BIN/$tool" $sub --help > "$work/$tool.$sub.help"
    if [ -n "$sub" ]; then grep "^$sub --" "$work/$tool.defaults"; else grep -v '^[a-z]' "$work/$tool.defaults"; fi \
      > "$work/$tool.$sub.defaults"
    out=$(python3 "$K3_SOURCE_DIR/tests/cli/flag_defaults_check.py" "$work/$tool.$sub.help" "$work/$tool.$sub.defaults" \
      "$tool${sub:+ $sub}")
    check "$tool${sub:+ $sub}: every flag taking a value states its default, the code's" "" "$(grep FAIL <<< "$out")"
    checked=$((checked + $(sed -nE 's/^checked ([0-9]+)$/\1/p' <<< "$out")))
    stated=$((stated + $(sed -nE 's/^stated ([0-9]+)$/\1/p' <<< "$out")))
    takes=$((takes + $(grep -cE $'\t(required|optional)\t' "$work/$tool.$sub.defaults")))
  done
done
holds "stated defaults compared with the code's: $checked (at least 40)" "[ $checked -ge 40 ]"
# Flags kept out of --help (none today) are the only ones not required to state one.
check "every flag taking a value states its default or that it has none ($stated of $takes)" "$takes" "$stated"
holds "flags taking a value, in every --help: $takes (at least 150: the switches are told apart)" "[ $takes -ge 150 ]"
echo "flags taking a value: $takes, each stating its default; stated defaults compared with the code's: $checked"
finish help_defaults_test
