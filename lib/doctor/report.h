// k3-doctor's findings: one Check per question, each OK / WARN / FAIL with
// one line of advice, grouped in sections, printed for people or as JSON.
#pragma once

#include <string>
#include <vector>

#include "common/byte_format.h"
#include "common/json_value.h"

namespace k3::doctor {

enum class Status { kOk, kWarn, kFail };
const char* status_name(Status s);  // "OK", "WARN", "FAIL"

struct Check {
  std::string section;  // "cpu", "memory", "storage", "checkpoint", "forecast"
  std::string name;     // "simd", "usable", "model.free_space", ...
  Status status = Status::kOk;
  std::string summary;                      // what was found, one line
  std::string advice;                       // what to do about it, one line
  JsonValue details = JsonValue::object();  // the figures, for --json
};

// k3-doctor's own exit codes, apart from the shared ones (common/error.h:
// 1 internal error, 2 usage error, ...), so each code has one meaning.
constexpr int kDoctorWarnings = 10;   // ready, with warnings
constexpr int kDoctorCannotRun = 11;  // a check FAILed: the run cannot proceed

struct Report {
  std::string root;  // where /proc and /sys were read from
  std::vector<Check> checks;
  std::vector<std::string> arithmetic;  // the seconds-per-token derivation, line by line
  std::vector<std::string> next_steps;  // the commands to run next, in order (empty: none fits)

  Check& add(const std::string& section, const std::string& name);
  Status overall() const;
  // 0 ready, kDoctorWarnings, kDoctorCannotRun.
  int exit_code() const;
};

// Section titles in print order.
const std::vector<std::pair<std::string, std::string>>& report_sections();

// `v` through a printf format with one double ("%.2f s", "%.0f%%"): the
// figures of the arithmetic lines.
std::string format_figure(const char* printf_format, double v);

std::string format_human(const Report& r);
std::string format_json(const Report& r);

}  // namespace k3::doctor
