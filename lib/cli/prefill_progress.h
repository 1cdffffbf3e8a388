// The prompt's progress on stderr while a long prompt runs: one line
// rewritten in place on a terminal (or with K3_PROGRESS=tty), at most every
// 2 s, erased when the prompt is done: `k3-forward: prompt of 8192 tokens:
// layer 37 of 93 (read 1 of 2), 41.3 tokens/s, 312 s left`. Nothing when
// stderr is a file or pipe (logs stay clean; --stats-json has the figures).
// Ctrl-C abandons the prompt (exit 130) either way. Passed to
// Session::prefill(); one object serves every prompt of a chat: the
// clock starts at each prompt's first layer step, not at construction (the
// time a user spends typing is not prompt time).
// K3_PREFILL_STEP_MS=<ms> (test-only, CONTRIBUTING.md): every layer step
// waits that long first, so a small model's prompt runs long enough to
// watch the line at a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace k3 {

// How ForwardPass::forward counts a prompt's layer steps: reads of the weights
// (chunks) of up to `per_read` tokens; a chunk longer than `batch` rows
// takes a step per sub-batch of each layer, a shorter one a step per layer.
struct PromptSteps {
  int64_t tokens = 0, per_read = 0, batch = 0;
  int layers = 0;
  // The read (1-based, of `reads`) and layer (1-based) the `done`th of
  // `total` steps is in; false when `total` is not this prompt's count.
  bool locate(int64_t done, int64_t total, int64_t* read, int64_t* reads, int64_t* layer) const;
};

class PrefillProgress {
 public:
  // `on`: draw the line (a terminal); lines at most every `interval`.
  PrefillProgress(std::string tool, bool on, std::FILE* out = stderr,
                  std::chrono::duration<double> interval = std::chrono::seconds(2));
  // For the tool: on when stderr is a terminal (progress_on_terminal()).
  explicit PrefillProgress(std::string tool);
  // The next prompt's shape (without it the line counts steps).
  void set_steps(const PromptSteps& steps) { steps_ = steps; }
  void operator()(int64_t done, int64_t total);
  // Erases the progress line (done by itself when the last step of a prompt
  // is reported; call it when a prompt is abandoned).
  void finish();
  // The figures after `seconds` for steps 2..done (the first step starts
  // the clock), without the \r.
  static std::string line(const std::string& tool, const PromptSteps& steps, int64_t done, int64_t total,
                          double seconds);

 private:
  std::string tool_;
  bool on_;
  std::FILE* out_;
  std::chrono::duration<double> interval_;
  std::chrono::milliseconds step_delay_{0};  // K3_PREFILL_STEP_MS
  PromptSteps steps_;
  std::chrono::steady_clock::time_point start_, last_;
  int64_t last_done_ = 0;
  bool reported_ = false;
};

}  // namespace k3
