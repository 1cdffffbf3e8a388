// The hub's tree listing page and the Link header that pages it
// (input: "listing json\0link header"). A listing that parses is also
// checked as list_hub_files checks it (each path listed once, never both a
// file and a folder); every accepted path must print as one line.
#include <algorithm>
#include <cstdlib>

#include "fetch/http_get.h"
#include "fetch/hub_listing.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = k3::fuzz::split_input(data, size, 2);
  k3::fuzz::expect_clean([&] {
    std::vector<k3::HubFile> files;
    k3::parse_tree_page(parts[0], "https://hub.example/api/models/o/r/tree/main", &files);
    for (const k3::HubFile& f : files) {
      if (!k3::is_safe_repo_path(f.path)) std::abort();  // parse_tree_page refuses unsafe paths
      const std::string shown = k3::printable_repo_path(f.path);
      if (shown.find_first_of("\r\n\x1b") != std::string::npos) std::abort();
    }
    std::sort(files.begin(), files.end(), [](const k3::HubFile& a, const k3::HubFile& b) { return a.path < b.path; });
    k3::check_listed_once(files, "o/r");
  });
  k3::fuzz::expect_clean([&] { (void)k3::parse_link_next(parts[1]); });
  // Whatever a hub answers as a commit: printable in a message, and a commit id only when 40 hex digits.
  const std::string shown = k3::printable_repo_path(parts[1]);
  if (shown.find_first_of("\r\n\x1b") != std::string::npos) std::abort();
  if (k3::is_commit_id(parts[1]) && parts[1].size() != 40) std::abort();
  return 0;
}
