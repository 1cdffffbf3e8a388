#!/usr/bin/env bash
# Codex (npm "@openai/codex", pinned by tests/clients/package-lock.json; its
# linux binary comes with npm ci) drives k3-serve's /v1/responses on the tiny
# model with the provider config docs/serve.md gives, as written: `codex exec` runs a
# turn to the end, and every /v1/responses request it made was answered 200
# (the server's request log). The tiny model's reply is gibberish: what is
# tested is that Codex's requests (include, prompt_cache_key,
# client_metadata, reasoning.summary, developer messages) are served. Its
# hosted web_search is turned off in the config (web_search = "disabled");
# a second run without that line shows the 400 naming it, and a server
# started with --hosted-tools omit answers a request declaring it.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
install_clients || exit 1
codex="$clients/node_modules/.bin/codex"
holds "npm ci installed the codex binary" '"$codex" --version | grep -q "codex-cli 0.171.0"'

# codex_config HOME [SED]: docs/serve.md's Codex config (its port this
# server's) edited by SED, and settings that shorten Codex's first prompt
# from 11,480 ids to about a quarter (its instructions replaced by a line,
# no environment context, goals, image viewer, skills or sub-agents): the
# tiny model evaluates a prompt at 100-300 ids/s here.
codex_config() {
  mkdir -p "$1/.codex"
  echo "You are Codex, a coding agent. Be brief." > "$1/instructions.md"
  { snippet codex | sed -e "s|127.0.0.1:8080|127.0.0.1:$port|" -e "${2:-}" | sed '/^\[model_providers.k3\]/,$d'
    cat <<TOML
model_instructions_file = "$1/instructions.md"
include_environment_context = false
include_apps_instructions = false
include_collaboration_mode_instructions = false

TOML
    snippet codex | sed -e "s|127.0.0.1:8080|127.0.0.1:$port|" | sed -n '/^\[model_providers.k3\]/,$p'
    printf '\n[features]\ngoals = false\nview_image = false\nskill_search = false\nmulti_agent = false\n'
  } > "$1/.codex/config.toml"
}
# run_codex HOME OUT: one `codex exec` turn in an empty directory; its exit status.
run_codex() {
  mkdir -p "$work/project"
  (cd "$work/project" && HOME="$1" CODEX_HOME="$1/.codex" K3_API_KEY=k3-test-key timeout 300 \
    "$codex" exec --json --skip-git-repo-check --output-last-message "$2.last" "Say hi" < /dev/null > "$2" 2>&1)
}

start_server "$work/server.log" --model-name k3 --api-key k3-test-key --slots 1 || exit 1
codex_config "$work/home"
holds "docs/serve.md has the Codex config" 'grep -q "wire_api = \"responses\"" "$work/home/.codex/config.toml"'
run_codex "$work/home" "$work/codex.out"
check "codex exec completes" 0 "$?"
out=$(cat "$work/codex.out")
contains "codex saw the turn complete" '"type":"turn.completed"' "$out"
holds "codex wrote the reply it got" '[ -f "$work/codex.out.last" ]'
answered=$(grep -c 'POST /v1/responses 200 ' "$work/server.log")
holds "codex's requests were answered (got $answered)" '[ "$answered" -ge 1 ]'
check "no /v1/responses request was refused" "" "$(grep 'POST /v1/responses' "$work/server.log" | grep -v ' 200 ')"

# Without web_search = "disabled": the 400 names the hosted tool and says how to turn it off.
codex_config "$work/home2" '/^web_search = /d'
run_codex "$work/home2" "$work/codex2.out"
differs "codex fails on the refused hosted tool" 0 "$?"
contains "the refusal names the hosted tool" 'tools[3].type: ' "$(cat "$work/codex2.out")"
contains "the refusal says why" 'is not served: k3 runs function tools only' "$(cat "$work/codex2.out")"
contains "the refusal gives Codex's setting" '(Codex: web_search = ' "$(cat "$work/codex2.out")"

# --hosted-tools omit: web_search is left out of the prompt and the response says so.
start_server "$work/server2.log" --hosted-tools omit || exit 1
post reply /v1/responses '{"input": "Hi", "max_output_tokens": 2, "tools": [{"type": "web_search"}]}'
check "a hosted tool with --hosted-tools omit: 200" 200 "$status"
check "the response lists it in omitted_tools" "['web_search']" "$(jget "$reply" 'j["omitted_tools"]')"
finish k3_serve_codex_test
