// trunk.json, as k3-forward, k3-pack --check/--refresh and k3-doctor read it.
#include "fuzz_input.h"
#include "checkpoint/trunk_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  k3::fuzz::expect_clean([&] {
    k3::TrunkLayout t = k3::parse_trunk_layout(std::string(reinterpret_cast<const char*>(data), size), "trunk.json");
    // What readers do next with a layout that parsed.
    (void)t.layer_bytes();
    (void)t.section("head");
    k3::parse_trunk_layout(k3::trunk_layout_to_json(t), "round trip");
  });
  return 0;
}
