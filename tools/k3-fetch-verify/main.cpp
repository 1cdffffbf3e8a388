// k3-fetch-verify: download a checkpoint from the Hugging Face hub so that
// no byte is lost or wrong, and prove a local checkpoint is complete.
//
//   k3-fetch-verify download [REPO] DIR   resumable, verified download
//   k3-fetch-verify verify DIR [--full]   structure, sizes and (--full) hashes
//
// A thin front end over lib/fetch (download) and lib/verify (checks).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_parse.h"
#include "cli/flag_checks.h"
#include "common/cli_limits.h"
#include "common/error.h"
#include "cli/interrupt.h"
#include "common/tool_main.h"
#include "fetch/hub_download.h"
#include "fetch/hub_token.h"
#include "checkpoint/trunk_location.h"
#include "fetch/transfer_progress.h"
#include "verify/checkpoint_verifier.h"

namespace {

constexpr const char* kTool = "k3-fetch-verify";
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

int run_download(const std::vector<std::string>& positional, k3::DownloadOptions opt, const std::string& token_flag,
                 const std::string& endpoint_flag) {
  if (positional.size() == 2) {
    opt.repo = positional[0];
    opt.dir = positional[1];
  } else {
    opt.dir = positional[0];
  }
  if (opt.repo.find('/') == std::string::npos || opt.repo.front() == '/' || opt.repo.back() == '/')
    throw k3::Error(k3::ExitCode::kUsage, "repository '" + opt.repo + "' must look like owner/name");
  if (opt.jobs < 1 || opt.jobs > 64) throw k3::Error(k3::ExitCode::kUsage, "--jobs must be between 1 and 64");
  opt.endpoint = !endpoint_flag.empty() ? endpoint_flag : env_or("HF_ENDPOINT", "https://huggingface.co");
  const k3::HubToken token = k3::find_hub_token(token_flag, [](const char* n) -> const char* { return std::getenv(n); });
  opt.token = token.value;
  if (!token.value.empty()) std::fprintf(stderr, "%s: using the Hub token from %s\n", kTool, token.origin.c_str());
  opt.tty = ::isatty(2);
  opt.log_prefix = std::string(kTool) + ": ";

  k3::DownloadSummary s = k3::download_repo(opt, &k3::interrupt_flag());
  double rate = s.seconds > 0 ? static_cast<double>(s.bytes_received) / s.seconds : 0;
  std::fprintf(stderr,
               "%s: done: %llu files (%s) of %s at commit %s are complete and verified in %s; %llu downloaded "
               "(%s received, %s/s), %llu already complete.\n",
               kTool, static_cast<unsigned long long>(s.files_selected),
               k3::TransferProgress::human_bytes(static_cast<double>(s.bytes_selected)).c_str(), opt.repo.c_str(),
               s.commit.c_str(), opt.dir.c_str(), static_cast<unsigned long long>(s.files_downloaded),
               k3::TransferProgress::human_bytes(static_cast<double>(s.bytes_received)).c_str(),
               k3::TransferProgress::human_bytes(rate).c_str(),
               static_cast<unsigned long long>(s.files_already_complete));
  if (!opt.include.empty() || !opt.exclude.empty())
    std::fprintf(stderr, "%s: next: %s download %s (the rest of the checkpoint; finished files are kept)\n", kTool,
                 kTool, opt.dir.c_str());
  else
    std::fprintf(stderr,
                 "%s: next: k3-pack %s %s (no need to run verify: every file's sha256 was checked against the hub "
                 "as it arrived)\n",
                 kTool, opt.dir.c_str(), k3::suggested_trunk_dir(opt.dir).c_str());
  return 0;
}

int run_verify(k3::VerifyOptions opt) {
  opt.tty = ::isatty(2);
  opt.log_prefix = std::string(kTool) + ": ";
  k3::VerifyReport r = k3::verify_checkpoint_dir(opt, &k3::interrupt_flag());
  for (const auto& p : r.problems) std::printf("%s\n", p.line().c_str());
  for (const auto& n : r.not_run) std::printf("not checked: %s\n", n.c_str());
  std::fflush(stdout);
  for (const auto& c : r.ran) std::fprintf(stderr, "%s: checked: %s\n", kTool, c.c_str());
  for (const auto& w : r.waived) std::fprintf(stderr, "%s: skipped (--no-manifest): %s\n", kTool, w.c_str());
  if (opt.full && r.hash_seconds > 0)
    std::fprintf(stderr, "%s: hashed %llu files, %s in %.1f s (%.2f GB/s)\n", kTool,
                 static_cast<unsigned long long>(r.files_hashed),
                 k3::TransferProgress::human_bytes(static_cast<double>(r.bytes_hashed)).c_str(), r.hash_seconds,
                 static_cast<double>(r.bytes_hashed) / r.hash_seconds / 1e9);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s: verification FAILED: %zu problem(s), %zu check(s) could not run (listed on stdout)\n",
                 kTool, opt.dir.c_str(), r.problems.size(), r.not_run.size());
    return static_cast<int>(k3::ExitCode::kVerify);
  }
  std::printf("ok: %s: %llu shards, %llu bytes%s\n", opt.dir.c_str(), static_cast<unsigned long long>(r.shards),
              static_cast<unsigned long long>(r.shard_bytes), opt.full ? ", every hash matches" : "");
  std::fflush(stdout);
  std::fprintf(stderr, "%s: next: k3-pack %s %s\n", kTool, opt.dir.c_str(), k3::suggested_trunk_dir(opt.dir).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Download a checkpoint from the Hugging Face hub with resume and verification, and verify a local "
               "checkpoint directory shard by shard.",
               kTool};
  app.require_subcommand(1);
  app.footer(std::string("\nSteps for Kimi-K3:\n"
                         "  1. k3-fetch-verify download DIR --include '*.json' --include 'tiktoken.model' "
                         "--include '*.py'\n"
                         "  2. k3-fetch-verify download DIR          (the 96 shards; re-run after any interruption)\n"
                         "  3. k3-fetch-verify verify DIR --full\n\n") +
             k3::exit_codes_help());

  k3::DownloadOptions dopt;
  std::vector<std::string> positional;
  std::string token, endpoint;
  double retry_wait = dopt.retry.first_wait_s;
  int retries = dopt.retry.max_attempts;
  auto* dl = app.add_subcommand("download", "Download REPO (default moonshotai/Kimi-K3) into DIR, resuming and "
                                            "verifying every file");
  dl->add_option("REPO_DIR", positional, "[REPO] DIR: the hub repository (owner/name) and the target directory")
      ->required()
      ->expected(1, 2);
  dl->add_option("--revision", dopt.revision, "Branch, tag or commit to download; pinned to its commit")
      ->capture_default_str();
  dl->add_option("--include", dopt.include, "Only files matching this glob (repeatable; '*' also matches '/')");
  dl->add_option("--exclude", dopt.exclude, "Skip files matching this glob (repeatable)");
  dl->add_option("--jobs,-j", dopt.jobs, "Parallel transfers")
      ->check(k3::cli::in_range(1, k3::kMaxTransferJobs))
      ->capture_default_str();
  dl->add_option("--token", token, "Hub access token (default: $HF_TOKEN, then the file $HF_TOKEN_PATH, then $HF_HOME/token, "
                  "~/.cache/huggingface/token by default, as huggingface-cli login writes it)");
  dl->add_option("--endpoint", endpoint, "Hub address (default: $HF_ENDPOINT or https://huggingface.co)");
  dl->add_option("--retries", retries, "Attempts per file without progress before giving up")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  dl->add_option("--retry-wait", retry_wait, "First wait in seconds between retries (doubles, max 60 s)")
      ->check(k3::cli::finite_range(60))
      ->capture_default_str();
  dl->add_option("--stall-timeout", dopt.stall_timeout_s, "Seconds without a byte before a transfer is retried")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  dl->add_option("--progress-interval", dopt.progress_interval_s,
                 "Seconds between progress lines when stderr is not a terminal")
      ->capture_default_str();

  k3::VerifyOptions vopt;
  auto* vf = app.add_subcommand("verify", "Check DIR: shards against the index, sizes against the manifest, "
                                          "headers and tensors; --full also re-hashes every file");
  vf->add_option("DIR", vopt.dir, "Checkpoint directory")->required();
  vf->add_flag("--full", vopt.full, "Re-hash every file: sha256 against the hub, xxh3 against the manifest");
  vf->add_flag("--no-manifest", vopt.no_manifest,
               "Accept a directory without the download manifest (size and hash checks are then skipped)");
  vf->add_option("--threads", vopt.threads, "Hashing threads (default: all cores)")
      ->check(k3::cli::in_range(0, k3::kMaxComputeThreads));
  vf->add_option("--progress-interval", vopt.progress_interval_s,
                 "Seconds between progress lines when stderr is not a terminal")
      ->capture_default_str();

  if (auto status = k3::parse_command_line(app, argc, argv, kTool)) return *status;

  k3::install_interrupt_handler();
  return k3::run_tool(kTool, [&] {
    if (*dl) {
      if (retries < 1) throw k3::Error(k3::ExitCode::kUsage, "--retries must be at least 1");
      if (retry_wait < 0) throw k3::Error(k3::ExitCode::kUsage, "--retry-wait must not be negative");
      if (dopt.stall_timeout_s < 1) throw k3::Error(k3::ExitCode::kUsage, "--stall-timeout must be at least 1");
      dopt.retry.max_attempts = retries;
      dopt.retry.first_wait_s = retry_wait;
      return run_download(positional, dopt, token, endpoint);
    }
    return run_verify(vopt);
  });
}
