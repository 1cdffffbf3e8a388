// config.json and generation_config.json (input: "config\0generation").
#include "fuzz_input.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = k3::fuzz::split_input(data, size, 2);
  k3::fuzz::expect_clean([&] { k3::parse_model_config(parts[0], parts[1], "config.json"); });
  return 0;
}
