// What a state file says it holds, read from its first sections only: the
// model it was saved for and its ids. A directory of state files (k3-serve's
// prompt cache) is indexed with this at start-up without reading whole
// states, which at K3 size are hundreds of MB each.
//
// Nothing here is verified by the file's checksum (that needs every byte):
// the summary is only a hint of what the file holds. Whoever continues from
// the file reads it with read_state_file, which checks everything, and
// compares the ids again (serve/kept_state.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "state/model_fingerprint.h"
#include "state/state_geometry.h"

namespace k3 {

struct StateFileSummary {
  ModelFingerprint model;
  StateGeometry geometry;
  std::vector<int32_t> ids;  // evaluated, then pending
  uint64_t file_bytes = 0;   // the file's size, as its header declares it
};

// Reads the header, model, geometry, token and pending sections of `path`.
// Refuses (k3::Error kBadInput, naming the file) what is not a state file of
// this format, a file whose size is not the one its header declares
// (truncated or extended), and sections that are malformed or run past the
// end; kIo when the file cannot be read.
StateFileSummary read_state_summary(const std::string& path);

}  // namespace k3
