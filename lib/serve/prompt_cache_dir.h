// The directory of k3-serve's prompt cache (--prompt-cache): sequence states
// kept as state files across restarts, so a restarted server continues an
// agent's long system prompt and tool list instead of evaluating them again.
//
// A file is named by what it holds: prompt-<XXH3-128 of the model's
// fingerprint and the ids>.k3state, so the same state is never written
// twice and another model's states never collide with this one's. The
// directory is the user's alone: one another user could write to could
// plant a state that answers with someone else's conversation, so it is
// refused unless it is a real directory (not a link), owned by this user and
// writable by no one else. At start-up it is indexed from each file's
// leading sections (state/state_file_summary.h), not whole states; anything
// that is not one of this model's states (another name, a link, another
// owner, a truncated or foreign file, another model's state) is left alone
// with a line on stderr, and a state is trusted only once read whole
// (serve/kept_state.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "state/continuation.h"

namespace k3::serve {

struct PromptCacheFile {
  std::string path;
  std::vector<int32_t> ids;  // evaluated, then pending: what the file says it holds
  uint64_t bytes = 0;
};

// Creates `dir` (mode 0700) when it does not exist, then refuses it
// (k3::Error kUsage, the message starting with `label`) when it is a
// symbolic link, not a directory, not owned by this user, or writable by
// group or others.
void check_prompt_cache_dir(const std::string& dir, const std::string& label);

// This model's states in `dir`, most recently used first (the files'
// modification times, which touch_prompt_cache_file sets on use). Says on
// stderr what it skips and why.
std::vector<PromptCacheFile> index_prompt_cache(const std::string& dir, const ModelIdentity& model);

// Where the state holding `ids` for `model` lives in `dir`.
std::string prompt_cache_path(const std::string& dir, const ModelIdentity& model, const std::vector<int32_t>& ids);

// Marks the file used now, so the least recently used order outlives the server.
void touch_prompt_cache_file(const std::string& path);

}  // namespace k3::serve
