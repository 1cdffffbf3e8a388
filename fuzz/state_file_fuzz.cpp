// A state file (--state-in) read against the tiny fixture model, so a file
// whose fingerprint and geometry match goes on to the tensors' checks.
//
// The reader verifies a whole-file XXH3 before it parses a single section,
// so raw mutated bytes would almost never get past it. The harness repairs
// what guards the parser instead: for inputs long enough to hold a header
// and a checksum, it writes the input's own size into the header's size
// field and the XXH3 of everything before the last 8 bytes into them. The
// fuzzer's changes then reach the section parser (version, flags, section
// tags, lengths, ids, layers). Shorter inputs go in as they are, for the
// refusals in front of the checksum. The same file goes through
// read_state_summary (the prompt cache's index, which reads the leading
// sections and no checksum, so the repaired size field is what lets the
// fuzzer's changes reach its sections).
#include <xxhash.h>

#include <cstring>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "fuzz_input.h"
#include "model/config.h"
#include "state/model_fingerprint.h"
#include "state/state_file.h"
#include "state/state_file_summary.h"
#include "state/state_geometry.h"
#include "state/state_layout.h"

namespace {
// The input with its size field and checksum made consistent (see above).
std::vector<uint8_t> with_valid_checksum(const uint8_t* data, size_t size) {
  namespace L = k3::state_layout;
  std::vector<uint8_t> file(data, data + size);
  if (size < L::kHeaderBytes + L::kChecksumBytes) return file;
  const uint64_t declared = size;
  std::memcpy(file.data() + 16, &declared, 8);  // header: magic 8, version 4, flags 4, file size 8
  const uint64_t sum = XXH3_64bits(file.data(), size - L::kChecksumBytes);
  std::memcpy(file.data() + size - L::kChecksumBytes, &sum, 8);
  return file;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const k3::ModelConfig config = k3::load_model_config(K3_FUZZ_TINY);
  static const k3::ModelFingerprint fingerprint = k3::fingerprint_model(k3::Checkpoint::open(K3_FUZZ_TINY));
  static const k3::StateGeometry geometry = k3::StateGeometry::from_config(config);
  static k3::fuzz::MemoryFile file;
  const std::vector<uint8_t> repaired = with_valid_checksum(data, size);
  const std::string& path = file.write(repaired.data(), repaired.size());
  k3::fuzz::expect_clean([&] { k3::read_state_file(path, fingerprint, geometry); });
  k3::fuzz::expect_clean([&] { k3::read_state_summary(path); });
  return 0;
}
