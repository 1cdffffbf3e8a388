#include "fetch_verify_commands.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/interrupt.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "fetch/hub_token.h"
#include "fetch/transfer_progress.h"
#include "trunk/location.h"
#include "verify/known_checkpoints.h"

namespace k3 {

namespace {

// A draft model is not packed: it is given to the tools with --draft.
bool is_draft_dir(const std::string& dir) { return checkpoint_model_type(dir) == kDSparkModelType; }

void print_draft_next(const char* tool, const std::string& dir) {
  std::fprintf(stderr,
               "%s: next: add --draft %s to k3-forward, k3-chat or k3-serve (a DSpark draft model is used as it is, "
               "not packed; docs/dspark.md)\n",
               tool, dir.c_str());
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

}  // namespace

int run_download_command(DownloadCommand command, const char* tool) {
  DownloadOptions& opt = command.options;
  if (command.retries < 1) throw Error(ExitCode::kUsage, "--retries must be at least 1");
  if (command.retry_wait_s < 0) throw Error(ExitCode::kUsage, "--retry-wait must not be negative");
  if (opt.stall_timeout_s < 1) throw Error(ExitCode::kUsage, "--stall-timeout must be at least 1");
  opt.retry.max_attempts = command.retries;
  opt.retry.first_wait_s = command.retry_wait_s;
  const std::vector<std::string>& positional = command.positional;
  if (positional.size() == 2) {
    opt.repo = positional[0];
    opt.dir = positional[1];
  } else {
    opt.dir = positional[0];
  }
  if (opt.repo.find('/') == std::string::npos || opt.repo.front() == '/' || opt.repo.back() == '/')
    throw Error(ExitCode::kUsage, "repository '" + opt.repo + "' must look like owner/name");
  if (opt.jobs < 1 || opt.jobs > 64) throw Error(ExitCode::kUsage, "--jobs must be between 1 and 64");
  opt.endpoint =
      !command.endpoint_flag.empty() ? command.endpoint_flag : env_or("HF_ENDPOINT", "https://huggingface.co");
  const HubToken token =
      find_hub_token(command.token_flag, [](const char* n) -> const char* { return std::getenv(n); });
  opt.token = token.value;
  if (!token.value.empty()) std::fprintf(stderr, "%s: using the Hub token from %s\n", tool, token.origin.c_str());
  opt.tty = ::isatty(2);
  opt.log_prefix = std::string(tool) + ": ";

  DownloadSummary s = download_repo(opt, &interrupt_flag());
  double rate = s.seconds > 0 ? static_cast<double>(s.bytes_received) / s.seconds : 0;
  std::fprintf(stderr,
               "%s: done: %llu files (%s) of %s at commit %s are complete and verified in %s; %llu downloaded "
               "(%s received, %s/s), %llu already complete.\n",
               tool, static_cast<unsigned long long>(s.files_selected), format_bytes(s.bytes_selected).c_str(),
               opt.repo.c_str(), s.commit.c_str(), opt.dir.c_str(), static_cast<unsigned long long>(s.files_downloaded),
               format_bytes(s.bytes_received).c_str(), format_bytes_of(rate).c_str(),
               static_cast<unsigned long long>(s.files_already_complete));
  if (!opt.include.empty() || !opt.exclude.empty())
    std::fprintf(stderr, "%s: next: %s download %s (the rest of the checkpoint; finished files are kept)\n", tool, tool,
                 opt.dir.c_str());
  else if (is_draft_dir(opt.dir)) print_draft_next(tool, opt.dir);
  else
    std::fprintf(stderr,
                 "%s: next: k3-pack %s %s (no need to run verify: every file's sha256 was checked against the hub "
                 "as it arrived)\n",
                 tool, opt.dir.c_str(), suggested_trunk_dir(opt.dir).c_str());
  return 0;
}

int run_verify_command(VerifyOptions opt, const char* tool) {
  opt.tty = ::isatty(2);
  opt.log_prefix = std::string(tool) + ": ";
  VerifyReport r = verify_checkpoint_dir(opt, &interrupt_flag());
  for (const auto& p : r.problems) std::printf("%s\n", p.line().c_str());
  for (const auto& n : r.not_run) std::printf("not checked: %s\n", n.c_str());
  std::fflush(stdout);
  for (const auto& c : r.ran) std::fprintf(stderr, "%s: checked: %s\n", tool, c.c_str());
  for (const auto& w : r.waived) std::fprintf(stderr, "%s: skipped (--no-manifest): %s\n", tool, w.c_str());
  if (opt.full && r.hash_seconds > 0)
    std::fprintf(stderr, "%s: hashed %llu files, %s in %.1f s (%.2f GB/s)\n", tool,
                 static_cast<unsigned long long>(r.files_hashed), format_bytes(r.bytes_hashed).c_str(), r.hash_seconds,
                 static_cast<double>(r.bytes_hashed) / r.hash_seconds / 1e9);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s: verification FAILED: %zu problem(s), %zu check(s) could not run (listed on stdout)\n",
                 tool, opt.dir.c_str(), r.problems.size(), r.not_run.size());
    return static_cast<int>(ExitCode::kVerify);
  }
  std::printf("ok: %s: %llu shards, %llu bytes%s\n", opt.dir.c_str(), static_cast<unsigned long long>(r.shards),
              static_cast<unsigned long long>(r.shard_bytes), opt.full ? ", every hash matches" : "");
  std::fflush(stdout);
  if (is_draft_dir(opt.dir)) print_draft_next(tool, opt.dir);
  else std::fprintf(stderr, "%s: next: k3-pack %s %s\n", tool, opt.dir.c_str(), suggested_trunk_dir(opt.dir).c_str());
  return 0;
}

}  // namespace k3
