// What k3-fetch-verify's two subcommands do once their command line is read:
// `download` resolves the hub settings (flags, then $HF_ENDPOINT/$HF_TOKEN),
// runs the verified download and prints its summary; `verify` runs the checks
// and prints every problem (stdout) and what was checked (stderr).
#pragma once

#include <string>
#include <vector>

#include "fetch/hub_download.h"
#include "verify/checkpoint_verifier.h"

namespace k3 {

// The download subcommand's command line as parsed, before validation.
struct DownloadCommand {
  DownloadOptions options;
  std::vector<std::string> positional;  // [REPO] DIR
  std::string token_flag;               // empty: $HF_TOKEN
  std::string endpoint_flag;            // empty: $HF_ENDPOINT or the public hub
  int retries = RetryPolicy{}.max_attempts;
  double retry_wait_s = RetryPolicy{}.first_wait_s;
};

// Validates the command (Error(kUsage) naming the flag), downloads and prints
// the summary line to stderr. Returns the exit status.
int run_download_command(DownloadCommand command, const char* tool);

// Verifies options.dir and prints the report. Returns 0, or kVerify (exit 7)
// when a problem was found or a check could not run.
int run_verify_command(VerifyOptions options, const char* tool);

}  // namespace k3
