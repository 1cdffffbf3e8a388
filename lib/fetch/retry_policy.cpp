#include "fetch/retry_policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace k3 {

bool sleep_unless_stopped(double seconds, const std::atomic<bool>* stop) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < until) {
    if (stop && stop->load()) return false;
    Clock::duration left = until - Clock::now();
    std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::milliseconds(50)));
  }
  return !(stop && stop->load());
}

bool wait_before_retry(int attempt, const HttpResponse& resp, const RetryPolicy& policy,
                       const std::atomic<bool>* stop) {
  double wait = policy.first_wait_s * std::pow(2.0, std::max(0, attempt - 1));
  wait = std::min(wait, policy.max_wait_s);
  double server = parse_retry_after(resp.retry_after);
  if (server >= 0) wait = std::min(server, policy.max_retry_after_s);
  return sleep_unless_stopped(wait, stop);
}

}  // namespace k3
