// Reading the header of one .safetensors file.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON mapping
// tensor name -> {dtype, shape, data_offsets:[begin,end]}, then the data.
// Offsets in the JSON are relative to the end of the header; we store
// absolute file offsets so callers can pread directly. Every offset is
// 64-bit: real K3 shards are ~16 GB.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/dtype.h"

namespace k3 {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kU8;
  std::vector<uint64_t> shape;
  uint64_t offset = 0;  // absolute byte offset of the first element in the file
  uint64_t nbytes = 0;
  uint64_t numel() const;
  std::string shape_str() const;  // "[64, 32]"
};

struct SafetensorsHeader {
  std::string path;
  uint64_t file_size = 0;
  uint64_t data_start = 0;  // 8 + N
  std::map<std::string, TensorInfo> tensors;
};

// Parses and bounds-checks the header of `path`: the JSON is well formed,
// dtypes are known, nbytes == numel * dtype size, and every tensor lies
// inside the file. Throws k3::Error(kBadModel) naming the file and tensor.
SafetensorsHeader read_safetensors_header(const std::string& path);

// The same parse and checks, handing each tensor to `sink` instead of
// building a map: for callers that hold ~500k tensors (Checkpoint). Returns
// the file size and data start.
struct SafetensorsExtent {
  uint64_t file_size = 0;
  uint64_t data_start = 0;
  // What a packed trunk records to notice the shard changing later: an
  // xxh3-64 of the 8 + N header bytes, and the file's identity when it was
  // read (fstat of the same descriptor).
  uint64_t header_xxh3 = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
};
SafetensorsExtent read_safetensors_tensors(const std::string& path, const std::function<void(TensorInfo&&)>& sink);

// Same checks on a header already in memory (for tests and writers).
SafetensorsHeader parse_safetensors_header(const std::string& path, const std::string& json, uint64_t file_size);

// Serialises a header for writers (generators, --logits output). Tensors are
// laid out in the given order; returns the bytes to put before the data
// (8-byte length + JSON padded with spaces to a multiple of 8).
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t nbytes;
};
std::string make_safetensors_header(const std::vector<TensorToWrite>& tensors);

}  // namespace k3
