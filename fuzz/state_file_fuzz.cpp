// A state file (--state-in) read against the tiny fixture model, so a file
// whose fingerprint and geometry match goes on to the tensors' checks.
#include "checkpoint/checkpoint.h"
#include "fuzz_input.h"
#include "model/config.h"
#include "state/model_fingerprint.h"
#include "state/state_file.h"
#include "state/state_geometry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const k3::ModelConfig config = k3::load_model_config(K3_FUZZ_TINY);
  static const k3::ModelFingerprint fingerprint =
      k3::fingerprint_model(k3::Checkpoint::open(K3_FUZZ_TINY));
  static const k3::StateGeometry geometry = k3::StateGeometry::from_config(config);
  static k3::fuzz::MemoryFile file;
  const std::string& path = file.write(data, size);
  k3::fuzz::expect_clean([&] { k3::read_state_file(path, fingerprint, geometry); });
  return 0;
}
