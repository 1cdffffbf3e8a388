#include "runtime/trunk_section_check.h"

#include <xxhash.h>

#include <algorithm>
#include <memory>

#include "common/error.h"
#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"

namespace k3 {

std::string section_hash_problem(const TrunkSection& section, uint64_t xxh3, const std::string& trunk_bin) {
  if (xxh3 == section.xxh3) return "";
  return trunk_bin + ": section " + section.name +
         " does not match its hash in trunk.json (corrupted; run k3-pack --check, then re-run k3-pack)";
}

void require_section_hash(const TrunkSection& section, uint64_t xxh3, const std::string& trunk_bin) {
  const std::string problem = section_hash_problem(section, xxh3, trunk_bin);
  if (!problem.empty()) throw Error(ExitCode::kBadModel, problem);
}

uint64_t verify_section_by_reading(ReadEngine& io, const DirectFile& trunk, const TrunkSection& section,
                                   const std::string& trunk_bin) {
  constexpr uint64_t kPiece = 8u << 20;  // a multiple of the 4096-byte alignment of sections
  const uint64_t n_pieces = (section.length + kPiece - 1) / kPiece;
  AlignedBuffer buf[2] = {AlignedBuffer(std::min(kPiece, section.length)),
                          AlignedBuffer(std::min(kPiece, section.length))};
  std::unique_ptr<ReadLatch> latch[2];
  auto issue = [&](uint64_t k) {
    const uint64_t off = k * kPiece, len = std::min(kPiece, section.length - off);
    latch[k % 2] = std::make_unique<ReadLatch>();
    io.submit({ReadEngine::Read{&trunk, section.stored_offset + off, len, len, buf[k % 2].data()}}, latch[k % 2]->callback(),
              false);
  };
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  try {
    if (n_pieces) issue(0);
    for (uint64_t k = 0; k < n_pieces; ++k) {
      if (k + 1 < n_pieces) issue(k + 1);  // the next piece reads while this one hashes
      latch[k % 2]->wait();
      XXH3_64bits_update(st, buf[k % 2].data(), std::min(kPiece, section.length - k * kPiece));
    }
  } catch (...) {
    // Never leave a read writing into a buffer that is going away.
    for (auto& l : latch)
      if (l) try {
          l->wait();
        } catch (...) {
        }
    XXH3_freeState(st);
    throw;
  }
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  require_section_hash(section, h, trunk_bin);
  return section.length;
}

}  // namespace k3
