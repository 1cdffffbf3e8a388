#include "serve/load_status.h"

#include <cstdlib>
#include <thread>

#include "common/error.h"
#include "common/json_writer.h"

namespace k3::serve {

LoadStatus::LoadStatus() {
  if (const char* v = std::getenv("K3_SERVE_LOAD_DELAY_MS"); v && *v) {
    char* end = nullptr;
    const long ms = std::strtol(v, &end, 10);
    if (*end != '\0' || ms < 0 || ms > 600000)
      throw Error(ExitCode::kUsage, std::string("K3_SERVE_LOAD_DELAY_MS=") + v +
                                        ": not a delay in milliseconds (0 to 600000); unset it outside tests");
    delay_ = std::chrono::milliseconds(ms);
  }
}

void LoadStatus::update(const char* what, uint64_t done, uint64_t total) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = what ? what : "loading";
    done_ = done;
    total_ = total;
  }
  if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
}

std::string LoadStatus::json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  JsonWriter w;
  w.begin_object();
  w.key("status").value("loading");
  w.key("step").value(step_);
  w.key("bytes_done").value(static_cast<unsigned long long>(done_));
  w.key("bytes_total").value(static_cast<unsigned long long>(total_));
  w.key("fraction").fixed(total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 0.0, 4);
  w.key("seconds").fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(), 1);
  w.end_object();
  return w.take();
}

}  // namespace k3::serve
