// A .safetensors file (8-byte length, JSON header, data) through the one
// header parser every tool uses, and the in-memory header parser.
#include "checkpoint/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static k3::fuzz::MemoryFile file;
  const std::string& path = file.write(data, size);
  k3::fuzz::expect_clean([&] {
    uint64_t bytes = 0;
    k3::read_safetensors_tensors(path, [&](k3::TensorInfo&& t) { bytes += t.nbytes; });
  });
  if (size > 8)
    k3::fuzz::expect_clean([&] {
      k3::parse_safetensors_header("x", std::string(reinterpret_cast<const char*>(data) + 8, size - 8), 1u << 20);
    });
  return 0;
}
