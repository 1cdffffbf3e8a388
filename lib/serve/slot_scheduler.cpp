#include "serve/slot_scheduler.h"

#include <algorithm>
#include <span>

#include "common/error.h"

#include "generate/batch_generation.h"

namespace k3::serve {

namespace {

using Clock = std::chrono::steady_clock;
uint64_t nanoseconds_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

struct Abandoned {};  // thrown from the prefill progress callback

}  // namespace

bool Job::wait(std::vector<int32_t>& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !ids_.empty(); });
  out.insert(out.end(), ids_.begin(), ids_.end());
  ids_.clear();
  return done_;
}

EndReason Job::end_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reason_;
}
std::string Job::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}
int64_t Job::cached_tokens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}
void Job::prefill_progress(int64_t done, int64_t total) {
  prefill_total_ = total;
  prefill_done_ = done;
}
void Job::started(int64_t cached) {
  prefill_progress(static_cast<int64_t>(spec_.prompt.size()), static_cast<int64_t>(spec_.prompt.size()));
  std::lock_guard<std::mutex> lock(mutex_);
  cached_ = cached;
}
void Job::push(int32_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ids_.push_back(id);
  }
  cv_.notify_all();
}
void Job::finish(EndReason reason, std::string error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    reason_ = reason;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

SlotScheduler::SlotScheduler(Model& model, ConversationCache& cache, ServeMetrics& metrics, SchedulerOptions options)
    : model_(model), cache_(cache), metrics_(metrics), options_(options) {
  if (options_.slots == 0) options_.slots = 1;
  if (StreamingWeights* s = model_.streaming()) baseline_ = s->stats();
}

std::shared_ptr<Job> SlotScheduler::submit(JobSpec spec) {
  auto job = std::make_shared<Job>(std::move(spec));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The queue holds queue_limit jobs beyond those that free slots take at the next pass.
    if (stopping_ || queue_.size() >= options_.queue_limit + (options_.slots - std::min(busy_, options_.slots)))
      return nullptr;
    queue_.push_back(job);
    metrics_.queue_length = queue_.size();
  }
  cv_.notify_all();
  return job;
}

void SlotScheduler::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
}

bool SlotScheduler::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

void SlotScheduler::publish_stream_stats() {
  StreamingWeights* streaming = model_.streaming();
  if (!streaming) return;
  const StreamStats s = streaming->stats();
  metrics_.bytes_read = (s.trunk_bytes - baseline_.trunk_bytes) + (s.expert_bytes - baseline_.expert_bytes);
  metrics_.experts_requested = s.experts_requested - baseline_.experts_requested;
  metrics_.experts_resident = s.experts_resident - baseline_.experts_resident;
}

void SlotScheduler::admit(const std::shared_ptr<Job>& job) {
  const JobSpec& spec = job->spec();
  if (job->cancelled()) {
    job->finish(EndReason::kCancelled);
    return;
  }
  Slot slot{job, model_.generation_session(GenerationOptions{spec.sampling, spec.stop}), 0};
  GenerationSession& s = *slot.session;
  const auto t0 = Clock::now();
  const std::span<const int32_t> prompt(spec.prompt);
  // A client gone or a shutdown abandons a long prefill between layer steps;
  // the layer steps done tell the stream how far the prompt is (in ids, as
  // the share of the ids fed from `from` on).
  const int64_t total = static_cast<int64_t>(prompt.size());
  const auto progress_from = [&](size_t from, size_t count) -> Engine::Progress {
    return [&job, this, from, count, total](int64_t done, int64_t steps) {
      if (job->cancelled() || stopping()) throw Abandoned{};
      if (steps > 0)
        job->prefill_progress(static_cast<int64_t>(from) + static_cast<int64_t>(count) * done / steps, total);
    };
  };
  try {
    const size_t reused = cache_.restore_longest(spec.prompt, s);
    size_t at = reused;
    job->prefill_progress(static_cast<int64_t>(at), total);
    if (spec.keep_prefix > at && spec.keep_prefix <= prompt.size()) {
      s.feed(prompt.subspan(at, spec.keep_prefix - at), nullptr, progress_from(at, spec.keep_prefix - at));
      cache_.keep(s.mark());
      at = spec.keep_prefix;
    }
    s.feed(prompt.subspan(at), nullptr, progress_from(at, prompt.size() - at));
    if (!s.can_generate()) throw Error(ExitCode::kBadInput, "the prompt is empty");
    model_.prefill_done();  // the bytes read so far were the prefill's, not a decode pass's
    job->started(static_cast<int64_t>(reused));
    metrics_.prompt_tokens += prompt.size();
    metrics_.cached_tokens += reused;
  } catch (const Abandoned&) {
    job->finish(stopping() ? EndReason::kLength : EndReason::kCancelled);
    return;
  } catch (const std::exception& e) {
    job->finish(EndReason::kCancelled, e.what());
    return;
  }
  metrics_.prefill_nanoseconds += nanoseconds_since(t0);
  slots_.push_back(std::move(slot));
}

void SlotScheduler::leave(Slot& slot, EndReason reason) {
  // The state (the last id pending, as a continuation wants it) is kept for
  // the conversation's next request.
  if (slot.session->position() > 0) cache_.keep(slot.session->release());
  slot.job->finish(reason);
  slot.job.reset();
}

void SlotScheduler::run() {
  for (;;) {
    std::vector<std::shared_ptr<Job>> joining;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !slots_.empty(); });
      stopping = stopping_;
      if (stopping) {
        for (auto& job : queue_) job->finish(EndReason::kCancelled, "the server is shutting down");
        queue_.clear();
      }
      while (!queue_.empty() && slots_.size() + joining.size() < options_.slots) {
        joining.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      metrics_.queue_length = queue_.size();
      busy_ = slots_.size() + joining.size();
      if (stopping && slots_.empty()) break;
    }
    for (const auto& job : joining) admit(job);
    // Sample one id per busy slot; the ones that end leave before the pass.
    std::vector<GenerationSession*> stepping;
    for (Slot& slot : slots_) {
      Job& job = *slot.job;
      if (stopping || job.cancelled()) {
        leave(slot, stopping ? EndReason::kLength : EndReason::kCancelled);
        continue;
      }
      const int32_t id = slot.session->sample();
      ++slot.made;
      ++metrics_.generated_tokens;
      job.push(id);
      if (job.spec().stop.stops(id))
        leave(slot, EndReason::kStop);
      else if (slot.made >= job.spec().max_new)
        leave(slot, EndReason::kLength);
      else
        stepping.push_back(slot.session.get());
    }
    std::erase_if(slots_, [](const Slot& s) { return !s.job; });
    metrics_.slots_busy = slots_.size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = slots_.size();
    }
    if (!stepping.empty()) {
      const auto t0 = Clock::now();
      try {
        BatchGeneration::step(model_.engine(), stepping);
        model_.pass_done(stepping.size());
      } catch (const std::exception& e) {  // an I/O error ends the requests of this pass, not the server
        for (Slot& slot : slots_) slot.job->finish(EndReason::kCancelled, e.what());
        slots_.clear();
      }
      ++metrics_.weight_passes;
      metrics_.decode_nanoseconds += nanoseconds_since(t0);
    }
    publish_stream_stats();
    metrics_.kept_states_ram = cache_.states_in_ram();
    metrics_.kept_states_disk = cache_.states_on_disk();
    metrics_.kept_bytes_ram = cache_.ram_bytes();
  }
  metrics_.slots_busy = 0;
}

}  // namespace k3::serve
