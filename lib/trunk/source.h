// What k3-pack's writer and checker share: the trunk's bytes gathered from
// the checkpoint's shards, section by section, and the scans and hashes run
// over them.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/non_finite_scan.h"
#include "common/file.h"
#include "trunk/layout.h"

namespace k3 {

// An xxh3 streaming state that is freed however its scope is left.
class Xxh3State {
 public:
  Xxh3State() : st_(XXH3_createState()) {}
  ~Xxh3State() { XXH3_freeState(st_); }
  Xxh3State(const Xxh3State&) = delete;
  Xxh3State& operator=(const Xxh3State&) = delete;
  XXH3_state_t* get() const { return st_; }

 private:
  XXH3_state_t* st_;
};

// Bytes read from a shard (or trunk.bin) per call.
constexpr uint64_t kChunk = 16u << 20;

// Opened shard files, by index into Checkpoint::shards().
class ShardFiles {
 public:
  explicit ShardFiles(const Checkpoint& c) : c_(c), files_(c.shards().size()) {}
  const File& at(uint32_t i);

 private:
  const Checkpoint& c_;
  std::vector<std::unique_ptr<File>> files_;
};

// Produces the bytes of `section` in file order (tensors from the shards,
// zero padding between them) in chunks: sink(section-relative offset, data, n).
void stream_section(const TrunkSection& s, const Checkpoint& c, ShardFiles& files, std::vector<uint8_t>& buf,
                    const std::function<void(uint64_t, const uint8_t*, uint64_t)>& sink);

// The floating-point trunk tensors, for a NaN/Inf scan of trunk.bin's bytes.
NonFiniteScan trunk_float_scan(const TrunkLayout& t);

}  // namespace k3
