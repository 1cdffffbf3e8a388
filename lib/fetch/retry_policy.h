// How often and how patiently transient failures (dropped connections,
// stalls, 429, 5xx) are retried. Attempts count consecutive failures without
// progress, so a multi-day download survives any number of separate hiccups
// but gives up when the server stays unreachable.
#pragma once

#include <atomic>
#include <string>

#include "fetch/http_get.h"

namespace k3 {

struct RetryPolicy {
  int max_attempts = 8;            // consecutive failed attempts before giving up
  double first_wait_s = 2;         // doubles each attempt ...
  double max_wait_s = 60;          // ... up to this
  double max_retry_after_s = 300;  // cap on a server's Retry-After
};

// Sleeps before retry number `attempt` (1-based): the server's Retry-After
// when it sent one (capped), else exponential backoff. Returns false early
// when `stop` becomes true.
bool wait_before_retry(int attempt, const HttpResponse& resp, const RetryPolicy& policy, const std::atomic<bool>* stop);

// Sleeps up to `seconds`, waking early when `stop` becomes true; returns !stop.
bool sleep_unless_stopped(double seconds, const std::atomic<bool>* stop);

}  // namespace k3
