#include "cli/load_progress.h"

#include "common/clock.h"

namespace k3 {

void LoadProgress::operator()(const char* what, uint64_t done, uint64_t total) {
  if (!meter_ || what_ != what) {
    what_ = what;
    meter_.emplace(tool_ + ": " + what_, total);
    start_ = std::chrono::steady_clock::now();
  }
  if (done < total) {
    meter_->update(done);
    return;
  }
  const double seconds = seconds_since(start_);
  if (meter_->on_terminal() || meter_->printed() || seconds >= kQuietSeconds) meter_->finish(done);
  meter_.reset();
}

}  // namespace k3
