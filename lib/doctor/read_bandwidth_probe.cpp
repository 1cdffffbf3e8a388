#include "doctor/read_bandwidth_probe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "common/byte_format.h"
#include "common/read_at.h"

namespace k3::doctor {

namespace {
constexpr uint64_t kAlign = 4096;  // covers every logical block size in use

using Clock = std::chrono::steady_clock;

struct AlignedBuffer {
  void* p = nullptr;
  explicit AlignedBuffer(size_t n) {
    if (posix_memalign(&p, kAlign, n) != 0) p = nullptr;
  }
  ~AlignedBuffer() { std::free(p); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

// Where aligned requests of one size can start: per data extent that holds
// one, its first aligned start and the number of starts; a random start is
// drawn over all of them, so each byte of data is as likely to be read.
struct RequestStarts {
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // (first start, starts)
  uint64_t total = 0;
  uint64_t at(uint64_t n) const {
    for (const auto& [first, count] : runs) {
      if (n < count) return first + n * kAlign;
      n -= count;
    }
    return 0;  // n < total: not reached
  }
};

RequestStarts request_starts(const std::vector<DataExtent>& extents, uint64_t request) {
  RequestStarts r;
  for (const DataExtent& e : extents) {
    const uint64_t first = (e.offset + kAlign - 1) / kAlign * kAlign;
    const uint64_t end = e.offset + e.length;
    if (first + request > end) continue;
    const uint64_t count = (end - request - first) / kAlign + 1;
    r.runs.emplace_back(first, count);
    r.total += count;
  }
  return r;
}

// Runs one (size, depth) point within its own time and byte share.
ProbePoint run_point(int fd, const std::vector<DataExtent>& extents, uint64_t request, int depth, double seconds,
                     uint64_t byte_cap, std::string* error) {
  ProbePoint pt;
  pt.request_bytes = request;
  pt.queue_depth = depth;
  const RequestStarts starts = request_starts(extents, request);
  if (starts.total == 0) {
    pt.skipped = true;
    return pt;
  }
  std::vector<std::unique_ptr<AlignedBuffer>> buffers;
  for (int t = 0; t < depth; ++t) {
    buffers.push_back(std::make_unique<AlignedBuffer>(request));
    if (!buffers.back()->p) {
      *error = "cannot allocate " + std::to_string(request) + " bytes for a read buffer";
      return pt;
    }
  }
  std::atomic<uint64_t> reserved{0}, done_bytes{0}, done_requests{0};
  std::atomic<int> first_errno{0};
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  auto worker = [&](int t) {
    // Fixed seed: the same offsets on every run, so runs are comparable.
    std::mt19937_64 rng(0x6b33646f63746f72ULL + static_cast<uint64_t>(t) * 7919 + request);
    std::uniform_int_distribution<uint64_t> pick(0, starts.total - 1);
    while (Clock::now() < deadline && first_errno.load() == 0) {
      if (reserved.fetch_add(request) + request > byte_cap) break;
      const uint64_t offset = starts.at(pick(rng));
      char* dst = static_cast<char*>(buffers[t]->p);
      const ReadAtResult r = read_at(fd, dst, request, offset);
      if (r.bytes < request) {
        int expected = 0;
        first_errno.compare_exchange_strong(expected, r.error ? r.error : EIO);
        break;
      }
      done_bytes.fetch_add(request);
      done_requests.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < depth; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  pt.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  pt.bytes = done_bytes.load();
  pt.requests = done_requests.load();
  if (int e = first_errno.load()) *error = std::string("read failed: ") + std::strerror(e);
  return pt;
}
}  // namespace

std::vector<DataExtent> data_extents(int fd, uint64_t file_size, size_t max_extents) {
  std::vector<DataExtent> out;
  uint64_t pos = 0;
  while (pos < file_size && out.size() < max_extents) {
    const off_t data = ::lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
    if (data < 0) {
      // ENXIO: no data from here on. Anything else (EINVAL: a file system
      // without hole reporting): the rest counts as data.
      if (errno != ENXIO) out.push_back({pos, file_size - pos});
      break;
    }
    const off_t hole = ::lseek(fd, data, SEEK_HOLE);
    const uint64_t end = hole < 0 ? file_size : std::min(file_size, static_cast<uint64_t>(hole));
    if (end <= static_cast<uint64_t>(data)) break;
    out.push_back({static_cast<uint64_t>(data), end - static_cast<uint64_t>(data)});
    pos = end;
  }
  return out;
}

double ProbeResult::best_mb_per_s(uint64_t request_bytes) const {
  const uint64_t want = (request_bytes + kAlign - 1) / kAlign * kAlign;
  double best = 0;
  for (const ProbePoint& p : points)
    if (!p.skipped && p.request_bytes == want) best = std::max(best, p.mb_per_s());
  return best;
}

ProbeResult probe_read_bandwidth(const std::string& file, const ProbeLimits& limits) {
  ProbeResult res;
  res.file = file;
  const auto start = Clock::now();
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  res.direct = fd >= 0;
  if (fd < 0 && errno == EINVAL) fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    res.error = std::string("cannot open: ") + std::strerror(errno);
    return res;
  }
  struct stat st;
  if (::fstat(fd, &st) == 0) res.file_size = static_cast<uint64_t>(st.st_size);
  const std::vector<DataExtent> extents = data_extents(fd, res.file_size);
  for (const DataExtent& e : extents) res.data_bytes += e.length;

  std::vector<std::pair<uint64_t, int>> plan;
  for (uint64_t r : limits.request_bytes) {
    const uint64_t aligned = std::max(kAlign, (r + kAlign - 1) / kAlign * kAlign);
    for (int d : limits.queue_depths)
      if (d > 0) plan.emplace_back(aligned, d);
  }
  const double share_s = plan.empty() ? 0 : limits.seconds / plan.size();
  const uint64_t share_b = plan.empty() ? 0 : limits.max_bytes / plan.size();
  for (auto [req, depth] : plan) {
    ProbePoint pt = run_point(fd, extents, req, depth, share_s, share_b, &res.error);
    res.total_bytes += pt.bytes;
    res.points.push_back(pt);
    if (!res.error.empty()) break;
  }
  ::close(fd);
  const bool none_ran =
      std::all_of(res.points.begin(), res.points.end(), [](const ProbePoint& p) { return p.skipped; });
  if (res.error.empty() && !plan.empty() && none_ran && res.data_bytes < res.file_size)
    res.error = "cannot measure: a sparse file with " + format_bytes(res.data_bytes) + " of data in " +
                format_bytes(res.file_size) + " (its holes read as zeros without the disk), too little for one read";
  res.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return res;
}

}  // namespace k3::doctor
