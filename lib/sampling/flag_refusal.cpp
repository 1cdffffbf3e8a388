#include "sampling/flag_refusal.h"

#include <cstdio>

#include "common/error.h"

namespace k3 {

void refuse_flag_value(const std::string& rule, double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  throw Error(ExitCode::kUsage, rule + ", got " + buf);
}

void refuse_flag_value(const std::string& rule, int64_t value) {
  throw Error(ExitCode::kUsage, rule + ", got " + std::to_string(value));
}

}  // namespace k3
