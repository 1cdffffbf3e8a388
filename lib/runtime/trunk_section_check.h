// Every section of a packed trunk is checked against its xxh3 in trunk.json
// the first time a run reads it, whatever the budget:
//  - pinned sections after their read at start;
//  - streamed layer sections on their first pass through a stream buffer
//    (hashed on the I/O thread that read them, while the compute goes on);
//  - the embedding and a streamed head, whose rows are read piecemeal, by
//    one sequential hashing pass at start (verify_section_by_reading).
// xxh3 hashes at several times the speed of an NVMe read, so a check costs a
// fraction of the read it follows.
#pragma once

#include <cstdint>
#include <string>

#include "checkpoint/trunk_layout.h"

namespace k3 {

class DirectFile;
class ReadEngine;

// Empty when `xxh3` is the hash trunk.json records for `section`, else the
// message naming `trunk_bin` and the section (for a read callback to hand on).
std::string section_hash_problem(const TrunkSection& section, uint64_t xxh3, const std::string& trunk_bin);
// The same check, throwing k3::Error(kBadModel) with that message.
void require_section_hash(const TrunkSection& section, uint64_t xxh3, const std::string& trunk_bin);

// Reads `section` from `trunk` in order through `io` (in pieces of at most
// 8 MiB, two in flight) hashing as it goes, and checks the hash. Returns the
// bytes read.
uint64_t verify_section_by_reading(ReadEngine& io, const DirectFile& trunk, const TrunkSection& section,
                                   const std::string& trunk_bin);

}  // namespace k3
