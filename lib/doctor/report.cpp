#include "doctor/report.h"

#include <cstdio>

namespace k3::doctor {

namespace {
// What a status reads as on a check's line, as the overall verdict, and the
// exit code it gives: one row per status.
struct StatusWords {
  const char* name;
  const char* overall;
  int exit_code;
};
StatusWords words(Status s) {
  switch (s) {
    case Status::kOk: return {"OK", "ready", 0};
    case Status::kWarn: return {"WARN", "ready, with warnings", kDoctorWarnings};
    case Status::kFail: return {"FAIL", "cannot run", kDoctorCannotRun};
  }
  return {"?", "?", kDoctorCannotRun};
}
}  // namespace

const char* status_name(Status s) { return words(s).name; }

std::string format_figure(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), printf_format, v);
  return buf;
}

Check& Report::add(const std::string& section, const std::string& name) {
  checks.emplace_back();
  checks.back().section = section;
  checks.back().name = name;
  return checks.back();
}

Status Report::overall() const {
  Status s = Status::kOk;
  for (const Check& c : checks)
    if (static_cast<int>(c.status) > static_cast<int>(s)) s = c.status;
  return s;
}

int Report::exit_code() const { return words(overall()).exit_code; }

const std::vector<std::pair<std::string, std::string>>& report_sections() {
  static const std::vector<std::pair<std::string, std::string>> k = {{"cpu", "CPU"},
                                                                     {"memory", "Memory"},
                                                                     {"storage", "Storage"},
                                                                     {"checkpoint", "Checkpoint"},
                                                                     {"forecast", "Forecast"}};
  return k;
}

std::string format_human(const Report& r) {
  std::string out = "k3-doctor: is this machine ready to run Kimi-K3? (/proc and /sys read from " + r.root + ")\n";
  for (const auto& [key, title] : report_sections()) {
    out += "\n" + title + "\n";
    for (const Check& c : r.checks) {
      if (c.section != key) continue;
      char head[96];
      std::snprintf(head, sizeof(head), "  %-5s %-22s ", status_name(c.status), c.name.c_str());
      out += head + c.summary + "\n";
      if (!c.advice.empty()) out += std::string(35, ' ') + "-> " + c.advice + "\n";
    }
    if (key == "forecast")
      for (const std::string& line : r.arithmetic) out += "        " + line + "\n";
  }
  int warns = 0, fails = 0;
  for (const Check& c : r.checks) {
    warns += c.status == Status::kWarn;
    fails += c.status == Status::kFail;
  }
  out += "\nResult: " + std::string(words(r.overall()).overall) + " (exit " + std::to_string(r.exit_code()) +
         "): " + std::to_string(fails) + " FAIL, " + std::to_string(warns) + " WARN, " +
         std::to_string(r.checks.size() - warns - fails) + " OK\n";
  if (!r.next_steps.empty()) {
    out += "\nNext:\n";
    for (const std::string& step : r.next_steps) out += "  " + step + "\n";
  }
  return out;
}

std::string format_json(const Report& r) {
  JsonValue root = JsonValue::object();
  root.set("tool", "k3-doctor");
  root.set("format_version", 1);
  root.set("root", r.root);
  root.set("status", status_name(r.overall()));
  root.set("exit_code", r.exit_code());
  JsonValue sections = JsonValue::object();
  for (const auto& [key, title] : report_sections()) {
    JsonValue checks = JsonValue::array();
    for (const Check& c : r.checks) {
      if (c.section != key) continue;
      JsonValue o = JsonValue::object();
      o.set("name", c.name);
      o.set("status", status_name(c.status));
      o.set("summary", c.summary);
      o.set("advice", c.advice);
      o.set("details", c.details);
      checks.push(std::move(o));
    }
    sections.set(key, std::move(checks));
  }
  root.set("sections", std::move(sections));
  JsonValue arith = JsonValue::array();
  for (const std::string& line : r.arithmetic) arith.push(line);
  root.set("forecast_arithmetic", std::move(arith));
  JsonValue next = JsonValue::array();
  for (const std::string& step : r.next_steps) next.push(step);
  root.set("next_steps", std::move(next));
  return root.dump(2);
}

}  // namespace k3::doctor
