// Layer verify (leaf): checking a downloaded checkpoint.
//
// Checks a downloaded checkpoint directory shard by shard and reports every
// problem found (never just the first), for `k3-fetch-verify verify`.
//
// Quick checks: shard count and names against the index (or, with no index,
// a single model.safetensors, as a draft model ships); every file's size
// against the download manifest; every shard's safetensors header parses and
// every tensor the index's weight_map assigns to it exists there with its
// data inside the file; for Kimi-K3 the published totals. Full checks
// (--full) also re-hash every file: sha256 against the hub's LFS hash, xxh3
// against the manifest.
//
// A check that cannot run (no manifest, say) is reported as such, so a
// caller never mistakes "not checked" for "fine".
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

struct VerifyOptions {
  std::string dir;
  bool full = false;
  bool no_manifest = false;  // accept that checks needing the manifest cannot run
  int threads = 0;           // hashing threads; <= 0: all online cores
  bool tty = false;
  double progress_interval_s = 10;
  std::string log_prefix;  // what progress lines start with ("k3-fetch-verify: ")
};

// The keys the verifier's messages name VerifyOptions' settings by
// (common/setting_spelling.h); k3-fetch-verify spells them --full and
// --no-manifest.
namespace verify_setting {
inline constexpr const char* kFull = "full";
inline constexpr const char* kNoManifest = "no_manifest";
}  // namespace verify_setting

struct VerifyProblem {
  std::string file;
  std::string what;
  std::string expected;
  std::string found;
  std::string line() const;  // "<file>: <what>: expected <e>, found <f>"
};

struct VerifyReport {
  std::vector<VerifyProblem> problems;
  std::vector<std::string> not_run;  // checks that could not run, with why (these fail the run)
  std::vector<std::string> waived;   // checks skipped because --no-manifest accepted it
  std::vector<std::string> ran;      // checks that ran
  uint64_t shards = 0;
  uint64_t shard_bytes = 0;
  uint64_t files_hashed = 0;
  uint64_t bytes_hashed = 0;
  double hash_seconds = 0;
  // True only when every check ran (or was waived with no_manifest) and none failed.
  bool ok() const { return problems.empty() && not_run.empty(); }
};

// config.json's model_type in `dir` ("" when absent or unreadable).
std::string checkpoint_model_type(const std::string& dir);

// Throws k3::Error(kInterrupted) when *interrupted becomes true during hashing.
VerifyReport verify_checkpoint_dir(const VerifyOptions& opt, const std::atomic<bool>* interrupted);

}  // namespace k3
