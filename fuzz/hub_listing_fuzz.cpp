// The hub's tree listing page and the Link header that pages it
// (input: "listing json\0link header").
#include "fetch/http_get.h"
#include "fetch/hub_listing.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = k3::fuzz::split_input(data, size, 2);
  k3::fuzz::expect_clean([&] {
    std::vector<k3::HubFile> files;
    k3::parse_tree_page(parts[0], "https://hub.example/api/models/o/r/tree/main", &files);
    for (const k3::HubFile& f : files) (void)k3::is_safe_repo_path(f.path);
  });
  k3::fuzz::expect_clean([&] { (void)k3::parse_link_next(parts[1]); });
  return 0;
}
