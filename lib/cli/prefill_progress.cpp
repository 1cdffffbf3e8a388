#include "cli/prefill_progress.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "cli/interrupt.h"
#include "common/append_printf.h"
#include "common/error.h"
#include "common/progress_meter.h"

namespace k3 {

bool PromptSteps::locate(int64_t done, int64_t total, int64_t* read, int64_t* reads, int64_t* layer) const {
  if (tokens <= 0 || per_read <= 0 || batch <= 0 || layers <= 0) return false;
  // ForwardPass::forward's count: chunks of per_read tokens, sub-batches of batch rows.
  auto subs = [&](int64_t n) { return n > batch ? (n + batch - 1) / batch : 1; };
  int64_t before = 0, r = 0, found_layer = 0, found_read = 0;
  for (int64_t begin = 0; begin < tokens; begin += per_read, ++r) {
    const int64_t n = std::min(per_read, tokens - begin), steps = subs(n) * layers;
    if (found_read == 0 && done <= before + steps) {
      found_read = r + 1;
      found_layer = (done - before - 1) / subs(n) + 1;
    }
    before += steps;
  }
  if (before != total || found_read == 0) return false;
  *read = found_read;
  *reads = r;
  *layer = found_layer;
  return true;
}

PrefillProgress::PrefillProgress(std::string tool, bool on, std::FILE* out, std::chrono::duration<double> interval)
    : tool_(std::move(tool)), on_(on), out_(out), interval_(interval) {
  start_ = last_ = std::chrono::steady_clock::now();
  if (const char* v = std::getenv("K3_PREFILL_STEP_MS"))
    step_delay_ = std::chrono::milliseconds(std::strtol(v, nullptr, 10));
}

PrefillProgress::PrefillProgress(std::string tool) : PrefillProgress(std::move(tool), progress_on_terminal()) {}

std::string PrefillProgress::line(const std::string& tool, const PromptSteps& steps, int64_t done, int64_t total,
                                  double seconds) {
  std::string o = tool + ": prompt";
  int64_t read = 0, reads = 0, layer = 0;
  if (steps.locate(done, total, &read, &reads, &layer)) {
    append_printf(o, " of %lld tokens: layer %lld of %d", static_cast<long long>(steps.tokens),
                  static_cast<long long>(layer), steps.layers);
    if (reads > 1)
      append_printf(o, " (read %lld of %lld)", static_cast<long long>(read), static_cast<long long>(reads));
  } else {
    append_printf(o, ": step %lld of %lld", static_cast<long long>(done), static_cast<long long>(total));
  }
  if (done < 2 || seconds <= 0) return o;
  // Steps after the first, at the rate so far.
  const double per_step = seconds / static_cast<double>(done - 1);
  if (steps.tokens > 0 && total > 0)
    append_printf(o, ", %.1f tokens/s", static_cast<double>(steps.tokens) / (per_step * static_cast<double>(total)));
  append_printf(o, ", %.0f s left", per_step * static_cast<double>(total - done));
  return o;
}

void PrefillProgress::operator()(int64_t done, int64_t total) {
  if (step_delay_.count() > 0) std::this_thread::sleep_for(step_delay_);
  if (interrupted()) {
    finish();
    throw Error(ExitCode::kInterrupted, "interrupted while running the prompt; nothing was generated");
  }
  const auto now = std::chrono::steady_clock::now();
  if (done <= last_done_ || last_done_ == 0) {
    // A new prompt (steps count from 1 for each): its clock starts now.
    finish();
    start_ = last_ = now;
    last_done_ = done;
    return;
  }
  last_done_ = done;
  if (done >= total) return finish();
  if (!on_ || now - last_ < interval_) return;
  last_ = now;
  reported_ = true;
  const double s = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_, "\r%s\x1b[K", line(tool_, steps_, done, total, s).c_str());
  std::fflush(out_);
}

void PrefillProgress::finish() {
  if (reported_) std::fputs("\r\x1b[K", out_);
  std::fflush(out_);
  reported_ = false;
}

}  // namespace k3
