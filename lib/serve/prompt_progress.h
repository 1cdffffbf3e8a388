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
// `done` may be fractional: within a layer-major pass, the pass's ids count
// by the share of its layer steps done.
std::optional<double> prompt_seconds_left(int64_t from, double done, int64_t total, double elapsed);
// "prompt 1,234 / 4,430, 3 min left" (without the time when it is not known yet).
std::string prompt_progress_text(int64_t done, int64_t total, std::optional<double> seconds_left);
// Within a pass: "layer 12 of 93" for step `done` of `total` steps over
// `layers` layers (a step is a layer or a sub-batch of one), "" between passes.
std::string pass_layer_text(int64_t done, int64_t total, int layers);

// What a prompt's progress says at this moment: the prompt's ids done
// (those of the running pass by the share of its steps), the layer the pass
// is at, the rate of evaluated ids per second and the time left.
struct PromptProgress {
  int64_t done = 0, total = 0;
  double done_exact = 0;  // done plus the running pass's share
  std::string layer;      // pass_layer_text
  std::optional<double> ids_per_second, seconds_left;
};
PromptProgress prompt_progress(const Job& job);
// "prompt 1,234 / 4,430, layer 12 of 93, 150 tokens/s, 3 min left" (the
// parts not known yet left out).
std::string prompt_progress_text(const PromptProgress& p);

// Engine thread, after each pass that evaluated some of the job's prompt
// and after each layer step of such a pass: a line on stderr ("k3-serve:
// prompt ...") once 10 s of its evaluation have passed, and every 10 s
// after, until the prompt is done (K3_SERVE_PROGRESS_MS sets the interval,
// for tests).
void log_prompt_progress(Job& job);

// A stream's progress comment while the prompt is evaluated, "" when
// nothing changed since the version `sent` (updated): ": prefill DONE/TOTAL"
// (prompt ids evaluated or continued from a kept state, of the prompt's ids)
// and, within a pass, a second comment line ": layer 12 of 93, 150
// tokens/s, 3 min left". Clients skip comment lines; the chat page shows
// them as progress.
std::string prefill_note(const Job& job, int64_t& sent);

}  // namespace k3::serve
