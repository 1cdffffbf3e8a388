// What the user sees while the weights load: each start-up step the library
// reports (common/progress_callback.h: pinning the trunk, the hash pass over
// sections read piecemeal) as a ProgressMeter line on stderr, rewritten in
// place on a terminal, a line every few seconds otherwise. A step that ends
// quickly off a terminal leaves no line, so short runs' stderr stays as it was.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/progress_callback.h"
#include "common/progress_meter.h"

namespace k3 {

class LoadProgress {
 public:
  explicit LoadProgress(std::string tool) : tool_(std::move(tool)) {}
  void operator()(const char* what, uint64_t done, uint64_t total);
  // A callback for the library; this object must outlive its calls.
  ProgressCallback callback() {
    return [this](const char* what, uint64_t done, uint64_t total) { (*this)(what, done, total); };
  }

  // Off a terminal, a step shorter than this prints nothing.
  static constexpr double kQuietSeconds = 2.0;

 private:
  std::string tool_, what_;
  std::optional<ProgressMeter> meter_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace k3
