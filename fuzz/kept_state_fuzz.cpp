// k3-serve's kept-state restore (serve/kept_state.h): a file in --cache-dir,
// which anyone with access to the directory may have replaced, read back for
// the tiny fixture model and the ids the cache kept it under. Whatever the
// file holds, the restore gives that state or nothing, never a crash or an
// exception other than a refusal; and it gives the state only for exactly
// the ids the file holds: asked with those ids it restores them, asked with
// one id changed, one more or one fewer it restores nothing.
//
// As in state_file_fuzz, inputs long enough to hold a header and a checksum
// get their size field and XXH3 repaired, so the fuzzer's changes reach the
// sections (ids, pending ids, layers) and the id comparison after them.
#include <xxhash.h>

#include <cstring>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "fuzz_input.h"
#include "model/config.h"
#include "serve/kept_state.h"
#include "state/continuation.h"
#include "state/model_fingerprint.h"
#include "state/state_geometry.h"
#include "state/state_layout.h"

namespace {
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
  static const k3::ModelIdentity model{k3::fingerprint_model(k3::Checkpoint::open(K3_FUZZ_TINY)),
                                       k3::StateGeometry::from_config(config)};
  static k3::fuzz::MemoryFile file;
  const std::vector<uint8_t> repaired = with_valid_checksum(data, size);
  const std::string& path = file.write(repaired.data(), repaired.size());
  // The ids the file holds, when it reads as a state of this model at all.
  std::vector<int32_t> held;
  bool reads = false;
  try {
    const k3::ConversationState s = k3::load_conversation(path, model);
    held = s.sequence.tokens;
    held.insert(held.end(), s.pending.begin(), s.pending.end());
    reads = true;
  } catch (const k3::Error&) {}
  k3::fuzz::expect_clean([&] {
    const std::optional<k3::ConversationState> kept = k3::serve::read_kept_state(path, model, held);
    if (kept.has_value() != reads) std::abort();  // its own ids restore it exactly when it reads
    std::vector<int32_t> other = held;
    other.push_back(1);
    if (k3::serve::read_kept_state(path, model, other)) std::abort();  // one more id
    if (!held.empty()) {
      other = held;
      other.back() ^= 1;
      if (k3::serve::read_kept_state(path, model, other)) std::abort();  // one id changed
      other.assign(held.begin(), held.end() - 1);
      if (k3::serve::read_kept_state(path, model, other)) std::abort();  // one fewer
    }
  });
  return 0;
}
