#include "serve/request_log.h"

#include <chrono>
#include <optional>
#include <vector>

#include "serve/slot_scheduler.h"

namespace k3::serve::request_log {

namespace {

using Clock = std::chrono::steady_clock;

struct Record {
  bool open = false;
  Clock::time_point arrived{};
  std::vector<std::shared_ptr<const Job>> jobs;
};
thread_local Record current;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The open record's figures, its jobs added up.
struct Figures {
  int64_t prompt = 0, cached = 0, generated = 0;
  std::optional<double> first_token;  // none when no id came (refused, cancelled, failed)
  double total = 0;
};

Figures figures() {
  Figures f;
  std::optional<Clock::time_point> first;
  for (const auto& job : current.jobs) {
    f.prompt += static_cast<int64_t>(job->spec().prompt.size());
    f.cached += job->cached_tokens();
    f.generated += job->ids_made();
    if (job->ids_made() > 0 && (!first || job->first_id_at() < *first)) first = job->first_id_at();
  }
  if (first) f.first_token = seconds(*first - current.arrived);
  f.total = seconds(Clock::now() - current.arrived);
  return f;
}

// What the client sent, as one line of the log: control bytes shown as '?', at most 200 bytes.
std::string printable(const std::string& text) {
  std::string out = text.substr(0, 200);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

std::string line(const std::string& method, const std::string& path, int status, const Figures* f) {
  std::string out = "k3-serve: " + printable(method) + " " + printable(path) + " " + std::to_string(status);
  if (!f) return out;
  char text[96];
  if (!current.jobs.empty()) {
    out += " prompt=" + std::to_string(f->prompt) + " cached=" + std::to_string(f->cached) +
           " generated=" + std::to_string(f->generated) + " first_token=";
    if (f->first_token) std::snprintf(text, sizeof text, "%.3fs", *f->first_token);
    out += f->first_token ? text : "-";
  }
  std::snprintf(text, sizeof text, " total=%.3fs", f->total);
  return out + text;
}

// A monitor's poll: a successful GET of /health or /metrics. A monitor polls
// every few seconds, so a line for each would bury the requests in the log;
// a failed poll (a 503 while loading, a 401) is still written.
bool is_successful_poll(const std::string& method, const std::string& path, int status) {
  return method == "GET" && status == 200 && (path == "/health" || path == "/metrics");
}

}  // namespace

void begin() {
  current.open = true;
  current.arrived = Clock::now();
  current.jobs.clear();
}

void attach(std::shared_ptr<const Job> job) {
  if (current.open) current.jobs.push_back(std::move(job));
}

void end(const std::string& method, const std::string& path, int status, ServeMetrics& metrics, std::FILE* out) {
  // A request httplib answered before routing it (a malformed request line) has no record: no times.
  std::optional<Figures> f;
  if (current.open) f = figures();
  if (!is_successful_poll(method, path, status))
    std::fputs((line(method, path, status, f ? &*f : nullptr) + "\n").c_str(), out);
  if (f && !current.jobs.empty()) metrics.request_timed(f->first_token, f->total);
  current = Record{};
}

}  // namespace k3::serve::request_log
