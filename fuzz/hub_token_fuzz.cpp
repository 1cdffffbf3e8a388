// The Hub token from a token file (the input, reached through
// HF_TOKEN_PATH) and from --token (the input as the flag's value). A token
// that is accepted must be safe as one HTTP header line: at most
// kMaxHubTokenBytes of printable ASCII without spaces.
#include <cstdlib>
#include <string>

#include "fetch/hub_token.h"
#include "fuzz_input.h"

namespace {
std::string g_path;
const char* fake_getenv(const char* name) { return std::string(name) == "HF_TOKEN_PATH" ? g_path.c_str() : nullptr; }

void expect_header_safe(const k3::HubToken& t) {
  if (t.value.size() > k3::kMaxHubTokenBytes) std::abort();
  for (char c : t.value)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static k3::fuzz::MemoryFile file;
  g_path = file.write(data, size);
  k3::fuzz::expect_clean([&] { expect_header_safe(k3::find_hub_token("", fake_getenv)); });
  const std::string flag(reinterpret_cast<const char*>(data), size);
  if (!flag.empty()) k3::fuzz::expect_clean([&] { expect_header_safe(k3::find_hub_token(flag, fake_getenv)); });
  return 0;
}
