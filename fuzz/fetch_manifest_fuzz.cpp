// The download manifest k3-fetch-verify keeps beside a checkpoint.
#include "fetch/fetch_manifest.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static k3::fuzz::MemoryFile file;
  const std::string& path = file.write(data, size);
  k3::fuzz::expect_clean([&] {
    k3::FetchManifest m = k3::read_fetch_manifest(path);
    for (const k3::ManifestFile& f : m.files) (void)m.find(f.path);
  });
  return 0;
}
