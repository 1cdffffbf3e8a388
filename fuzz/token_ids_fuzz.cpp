// Token ids as text on a pipe (k3-forward, k3-detok): any bytes.
#include "cli/token_id_reader.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  k3::fuzz::expect_clean([&] { k3::parse_token_ids(text, "stdin", 8448); });
  k3::fuzz::expect_clean([&] { k3::parse_token_ids(text, "stdin", 163840); });
  return 0;
}
