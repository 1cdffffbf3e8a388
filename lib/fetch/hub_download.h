// Layer fetch (leaf): downloading a checkpoint from the hub.
//
// Downloads a revision of a hub repository into a directory so that every
// file ends up complete and verified, whatever happens on the way.
//
// - The revision is resolved to a commit once; every file comes from that
//   commit and the local manifest (DIR/.k3-manifest.json) records it.
// - Each file is written to "<name>.part", resumed with a Range request after
//   any interruption (also a killed process), hashed while it arrives
//   (sha256 + xxh3-128, plus the git blob id for small non-LFS files) and
//   renamed into place only when its size and hash match the hub's.
// - A hash mismatch downloads that file once more from scratch; a second
//   mismatch stops with the file's name and both hashes.
// - Transient failures are retried with backoff (Retry-After respected).
// - A file already complete and verified is never fetched again.
// - Free space is checked first; a full disk stops cleanly, keeping finished
//   files and the .part in progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "fetch/retry_policy.h"

namespace k3 {

struct DownloadOptions {
  std::string endpoint = "https://huggingface.co";
  std::string repo = "moonshotai/Kimi-K3";
  std::string revision = "main";
  std::string dir;
  std::string token;
  std::vector<std::string> include, exclude;
  int jobs = 4;
  RetryPolicy retry;
  long stall_timeout_s = 60;
  bool tty = false;                 // progress meter in place (else periodic lines)
  double progress_interval_s = 10;  // plain-line interval when not a TTY
  std::string log_prefix = "k3-fetch-verify: ";
};

struct DownloadSummary {
  std::string commit;
  uint64_t files_selected = 0;
  uint64_t files_already_complete = 0;  // skipped without any request
  uint64_t files_downloaded = 0;
  uint64_t bytes_selected = 0;
  uint64_t bytes_received = 0;  // over the network in this run
  double seconds = 0;
};

// Throws k3::Error: kNetwork (auth, retries exhausted), kVerify (hash
// mismatch twice), kIo (disk full / write failure), kResource (not enough
// free space before starting), kUsage (the directory holds another commit),
// kInterrupted (*interrupted became true; .part files are kept).
DownloadSummary download_repo(const DownloadOptions& opt, const std::atomic<bool>* interrupted);

}  // namespace k3
