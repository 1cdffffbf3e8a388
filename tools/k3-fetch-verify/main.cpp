// k3-fetch-verify: download a checkpoint from the Hugging Face hub so that
// no byte is lost or wrong, and prove a local checkpoint is complete.
//
//   k3-fetch-verify download [REPO] DIR   resumable, verified download
//   k3-fetch-verify verify DIR [--full]   structure, sizes and (--full) hashes
//
// A thin front end: the options are declared here; fetch_verify_commands.cpp
// beside it runs lib/fetch (download) and lib/verify (checks) and prints
// their reports.
#include <CLI/CLI.hpp>

#include <string>

#include "cli/cli_parse.h"
#include "cli/flag_checks.h"
#include "cli/interrupt.h"
#include "common/cli_limits.h"
#include "common/error.h"
#include "common/tool_main.h"
#include "fetch_verify_commands.h"

namespace {

constexpr const char* kTool = "k3-fetch-verify";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Download a checkpoint from the Hugging Face hub with resume and verification, and verify a local "
      "checkpoint directory shard by shard.",
      kTool};
  app.require_subcommand(1);
  app.footer(std::string("\nSteps for Kimi-K3:\n"
                         "  1. k3-fetch-verify download DIR --include '*.json' --include 'tiktoken.model' "
                         "--include '*.py'\n"
                         "  2. k3-fetch-verify download DIR          (the 96 shards; re-run after any interruption)\n"
                         "  3. k3-pack DIR TRUNK_DIR (no verify needed: each file's sha256 was checked on arrival)\n"
                         "A checkpoint copied by other means: k3-fetch-verify verify DIR --no-manifest\n\n") +
             k3::exit_codes_help());

  k3::DownloadCommand download;
  k3::DownloadOptions& dopt = download.options;
  auto* dl = app.add_subcommand("download",
                                "Download REPO (default moonshotai/Kimi-K3) into DIR, resuming and "
                                "verifying every file");
  dl->add_option("REPO_DIR", download.positional,
                 "[REPO] DIR: the hub repository (owner/name) and the target directory")
      ->required()
      ->expected(1, 2);
  dl->add_option("--revision", dopt.revision, "Branch, tag or commit to download; pinned to its commit")
      ->capture_default_str();
  dl->add_option("--include", dopt.include,
                 "Only files matching this glob (repeatable; '*' also matches '/'; default: none: "
                 "every file)");
  dl->add_option("--exclude", dopt.exclude, "Skip files matching this glob (repeatable; default: none)");
  dl->add_option("--jobs,-j", dopt.jobs, "Parallel transfers")
      ->check(k3::cli::in_range(1, k3::kMaxTransferJobs))
      ->capture_default_str();
  dl->add_option("--token", download.token_flag,
                 "Hub access token (default: $HF_TOKEN, then the file $HF_TOKEN_PATH, then $HF_HOME/token, "
                 "~/.cache/huggingface/token by default, as huggingface-cli login writes it). From any source it "
                 "must be one line of printable ASCII of at most 4096 bytes, and a token file a regular file: "
                 "else exit 2 (--token, $HF_TOKEN) or 4 (a file), naming where it came from, never printing it");
  dl->add_option("--endpoint", download.endpoint_flag, "Hub address (default: $HF_ENDPOINT or https://huggingface.co)");
  dl->add_option("--retries", download.retries, "Attempts per file without progress before giving up")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  dl->add_option("--retry-wait", download.retry_wait_s, "First wait in seconds between retries (doubles, max 60 s)")
      ->check(k3::cli::finite_range(60))
      ->capture_default_str();
  dl->add_option("--stall-timeout", dopt.stall_timeout_s, "Seconds without a byte before a transfer is retried")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  dl->add_option("--progress-interval", dopt.progress_interval_s,
                 "Seconds between progress lines when stderr is not a terminal")
      ->capture_default_str();

  k3::VerifyOptions vopt;
  auto* vf = app.add_subcommand("verify",
                                "Check DIR: shards against the index, sizes against the manifest, "
                                "headers and tensors; --full also re-hashes every file");
  vf->add_option("DIR", vopt.dir, "Checkpoint directory")->required();
  vf->add_flag("--full", vopt.full, "Re-hash every file: sha256 against the hub, xxh3 against the manifest");
  vf->add_flag("--no-manifest", vopt.no_manifest,
               "Accept a directory without the download manifest (size and hash checks are then skipped)");
  vf->add_option("--threads", vopt.threads, "Hashing threads (default 0: all cores)")
      ->check(k3::cli::in_range(0, k3::kMaxComputeThreads));
  vf->add_option("--progress-interval", vopt.progress_interval_s,
                 "Seconds between progress lines when stderr is not a terminal")
      ->capture_default_str();

  if (auto status = k3::parse_command_line(app, argc, argv, kTool)) return *status;

  k3::install_interrupt_handler();
  return k3::run_tool(
      kTool, [&] { return *dl ? k3::run_download_command(download, kTool) : k3::run_verify_command(vopt, kTool); });
}
