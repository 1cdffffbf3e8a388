// Tensor element types as safetensors names them.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

enum class DType : uint8_t {
  kBF16,
  kF16,
  kF32,
  kF64,
  kU8,
  kI8,
  kI16,
  kI32,
  kI64,
  kBool,
  kF8E4M3,
  kF8E5M2,
  kU16,
  kU32,
  kU64
};

// "BF16" -> kBF16; returns false for a name safetensors does not define.
bool parse_dtype(const std::string& name, DType* out);
const char* dtype_name(DType t);
uint64_t dtype_size(DType t);

}  // namespace k3
