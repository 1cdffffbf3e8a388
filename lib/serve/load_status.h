// What GET /health answers while the model loads (503): the start-up step
// the library reports (common/progress_callback.h, e.g. "pinning trunk"),
// its bytes done and total, that step's fraction, and the seconds since the
// server started listening. Written by the loading thread, read by the HTTP
// threads.
//
// Test only: K3_SERVE_LOAD_DELAY_MS=<ms> makes every progress report wait
// that long, so a test can watch a load in progress on the tiny model.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace k3::serve {

class LoadStatus {
 public:
  LoadStatus();  // reads K3_SERVE_LOAD_DELAY_MS
  void update(const char* what, uint64_t done, uint64_t total);
  // {"status": "loading", "step": ..., "bytes_done": ..., "bytes_total": ...,
  //  "fraction": 0..1, "seconds": ...}; before any report the step is
  //  "loading" and the bytes 0 (a resident load reports no steps).
  std::string json() const;

 private:
  mutable std::mutex mutex_;
  std::string step_ = "loading";
  uint64_t done_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::milliseconds delay_{0};
};

}  // namespace k3::serve
