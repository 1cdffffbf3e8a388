// model.safetensors.index.json through both readers: the verifier's
// read_checkpoint_index and Checkpoint::open, here over a directory holding
// the tiny fixture's shards, so an index that parses goes on to the shard
// headers and the index/header cross-checks.
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_index.h"
#include "fuzz_input.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("k3-fuzz-index-" + std::to_string(::getpid()));
    fs::create_directories(d);
    for (const auto& e : fs::directory_iterator(K3_FUZZ_TINY))
      if (e.path().extension() == ".safetensors" && e.path().filename() != "golden_logits.safetensors")
        fs::copy_file(e.path(), d / e.path().filename(), fs::copy_options::overwrite_existing);
    std::atexit([] { fs::remove_all(fs::temp_directory_path() / ("k3-fuzz-index-" + std::to_string(::getpid()))); });
    return d;
  }();
  const fs::path index = dir / "model.safetensors.index.json";
  {
    std::ofstream f(index, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  k3::fuzz::expect_clean([&] { k3::read_checkpoint_index(index.string()); });
  k3::fuzz::expect_clean([&] { k3::Checkpoint::open(dir.string()); });
  return 0;
}
