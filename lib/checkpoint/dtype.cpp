#include "checkpoint/dtype.h"

namespace k3 {

namespace {
struct Entry {
  const char* name;
  DType type;
  uint64_t size;
};
constexpr Entry kTable[] = {
    {"BF16", DType::kBF16, 2}, {"F16", DType::kF16, 2},        {"F32", DType::kF32, 4},
    {"F64", DType::kF64, 8},   {"U8", DType::kU8, 1},          {"I8", DType::kI8, 1},
    {"I16", DType::kI16, 2},   {"I32", DType::kI32, 4},        {"I64", DType::kI64, 8},
    {"BOOL", DType::kBool, 1}, {"F8_E4M3", DType::kF8E4M3, 1}, {"F8_E5M2", DType::kF8E5M2, 1},
    {"U16", DType::kU16, 2},   {"U32", DType::kU32, 4},        {"U64", DType::kU64, 8},
};
}  // namespace

bool parse_dtype(const std::string& name, DType* out) {
  for (const Entry& e : kTable) {
    if (name == e.name) {
      *out = e.type;
      return true;
    }
  }
  return false;
}

const char* dtype_name(DType t) {
  for (const Entry& e : kTable)
    if (e.type == t) return e.name;
  return "?";
}

uint64_t dtype_size(DType t) {
  for (const Entry& e : kTable)
    if (e.type == t) return e.size;
  return 0;
}

}  // namespace k3
