// tiktoken.model and tokenizer_config.json (input: "tiktoken\0config").
#include "fuzz_input.h"
#include "tokenizer/vocabulary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = k3::fuzz::split_input(data, size, 2);
  k3::fuzz::expect_clean([&] { k3::Vocabulary::parse(parts[0], parts[1]); });
  return 0;
}
