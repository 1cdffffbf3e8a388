#include "fetch/hub_download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "common/atomic_file_writer.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "common/file.h"
#include "fetch/download_files.h"
#include "fetch/fetch_manifest.h"
#include "fetch/glob_filter.h"
#include "fetch/http_get.h"
#include "fetch/hub_listing.h"
#include "fetch/transfer_progress.h"
#include "io/file_digest.h"

namespace k3 {

namespace {

using Clock = std::chrono::steady_clock;

// Bytes one connection must deliver for its failure not to count toward
// --retries.
constexpr uint64_t kMinProgressBytes = 64 << 10;

bool hash_matches(const HubFile& f, const DigestResult& d) {
  return f.lfs ? d.sha256 == f.sha256 : d.git_sha1 == f.git_oid;
}
std::string expected_hash(const HubFile& f) { return f.lfs ? "sha256 " + f.sha256 : "git blob sha1 " + f.git_oid; }
std::string found_hash(const HubFile& f, const DigestResult& d) {
  return f.lfs ? "sha256 " + d.sha256 : "git blob sha1 " + d.git_sha1;
}
int64_t git_size_arg(const HubFile& f) { return f.lfs ? -1 : static_cast<int64_t>(f.size); }
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// Whether a 206 answer's Content-Range starts exactly where the .part ends.
bool range_starts_at(const HttpResponse& head, uint64_t at, uint64_t size) {
  unsigned long long a = 0, b = 0, total = 0;
  return std::sscanf(head.content_range.c_str(), "bytes %llu-%llu/%llu", &a, &b, &total) == 3 && a == at &&
         total == size;
}

// The answers no retry mends: a refused token, a missing file, a permanent failure.
void refuse_final_answer(const HttpResponse& r, const HubFile& f, const std::string& commit, const std::string& url) {
  if (r.status == 401 || r.status == 403)
    throw Error(ExitCode::kNetwork,
                std::string(r.status == 401 ? "authentication failed (HTTP 401)" : "access denied (HTTP 403)") +
                    " downloading " + f.path + ": pass a valid read token with --token or HF_TOKEN");
  if (r.status == 404)
    throw Error(ExitCode::kNetwork, f.path + ": not found on the hub at commit " + commit + " (HTTP 404)");
  if (!r.transient()) throw Error(ExitCode::kNetwork, f.path + ": " + r.describe() + " from " + url);
}

class Downloader {
 public:
  Downloader(const DownloadOptions& opt, const std::atomic<bool>* interrupted) : opt_(opt), interrupted_(interrupted) {}

  DownloadSummary run();

 private:
  struct Task {
    HubFile file;
  };

  void worker(int slot_index);
  void process(const HubFile& f, HttpClient& client, TransferSlot& slot);
  // Downloads f into its .part until complete; returns the digest of the whole content.
  DigestResult fetch_part(const HubFile& f, const std::string& part, HttpClient& client, TransferSlot& slot);
  void record_complete(const HubFile& f, const DigestResult& d, const std::string& final_path);
  // Feeds `digest` the first `limit` bytes of fd (all of them with UINT64_MAX), counted into `slot`.
  // A failed transfer: gives up after --retries failures in a row, else logs it and waits before the next.
  void wait_to_retry(const HubFile& f, const HttpResponse& r, uint64_t have, int failures);
  void digest_existing(int fd, const std::string& path, uint64_t limit, FileDigest& digest, TransferSlot& slot);
  std::vector<HubFile> select_files(const HubListing& listing) const;
  void merge_manifest();
  // The selected files not yet complete become tasks; returns the bytes they still need.
  uint64_t plan_tasks(const std::vector<HubFile>& selected, DownloadSummary& sum, uint64_t& bytes_done,
                      uint64_t& files_done);
  void run_workers(int jobs);
  bool halted() const { return halt_.load() || (interrupted_ && interrupted_->load()); }
  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(err_mu_);
    if (!first_error_) first_error_ = e;
    halt_ = true;
  }
  HttpOptions http_options() const {
    HttpOptions h;
    h.token = opt_.token;
    h.token_origin = opt_.endpoint;
    h.stall_timeout_s = opt_.stall_timeout_s;
    h.stop = &halt_;
    return h;
  }

  const DownloadOptions& opt_;
  const std::atomic<bool>* interrupted_;
  std::atomic<bool> halt_{false};
  std::mutex err_mu_;
  std::exception_ptr first_error_;

  std::string commit_;
  FetchManifest manifest_;
  std::string manifest_path_;
  std::mutex manifest_mu_;

  std::vector<Task> tasks_;
  std::atomic<size_t> next_task_{0};
  std::unique_ptr<TransferProgress> progress_;
  std::atomic<uint64_t> files_downloaded_{0};
  std::atomic<int> running_{0};
};

DigestResult Downloader::fetch_part(const HubFile& f, const std::string& part, HttpClient& client, TransferSlot& slot) {
  const std::string url = hub_resolve_url(opt_.endpoint, opt_.repo, commit_, f.path);
  int fd = open_own_file(part, O_RDWR | O_CREAT);
  FdCloser closer{fd};

  FileDigest digest(git_size_arg(f));
  struct stat part_stat;
  if (::fstat(fd, &part_stat) != 0) throw_write_error(part, errno);
  uint64_t have = static_cast<uint64_t>(part_stat.st_size);
  if (have > f.size) {
    if (::ftruncate(fd, 0) != 0) throw_write_error(part, errno);
    have = 0;
  }
  if (have > 0) {
    // Resuming: the hash covers the whole file, so feed it what is already here.
    digest_existing(fd, part, have, digest, slot);
    have = digest.bytes();
  }
  slot.done = have;
  // Back to byte 0: the .part emptied, the digest restarted. 0, or the errno of a failed truncate.
  auto restart = [&]() -> int {
    if (::ftruncate(fd, 0) != 0) return errno;
    digest.reset(git_size_arg(f));
    have = 0;
    slot.done = 0;
    return 0;
  };

  int failures = 0;
  while (have < f.size) {
    if (halted()) throw Error(ExitCode::kInterrupted, "interrupted");
    const uint64_t at_start = have;
    int write_errno = 0;
    bool bad_range = false, too_long = false;
    bool first_chunk = true;
    HttpSink sink = [&](const HttpResponse& head, const char* data, size_t n) -> bool {
      if (std::exchange(first_chunk, false)) {
        // A partial answer must start where the .part ends; a whole one (the Range ignored) starts over.
        if (head.status == 206 && (bad_range = !range_starts_at(head, at_start, f.size))) return false;
        if (head.status != 206 && at_start > 0 && (write_errno = restart())) return false;
      }
      if (have + n > f.size) {
        too_long = true;
        return false;
      }
      write_errno = write_budgeted(fd, data, n, have);
      if (write_errno) return false;
      digest.update(data, n);
      have += n;
      slot.done = have;
      progress_->add_network_bytes(n);
      return true;
    };
    HttpResponse r = client.get(url, http_options(), have, &sink);
    if (write_errno) throw_write_error(part, write_errno);
    if (r.stopped || halted()) throw Error(ExitCode::kInterrupted, "interrupted");
    if (too_long) break;  // more bytes than listed: the caller's size/hash check rejects it
    // Only real progress forgives earlier failures: a server that sends a
    // few bytes per connection would otherwise be retried forever.
    if (have - at_start >= kMinProgressBytes || have == f.size) failures = 0;
    if (bad_range || r.status == 416) {
      // Our .part and the server disagree about where we are: restart this file.
      if (const int e = restart()) throw_write_error(part, e);
      if (++failures >= opt_.retry.max_attempts)
        throw Error(ExitCode::kNetwork,
                    f.path + ": the server keeps answering range requests wrongly (" + r.content_range + "); gave up");
      continue;
    }
    if (r.ok()) {
      if (have == f.size) break;
      // The body ended early without an error: treat like a dropped connection.
      r.curl_code = 18;  // CURLE_PARTIAL_FILE
      r.curl_error = "body ended at byte " + std::to_string(have) + " of " + std::to_string(f.size);
    }
    refuse_final_answer(r, f, commit_, url);
    wait_to_retry(f, r, have, ++failures);
  }
  if (::fsync(fd) != 0) throw_write_error(part, errno);
  return digest.finish();
}

void Downloader::digest_existing(int fd, const std::string& path, uint64_t limit, FileDigest& digest,
                                 TransferSlot& slot) {
  std::function<bool(uint64_t)> on = [&](uint64_t n) {
    slot.done.fetch_add(n);
    return !halted();
  };
  try {
    digest_fd(fd, path, limit, digest, &on);
  } catch (const Error& e) {
    if (e.code() == ExitCode::kInterrupted) throw Error(ExitCode::kInterrupted, "interrupted");
    throw;
  }
}

void Downloader::wait_to_retry(const HubFile& f, const HttpResponse& r, uint64_t have, int failures) {
  if (failures >= opt_.retry.max_attempts)
    throw Error(ExitCode::kNetwork, f.path + ": " + r.describe() + "; gave up after " + std::to_string(failures) +
                                        " attempts without progress (run the same command again to resume)");
  progress_->log(f.path + ": " + r.describe() + " at byte " + std::to_string(have) + "; retry " +
                 std::to_string(failures) + " of " + std::to_string(opt_.retry.max_attempts - 1) +
                 " resumes from there");
  if (!wait_before_retry(failures, r, opt_.retry, &halt_)) throw Error(ExitCode::kInterrupted, "interrupted");
}

void Downloader::record_complete(const HubFile& f, const DigestResult& d, const std::string& final_path) {
  std::lock_guard<std::mutex> lock(manifest_mu_);
  ManifestFile* m = manifest_.find(f.path);
  ManifestFile entry = m ? *m : ManifestFile{};
  entry.path = f.path;
  entry.size = f.size;
  entry.lfs = f.lfs;
  entry.sha256 = d.sha256;
  entry.git_oid = f.git_oid;
  entry.xxh3_128 = d.xxh3_128;
  entry.complete = true;
  entry.mtime_ns = stat_path(final_path).mtime_ns;
  manifest_.upsert(entry);
  write_fetch_manifest(manifest_path_, manifest_);
}

void Downloader::process(const HubFile& f, HttpClient& client, TransferSlot& slot) {
  const std::string final_path = path_join(opt_.dir, f.path);
  const std::string part = final_path + ".part";
  check_no_linked_parents(opt_.dir, f.path);
  std::filesystem::path parent = std::filesystem::path(final_path).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) throw Error(ExitCode::kIo, parent.string() + ": cannot create directory: " + ec.message());
  {
    std::lock_guard<std::mutex> lock(slot.mu);
    slot.name = f.path;
  }
  slot.size = f.size;
  slot.done = 0;

  DownloadPathStat existing = stat_path(final_path);
  if (existing.exists) {
    // Present but not known to be good (no manifest entry, or changed since):
    // check it locally instead of downloading it again.
    FileDigest digest(git_size_arg(f));
    {
      FdCloser closer{open_own_file(final_path, O_RDONLY)};
      digest_existing(closer.fd, final_path, UINT64_MAX, digest, slot);
    }
    {
      DigestResult d = digest.finish();
      if (d.bytes == f.size && hash_matches(f, d)) {
        record_complete(f, d, final_path);
        progress_->log(f.path + ": already present and matches the hub; kept");
        return;
      }
      progress_->log(f.path + ": present but does not match the hub (expected " + std::to_string(f.size) + " bytes, " +
                     expected_hash(f) + "; found " + std::to_string(d.bytes) + " bytes, " + found_hash(f, d) +
                     "); downloading it again");
      slot.done = 0;
    }
  }

  for (int round = 1;; ++round) {
    DigestResult d = fetch_part(f, part, client, slot);
    if (d.bytes == f.size && hash_matches(f, d)) {
      rename_over_regular(part, final_path);
      fsync_dir_of(final_path);
      record_complete(f, d, final_path);
      files_downloaded_.fetch_add(1);
      if (!opt_.tty || f.size >= (1u << 30))
        progress_->log(f.path + ": complete, " + std::to_string(f.size) + " bytes, " +
                       (f.lfs ? "sha256" : "git blob id") + " matches the hub");
      return;
    }
    std::string what = d.bytes != f.size ? "size " + std::to_string(d.bytes) + " instead of " + std::to_string(f.size)
                                         : "hash mismatch";
    if (round >= 2)
      throw Error(ExitCode::kVerify, f.path + ": downloaded twice and still wrong (" + what + "): expected " +
                                         expected_hash(f) + ", found " + found_hash(f, d) +
                                         "; the .part file was removed");
    progress_->log(f.path + ": " + what + " (expected " + expected_hash(f) + ", found " + found_hash(f, d) +
                   "); downloading this file again from the start");
    ::unlink(part.c_str());
    slot.done = 0;
  }
}

void Downloader::worker(int slot_index) {
  TransferSlot& slot = progress_->slot(slot_index);
  try {
    HttpClient client;
    for (;;) {
      if (halted()) return;
      size_t i = next_task_.fetch_add(1);
      if (i >= tasks_.size()) break;
      const HubFile& f = tasks_[i].file;
      try {
        process(f, client, slot);
      } catch (const Error& e) {
        if (e.code() == ExitCode::kInterrupted) {
          halt_ = true;
          return;
        }
        // Unlink a .part only for a hash failure (done in process); keep it otherwise.
        if (e.code() == ExitCode::kVerify) ::unlink((path_join(opt_.dir, f.path) + ".part").c_str());
        throw;
      }
      progress_->file_finished(f.size);
      {
        std::lock_guard<std::mutex> lock(slot.mu);
        slot.name.clear();
      }
      slot.done = 0;
    }
  } catch (...) {
    fail(std::current_exception());
  }
  std::lock_guard<std::mutex> lock(slot.mu);
  slot.name.clear();
}

std::vector<HubFile> Downloader::select_files(const HubListing& listing) const {
  GlobFilter filter(opt_.include, opt_.exclude);
  std::vector<HubFile> selected;
  for (const HubFile& f : listing.files)
    if (filter.selects(f.path)) selected.push_back(f);
  for (const HubFile& f : selected) refuse_own_name(f.path, opt_.repo);
  if (selected.empty())
    throw Error(ExitCode::kUsage, "no file of " + opt_.repo + " at commit " + commit_ + " (" +
                                      std::to_string(listing.files.size()) + " files) matches --include/--exclude");
  return selected;
}

// Merges with what an earlier run recorded; refuses to mix commits.
void Downloader::merge_manifest() {
  if (file_exists(manifest_path_)) {
    manifest_ = read_fetch_manifest(manifest_path_);
    if (manifest_.repo != opt_.repo || manifest_.commit != commit_)
      throw Error(ExitCode::kUsage, opt_.dir + " holds files of " + manifest_.repo + " at commit " + manifest_.commit +
                                        ", but " + opt_.repo + " revision '" + opt_.revision + "' is now commit " +
                                        commit_ + ": continue the old download with --revision " + manifest_.commit +
                                        ", or download into another directory");
  }
  manifest_.repo = opt_.repo;
  manifest_.revision = opt_.revision;
  manifest_.commit = commit_;
  manifest_.endpoint = opt_.endpoint;
}

uint64_t Downloader::plan_tasks(const std::vector<HubFile>& selected, DownloadSummary& sum, uint64_t& bytes_done,
                                uint64_t& files_done) {
  uint64_t bytes_needed = 0;
  for (const HubFile& f : selected) {
    sum.bytes_selected += f.size;
    const std::string final_path = path_join(opt_.dir, f.path);
    ManifestFile* m = manifest_.find(f.path);
    const bool same =
        m && m->size == f.size && m->lfs == f.lfs && m->git_oid == f.git_oid && (!f.lfs || m->sha256 == f.sha256);
    DownloadPathStat st = stat_path(final_path);
    if (same && m->complete && st.regular && st.size == f.size && st.mtime_ns == m->mtime_ns) {
      // Verified by an earlier run and untouched since: nothing to do.
      ++sum.files_already_complete;
      bytes_done += f.size;
      ++files_done;
      continue;
    }
    ManifestFile entry;
    entry.path = f.path;
    entry.size = f.size;
    entry.lfs = f.lfs;
    entry.sha256 = f.lfs ? f.sha256 : "";
    entry.git_oid = f.git_oid;
    manifest_.upsert(entry);
    tasks_.push_back(Task{f});
    DownloadPathStat part = stat_path(final_path + ".part");
    bytes_needed += f.size - (part.regular && part.size <= f.size ? part.size : 0);
  }
  // Metadata first (config, index, tokenizer: small, and useful early), then
  // the shards in name order.
  std::stable_sort(tasks_.begin(), tasks_.end(), [](const Task& a, const Task& b) {
    auto shard = [](const std::string& p) {
      return p.size() >= 12 && p.compare(p.size() - 12, 12, ".safetensors") == 0;
    };
    return !shard(a.file.path) && shard(b.file.path);
  });
  return bytes_needed;
}

void Downloader::run_workers(int jobs) {
  std::vector<std::thread> threads;
  running_ = tasks_.empty() ? 0 : jobs;
  for (int i = 0; i < running_.load(); ++i)
    threads.emplace_back([this, i] {
      worker(i);
      running_.fetch_sub(1);
    });
  while (running_.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (interrupted_ && interrupted_->load()) halt_ = true;
    progress_->tick();
  }
  for (auto& t : threads) t.join();
  progress_->finish();
}

DownloadSummary Downloader::run() {
  auto t0 = Clock::now();
  DownloadSummary sum;
  std::error_code ec;
  std::filesystem::create_directories(opt_.dir, ec);
  if (ec) throw Error(ExitCode::kIo, opt_.dir + ": cannot create directory: " + ec.message());
  manifest_path_ = fetch_manifest_path(opt_.dir);
  check_output_path(manifest_path_, OutputPolicy::kRegularFile);  // never read or replaced through a link

  HttpClient client;
  HubRequest req;
  req.endpoint = opt_.endpoint;
  req.repo = opt_.repo;
  req.revision = opt_.revision;
  req.http = http_options();
  req.http.stop = interrupted_;
  req.retry = opt_.retry;
  HubListing listing = list_hub_files(client, req);
  commit_ = listing.commit;
  sum.commit = commit_;

  const std::vector<HubFile> selected = select_files(listing);
  merge_manifest();
  uint64_t bytes_done = 0, files_done = 0;
  const uint64_t bytes_needed = plan_tasks(selected, sum, bytes_done, files_done);
  write_fetch_manifest(manifest_path_, manifest_);
  sum.files_selected = selected.size();

  if (!tasks_.empty()) {
    uint64_t avail = free_bytes(opt_.dir);
    if (avail < bytes_needed)
      throw Error(ExitCode::kResource,
                  opt_.dir + ": needs " + format_bytes(bytes_needed) +
                      " of free space for the remaining files but only " + format_bytes(avail) +
                      " are available; free some space, or fetch fewer files with --include/--exclude");
  }

  const int jobs = std::max(1, std::min<int>(opt_.jobs, static_cast<int>(std::max<size_t>(tasks_.size(), 1))));
  progress_ = std::make_unique<TransferProgress>(opt_.log_prefix, opt_.tty, opt_.progress_interval_s, jobs,
                                                 sum.bytes_selected, selected.size());
  progress_->add_finished(bytes_done, files_done);
  progress_->log(opt_.repo + " at commit " + commit_ + ": " + std::to_string(selected.size()) + " files (" +
                 format_bytes(sum.bytes_selected) + "), " + std::to_string(files_done) + " already complete, " +
                 std::to_string(tasks_.size()) + " to fetch");
  run_workers(jobs);

  sum.files_downloaded = files_downloaded_.load();
  sum.bytes_received = progress_->network_bytes();
  sum.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (first_error_) std::rethrow_exception(first_error_);
  if (interrupted_ && interrupted_->load())
    throw Error(ExitCode::kInterrupted,
                "interrupted: finished files are kept, partial ones stay as .part; run the "
                "same command again to resume");
  return sum;
}

}  // namespace

DownloadSummary download_repo(const DownloadOptions& opt, const std::atomic<bool>* interrupted) {
  if (opt.dir.empty()) throw Error(ExitCode::kUsage, "no target directory given");
  Downloader d(opt, interrupted);
  return d.run();
}

}  // namespace k3
