// How far a request's prompt is, as k3-serve's log says it while the prompt
// is evaluated: "prompt 1,234 / 4,430, 3 min left". The time left is at the
// rate of this prompt's evaluation so far (ids continued from a kept state
// took no pass and do not count in the rate). A long prompt from NVMe takes
// minutes; the log says so every 10 s instead of nothing until the reply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace k3::serve {

class Job;

// "1,234": thousands grouped as the log and the chat page show ids.
std::string grouped(int64_t n);
// "45 s", "3 min", "1 h 05 min": a time left, to the precision a reader needs.
std::string time_left_text(double seconds);
// The seconds left for a prompt of `total` ids with `done` evaluated or
// continued, `from` of them continued from a kept state, after `elapsed`
// seconds of evaluation; none before the first evaluated id.
std::optional<double> prompt_seconds_left(int64_t from, int64_t done, int64_t total, double elapsed);
// "prompt 1,234 / 4,430, 3 min left" (without the time when it is not known yet).
std::string prompt_progress_text(int64_t done, int64_t total, std::optional<double> seconds_left);

// Engine thread, after each pass that evaluated some of the job's prompt:
// a line on stderr ("k3-serve: prompt ...") once 10 s of its evaluation
// have passed, and every 10 s after, until the prompt is done
// (K3_SERVE_PROGRESS_MS sets the interval, for tests).
void log_prompt_progress(Job& job);

}  // namespace k3::serve
