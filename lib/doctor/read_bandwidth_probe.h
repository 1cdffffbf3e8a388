// A short, bounded measurement of O_DIRECT random-read bandwidth on one file.
//
// k3-forward reads routed experts (~17.5 MB each for K3) at random places in
// the shards, several at once, bypassing the page cache. This probe issues
// the same kind of reads: aligned random offsets, one request size at a
// time, `queue_depth` threads each keeping one pread in flight. Every
// (size, depth) point gets an equal share of the time and byte budget. The
// byte cap is never exceeded (each request reserves its bytes before it is
// issued); the time bound is exceeded by at most one request per thread,
// because a pread in flight cannot be abandoned.
//
// Only the file's data is read: a hole of a sparse file (a headers-only or
// unfinished download) reads as zeros without touching the disk, at memory
// speed. Requests land inside the data extents SEEK_DATA/SEEK_HOLE report;
// a request size no extent holds is skipped, and a file with too little
// data for any is reported as not measurable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::doctor {

struct ProbeLimits {
  double seconds = 3.0;                    // whole probe
  uint64_t max_bytes = uint64_t{4} << 30;  // whole probe
  std::vector<uint64_t> request_bytes;     // rounded up to 4096
  std::vector<int> queue_depths = {1, 4, 16};
};

struct ProbePoint {
  uint64_t request_bytes = 0;
  int queue_depth = 0;
  uint64_t requests = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  bool skipped = false;  // the file is smaller than one request
  double mb_per_s() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
};

// A run of the file that holds data: [offset, offset + length).
struct DataExtent {
  uint64_t offset = 0, length = 0;
};
// The data extents of the open file `fd` of `file_size` bytes, in order, at
// most `max_extents` (the rest of the file is left out); the whole file as
// one extent where the file system does not tell holes.
std::vector<DataExtent> data_extents(int fd, uint64_t file_size, size_t max_extents = 1 << 16);

struct ProbeResult {
  std::string file;
  uint64_t file_size = 0;
  uint64_t data_bytes = 0;  // of file_size, in data extents (less: a sparse file, its holes not read)
  bool direct = false;      // false: O_DIRECT was refused, reads went through the page cache
  std::string error;        // non-empty: the probe could not run (open or read failed)
  std::vector<ProbePoint> points;
  uint64_t total_bytes = 0;
  double total_seconds = 0;
  // Best MB/s among points with this request size (0 when none ran).
  double best_mb_per_s(uint64_t request_bytes) const;
};

ProbeResult probe_read_bandwidth(const std::string& file, const ProbeLimits& limits);

}  // namespace k3::doctor
