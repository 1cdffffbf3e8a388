#include "verify/checkpoint_verifier.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "checkpoint/checkpoint_index.h"
#include "checkpoint/non_finite_scan.h"
#include "checkpoint/safetensors.h"
#include "common/clock.h"
#include "common/command_keys.h"
#include "common/error.h"
#include "common/file.h"
#include "common/setting_spelling.h"
#include "fetch/fetch_manifest.h"
#include "fetch/transfer_progress.h"
#include "io/file_digest.h"
#include "verify/known_checkpoints.h"

namespace k3 {

std::string VerifyProblem::line() const { return file + ": " + what + ": expected " + expected + ", found " + found; }

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleFileName = "model.safetensors";

struct Stat {
  bool exists = false;
  bool regular = false;
  uint64_t size = 0;
};

Stat stat_file(const std::string& path) {
  Stat s;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    s.exists = true;
    s.regular = S_ISREG(st.st_mode);
    s.size = static_cast<uint64_t>(st.st_size);
  }
  return s;
}

std::string bytes_str(uint64_t n) { return std::to_string(n) + " bytes"; }

// "model-00003-of-00096.safetensors" -> (3, 96); false for other names.
bool parse_shard_name(const std::string& name, unsigned* k, unsigned* n) {
  static const std::string kPattern = "model-#####-of-#####.safetensors";
  if (name.size() != kPattern.size()) return false;
  unsigned vals[2] = {0, 0};
  int which = -1;
  for (size_t i = 0; i < name.size(); ++i) {
    if (kPattern[i] == '#') {
      if (name[i] < '0' || name[i] > '9') return false;
      if (i == 0 || kPattern[i - 1] != '#') ++which;
      vals[which] = vals[which] * 10 + static_cast<unsigned>(name[i] - '0');
    } else if (name[i] != kPattern[i]) {
      return false;
    }
  }
  *k = vals[0];
  *n = vals[1];
  return true;
}

}  // namespace

std::string checkpoint_model_type(const std::string& dir) {
  std::string path = path_join(dir, "config.json");
  if (!file_exists(path)) return "";
  try {
    std::string text = read_text_file(path);
    simdjson::dom::parser parser;
    simdjson::padded_string padded(text);
    simdjson::dom::element root;
    std::string_view mt;
    if (parser.parse(padded).get(root) || root["model_type"].get_string().get(mt)) return "";
    return std::string(mt);
  } catch (const Error&) {
    return "";
  }
}

namespace {

class Verifier {
 public:
  Verifier(const VerifyOptions& opt, const std::atomic<bool>* interrupted) : opt_(opt), interrupted_(interrupted) {}

  VerifyReport run() {
    Stat d = stat_file(opt_.dir);
    if (!d.exists) throw Error(ExitCode::kUsage, opt_.dir + ": no such directory");
    load_manifest();
    check_manifest_files();
    check_config_files();
    check_index_and_shards();
    if (opt_.full) rehash_all();
    return std::move(r_);
  }

 private:
  void problem(std::string file, std::string what, std::string expected, std::string found) {
    r_.problems.push_back({std::move(file), std::move(what), std::move(expected), std::move(found)});
  }
  // A problem that also stops the checks that need the file: they are listed
  // as not run, with why.
  void blocking_problem(std::string file, std::string what, std::string expected, std::string found,
                        std::string checks_not_run) {
    problem(std::move(file), std::move(what), std::move(expected), std::move(found));
    r_.not_run.push_back(std::move(checks_not_run));
  }
  // Reads a file the later checks need; what does not parse is a blocking
  // problem (its error as what was found) and nullopt.
  template <typename Read>
  auto read_needed(Read read, std::string file, std::string what, std::string expected, std::string checks_not_run)
      -> std::optional<decltype(read())> {
    try {
      return read();
    } catch (const Error& e) {
      blocking_problem(std::move(file), std::move(what), std::move(expected), e.what(), std::move(checks_not_run));
      return std::nullopt;
    }
  }

  void load_manifest() {
    const std::string mpath = fetch_manifest_path(opt_.dir);
    if (file_exists(mpath)) {
      manifest_ = read_needed([&] { return read_fetch_manifest(mpath); }, kFetchManifestName, "manifest",
                              "a readable download manifest",
                              "sizes and hashes against the manifest: the manifest does not parse");
      return;
    }
    const std::string why = "no " + std::string(kFetchManifestName) + " in the directory (it is written by " +
                            spelled(kDownloadCheckpoint) + ")";
    if (opt_.no_manifest) r_.waived.push_back("sizes against the manifest: " + why);
    else
      r_.not_run.push_back("sizes against the manifest: " + why + "; pass " + spelled(verify_setting::kNoManifest) +
                           " to accept that");
    if (opt_.full)
      r_.not_run.push_back(spelled(verify_setting::kFull) + " hashes: " + why +
                           ", so there is no hub hash to compare with");
  }

  void check_manifest_files() {
    if (!manifest_) return;
    r_.ran.push_back("every file of the manifest is present, complete and of the recorded size (" +
                     std::to_string(manifest_->files.size()) + " files, commit " + manifest_->commit + ")");
    for (const ManifestFile& f : manifest_->files) {
      const std::string path = path_join(opt_.dir, f.path);
      Stat s = stat_file(path);
      if (!s.exists) {
        Stat part = stat_file(path + ".part");
        problem(f.path, "missing", "a file of " + bytes_str(f.size),
                part.exists ? "only " + f.path + ".part with " + bytes_str(part.size) + " (download not finished)"
                            : "no file");
        continue;
      }
      if (!s.regular) {
        problem(f.path, "not a regular file", "a file of " + bytes_str(f.size), "something else");
        continue;
      }
      if (s.size != f.size) {
        problem(f.path, "size", bytes_str(f.size), bytes_str(s.size));
        continue;
      }
      if (!f.complete)
        problem(f.path, "download not verified", "a file the downloader verified and marked complete",
                "an entry still marked incomplete (run " + spelled(kDownloadCheckpoint) + " again)");
    }
  }

  // The small files a run reads first, with or without a manifest: each is
  // a regular file (a link to /dev/zero or a FIFO is not) and config.json
  // parses. Without this, `verify --no-manifest` said ok for a config.json
  // that every tool refuses.
  void check_config_files() {
    r_.ran.push_back("config.json and the other JSON and tokenizer files are regular files; config.json parses");
    for (const char* name : {"config.json", "generation_config.json", "tokenizer_config.json", "tiktoken.model"}) {
      const std::string path = path_join(opt_.dir, name);
      const Stat s = stat_file(path);
      const bool required = std::string(name) == "config.json";
      if (!s.exists) {
        if (required) problem(name, "missing", "the model's config.json", "no file");
        continue;
      }
      if (!s.regular) {
        if (!manifest_ || !manifest_->find(name))  // else check_manifest_files reported it
          problem(name, "not a regular file", "a regular file",
                  "a device, FIFO, socket or directory (or a link to one)");
        continue;
      }
      if (!required) continue;
      try {
        const std::string text = read_text_file(path);
        simdjson::dom::parser parser;
        simdjson::padded_string padded(text);
        simdjson::dom::element root;
        simdjson::dom::object obj;
        if (parser.parse(padded).get(root) || root.get_object().get(obj))
          problem(name, "does not parse", "a JSON object", "not JSON, or not an object");
      } catch (const Error& e) {
        problem(name, "unreadable", "a readable config.json", e.what());
      }
    }
  }

  // A checkpoint small enough for one file (a draft model such as
  // Kimi-K3-DSpark) has no index: the single model.safetensors is the shard,
  // its header must parse with every tensor inside the file.
  void check_single_file() {
    r_.ran.push_back(std::string("the single-file checkpoint (") + kSingleFileName +
                     ", no index): its safetensors header parses and holds every tensor inside the file");
    const std::string path = path_join(opt_.dir, kSingleFileName);
    const Stat st = stat_file(path);
    if (!st.regular) {
      problem(kSingleFileName, "not a regular file", "a regular file", "a device, FIFO, socket or directory");
      return;
    }
    if (manifest_ && !manifest_->find(kSingleFileName))
      problem(kSingleFileName, "not in the manifest", "an entry with the hub's hash", "none (fetched by other means?)");
    ++r_.shards;
    r_.shard_bytes += st.size;
    try {
      const SafetensorsHeader hdr = read_safetensors_header(path);
      if (hdr.tensors.empty()) problem(kSingleFileName, "header", "at least one tensor", "none");
    } catch (const Error& e) {
      problem(kSingleFileName, "header", "a valid safetensors header with every tensor inside the file", e.what());
    }
  }

  void check_index_and_shards() {
    const std::string index_path = path_join(opt_.dir, kIndexName);
    if (!file_exists(index_path) && file_exists(path_join(opt_.dir, kSingleFileName))) {
      check_single_file();
      return;
    }
    if (!file_exists(index_path)) {
      blocking_problem(kIndexName, "missing", "the checkpoint index", "no file",
                       "shard names, headers and tensors against the index: no index");
      return;
    }
    const std::optional<CheckpointIndex> parsed = read_needed(
        [&] { return read_checkpoint_index(index_path); }, kIndexName, "does not parse", "a valid checkpoint index",
        "shard names, headers and tensors against the index: the index does not parse");
    if (!parsed) return;
    const unsigned declared = check_shard_names(*parsed);
    check_shard_headers(*parsed);
    check_k3_totals(*parsed, declared);
  }

  // Names: model-0000k-of-N for k = 1..N, each exactly once, no stray shard
  // file, each in the manifest. Returns N (0 when the names do not follow it).
  unsigned check_shard_names(const CheckpointIndex& idx) {
    r_.ran.push_back("shard count and names against the index (" + std::to_string(idx.shards.size()) + " shards)");
    std::set<unsigned> numbers;
    unsigned declared = 0;
    bool patterned = !idx.shards.empty();
    for (const std::string& s : idx.shards) {
      unsigned k = 0, n = 0;
      if (!parse_shard_name(s, &k, &n)) {
        patterned = false;
        continue;
      }
      if (declared == 0) declared = n;
      if (n != declared)
        problem(s, "shard name", "model-XXXXX-of-" + std::to_string(declared), "of-" + std::to_string(n));
      if (k == 0 || k > n) problem(s, "shard name", "a number from 1 to " + std::to_string(n), std::to_string(k));
      numbers.insert(k);
    }
    if (patterned && declared) {
      if (idx.shards.size() != declared)
        problem(kIndexName, "shard count", std::to_string(declared) + " shards (from the names)",
                std::to_string(idx.shards.size()) + " shards named in weight_map");
      for (unsigned k = 1; k <= declared; ++k)
        if (!numbers.count(k)) {
          char name[64];
          std::snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", k, declared);
          problem(kIndexName, "shard not named by any tensor", name, "no weight_map entry");
        }
    }
    // Shard files in the directory that the index does not name.
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(opt_.dir, ec)) {
      std::string name = e.path().filename().string();
      unsigned k, n;
      if (parse_shard_name(name, &k, &n) && !std::binary_search(idx.shards.begin(), idx.shards.end(), name))
        problem(name, "stray shard", "only shards the index names", "a shard file the index does not name");
    }
    if (manifest_) {
      for (const std::string& s : idx.shards)
        if (!manifest_->find(s))
          problem(s, "not in the manifest", "an entry with the hub's hash", "none (fetched by other means?)");
    }
    return declared;
  }

  // Every shard's header parses and holds the tensors the index puts there.
  void check_shard_headers(const CheckpointIndex& idx) {
    std::map<std::string, std::vector<const std::string*>> by_shard;
    for (const auto& [tensor, shard] : idx.weight_map) by_shard[shard].push_back(&tensor);
    r_.ran.push_back("every shard's safetensors header parses and holds its weight_map tensors inside the file (" +
                     std::to_string(idx.weight_map.size()) + " tensors)");
    for (const std::string& s : idx.shards) {
      const std::string path = path_join(opt_.dir, s);
      Stat st = stat_file(path);
      if (!st.exists) {
        if (!manifest_ || !manifest_->find(s))  // else already reported as missing
          problem(s, "missing", "the shard named by the index", "no file");
        continue;
      }
      ++r_.shards;
      r_.shard_bytes += st.size;
      SafetensorsHeader hdr;
      try {
        hdr = read_safetensors_header(path);
      } catch (const Error& e) {
        problem(s, "header", "a valid safetensors header with every tensor inside the file", e.what());
        continue;
      }
      size_t missing = 0;
      for (const std::string* t : by_shard[s]) {
        if (hdr.tensors.count(*t)) continue;
        if (++missing <= 10) problem(s, "tensor missing", "'" + *t + "' (named by the index)", "not in the header");
      }
      if (missing > 10)
        problem(s, "tensors missing", "all " + std::to_string(by_shard[s].size()) + " tensors the index names",
                std::to_string(missing) + " missing (first 10 listed above)");
    }
  }

  // The published totals of Kimi-K3, for a checkpoint that says it is one.
  void check_k3_totals(const CheckpointIndex& idx, unsigned declared) {
    const bool k3 = checkpoint_model_type(opt_.dir) == kKimiK3ModelType &&
                    (idx.shards.size() == kKimiK3ShardCount || declared == kKimiK3ShardCount);
    if (k3) {
      r_.ran.push_back("Kimi-K3 totals (96 shards, 1560936091448 bytes)");
      if (idx.shards.size() != kKimiK3ShardCount)
        problem(kIndexName, "Kimi-K3 shard count", std::to_string(kKimiK3ShardCount),
                std::to_string(idx.shards.size()));
      if (r_.shard_bytes != kKimiK3ShardBytes || r_.shards != kKimiK3ShardCount)
        problem("(all shards)", "Kimi-K3 total shard bytes", bytes_str(kKimiK3ShardBytes) + " in 96 files",
                bytes_str(r_.shard_bytes) + " in " + std::to_string(r_.shards) + " files");
    }
  }

  struct HashJob {
    const ManifestFile* f;
    DigestResult d;
    std::string error;
    std::string non_finite;  // NaN/Inf weights found while hashing a shard
  };

  // Hashes one file (and scans a shard for NaN/Inf on the same pass) into `job`.
  void hash_file(HashJob& job, TransferSlot& slot, TransferProgress& progress, const std::atomic<bool>& stop) {
    const std::string path = path_join(opt_.dir, job.f->path);
    try {
      File file = File::open_read(path);
      FileDigest digest(job.f->lfs || job.f->git_oid.empty() ? -1 : static_cast<int64_t>(job.f->size));
      std::function<bool(uint64_t)> on = [&](uint64_t n) {
        slot.done.fetch_add(n);
        progress.add_network_bytes(n);
        return !stop.load();
      };
      std::optional<NonFiniteScan> scan;
      if (path.size() > 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0) {
        try {
          std::vector<NonFiniteScan::Span> spans;
          read_safetensors_tensors(path, [&](TensorInfo&& ti) {
            spans.push_back({std::move(ti.name), ti.dtype, ti.offset, ti.nbytes});
          });
          scan.emplace(std::move(spans));
        } catch (const Error&) {
          // a bad header is reported by check_index_and_shards
        }
      }
      std::function<void(uint64_t, const void*, size_t)> on_data = [&](uint64_t off, const void* p, size_t n) {
        scan->feed(off, p, n);
      };
      digest_fd(file.fd(), path, UINT64_MAX, digest, &on, scan ? &on_data : nullptr);
      job.d = digest.finish();
      if (scan) job.non_finite = scan->summary();
    } catch (const Error& e) {
      job.error = e.what();
    }
  }

  void rehash_all() {
    if (!manifest_) return;  // reported in load_manifest
    std::vector<HashJob> jobs;
    uint64_t total = 0;
    for (const ManifestFile& f : manifest_->files) {
      Stat s = stat_file(path_join(opt_.dir, f.path));
      if (s.exists && s.regular && s.size == f.size) {  // others are already reported
        jobs.push_back({&f, {}, {}, {}});
        total += f.size;
      }
    }
    // Largest first, so the last file to start is a small one.
    std::vector<size_t> order(jobs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return jobs[a].f->size > jobs[b].f->size; });

    int threads = opt_.threads > 0 ? opt_.threads : static_cast<int>(std::thread::hardware_concurrency());
    threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(jobs.size(), 1))));
    TransferProgress progress(opt_.log_prefix + "hashing ", opt_.tty, opt_.progress_interval_s, threads, total,
                              jobs.size());
    std::atomic<size_t> next{0};
    std::atomic<int> running{threads};
    std::atomic<bool> stop{false};
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        TransferSlot& slot = progress.slot(t);
        for (;;) {
          size_t i = next.fetch_add(1);
          if (i >= order.size() || stop.load()) break;
          HashJob& job = jobs[order[i]];
          {
            std::lock_guard<std::mutex> lock(slot.mu);
            slot.name = job.f->path;
          }
          slot.size = job.f->size;
          slot.done = 0;
          hash_file(job, slot, progress, stop);
          progress.file_finished(job.f->size);
          std::lock_guard<std::mutex> lock(slot.mu);
          slot.name.clear();
        }
        running.fetch_sub(1);
      });
    }
    while (running.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (interrupted_ && interrupted_->load()) stop = true;
      progress.tick();
    }
    for (auto& th : pool) th.join();
    progress.finish();
    r_.hash_seconds = seconds_since(t0);
    if (stop.load()) throw Error(ExitCode::kInterrupted, "interrupted while hashing " + opt_.dir);

    r_.ran.push_back(spelled(verify_setting::kFull) +
                     ": sha256 against the hub's hashes, xxh3-128 against the manifest, no NaN/Inf in the shards' "
                     "floating-point tensors (" +
                     std::to_string(jobs.size()) + " files)");
    report_hashes(jobs);
  }

  // Each file's hashes against the manifest's, in path order.
  void report_hashes(std::vector<HashJob>& jobs) {
    std::sort(jobs.begin(), jobs.end(), [](const HashJob& a, const HashJob& b) { return a.f->path < b.f->path; });
    for (const HashJob& job : jobs) {
      const ManifestFile& f = *job.f;
      if (!job.error.empty()) {
        problem(f.path, "read failed", "a readable file", job.error);
        continue;
      }
      ++r_.files_hashed;
      r_.bytes_hashed += job.d.bytes;
      if (job.d.bytes != f.size) problem(f.path, "size while hashing", bytes_str(f.size), bytes_str(job.d.bytes));
      if (!f.sha256.empty() && job.d.sha256 != f.sha256)
        problem(f.path, f.lfs ? "sha256 (hub LFS hash)" : "sha256 (recorded at download)", f.sha256, job.d.sha256);
      if (!f.lfs && !f.git_oid.empty() && job.d.git_sha1 != f.git_oid)
        problem(f.path, "git blob sha1 (hub oid)", f.git_oid, job.d.git_sha1);
      if (!f.xxh3_128.empty() && job.d.xxh3_128 != f.xxh3_128)
        problem(f.path, "xxh3-128 (manifest)", f.xxh3_128, job.d.xxh3_128);
      if (f.sha256.empty() && f.xxh3_128.empty() && f.git_oid.empty())
        problem(f.path, "no hash to compare", "a hash in the manifest", "none");
      if (!job.non_finite.empty())
        problem(f.path, "NaN or infinite weights", "finite floating-point tensors", job.non_finite);
    }
  }

  const VerifyOptions& opt_;
  const std::atomic<bool>* interrupted_;
  std::optional<FetchManifest> manifest_;
  VerifyReport r_;
};

}  // namespace

VerifyReport verify_checkpoint_dir(const VerifyOptions& opt, const std::atomic<bool>* interrupted) {
  Verifier v(opt, interrupted);
  return v.run();
}

}  // namespace k3
