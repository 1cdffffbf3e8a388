#include "serve/slot_scheduler.h"

#include <algorithm>
#include <span>

#include "common/error.h"
#include "constrain/output_constraint.h"
#include "model/token_ids.h"

#include "serve/prompt_progress.h"

namespace k3::serve {

namespace {

using Clock = std::chrono::steady_clock;
uint64_t nanoseconds_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

}  // namespace

bool Job::wait(std::vector<int32_t>& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !ids_.empty(); });
  out.insert(out.end(), ids_.begin(), ids_.end());
  ids_given_ += ids_.size();
  ids_.clear();
  return done_;
}

std::vector<PositionLogprobs> Job::take_logprobs() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Only those of ids given out: the next id's may be in, its id not yet.
  const size_t end = std::min(ids_given_, logprobs_.size());
  std::vector<PositionLogprobs> out(logprobs_.begin() + static_cast<std::ptrdiff_t>(logprobs_taken_),
                                    logprobs_.begin() + static_cast<std::ptrdiff_t>(std::max(end, logprobs_taken_)));
  logprobs_taken_ = std::max(end, logprobs_taken_);
  return out;
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
  ++progress_version_;
}
void Job::prefill_pass(PassProgress p) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pass_ = p;
  }
  ++progress_version_;
}
Job::PassProgress Job::prefill_pass() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pass_;
}
void Job::started(int64_t cached) {
  std::lock_guard<std::mutex> lock(mutex_);
  cached_ = cached;
  admitted_at_ = Clock::now();
}
Job::Clock::time_point Job::admitted_at() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return admitted_at_;
}
Job::Clock::time_point Job::first_id_at() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_id_at_;
}
int64_t Job::ids_made() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return made_;
}
void Job::push(int32_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (made_++ == 0) first_id_at_ = Clock::now();
    ids_.push_back(id);
  }
  cv_.notify_all();
}
void Job::push_logprobs(PositionLogprobs p) {
  std::lock_guard<std::mutex> lock(mutex_);
  logprobs_.push_back(std::move(p));
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

void Job::shut_out_at_stop() {
  shut_out_ = true;
  finish(EndReason::kCancelled, "the server is shutting down");
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

void SlotScheduler::publish_stream_stats(size_t decode_ids) {
  StreamingWeights* streaming = model_.streaming();
  if (!streaming) return metrics_.weights_read(0, decode_ids);  // resident weights: no bytes, the ids still count
  const StreamStats s = streaming->stats();
  metrics_.weights_read((s.trunk_bytes - baseline_.trunk_bytes) + (s.expert_bytes - baseline_.expert_bytes),
                        decode_ids);
  metrics_.experts_requested = s.experts_requested - baseline_.experts_requested;
  metrics_.experts_resident = s.experts_resident - baseline_.experts_resident;
  metrics_.cache_lends = s.cache_lends - baseline_.cache_lends;
  metrics_.cache_reclaims = s.cache_reclaims - baseline_.cache_reclaims;
  metrics_.cache_lent_slots = s.cache_lent_slots;
}

void SlotScheduler::admit(const std::shared_ptr<Job>& job) {
  const JobSpec& spec = job->spec();
  if (job->cancelled()) {
    job->finish(EndReason::kCancelled);
    return;
  }
  const bool draft = options_.draft && options_.max_drafts > 0 &&
                     std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.drafted; });
  GenerationOptions go{spec.sampling, spec.stop};
  if (draft) go.max_drafts = options_.max_drafts;
  Slot slot{job, std::make_unique<Session>(model_.session(go))};
  slot.session->set_constraint(spec.constraint.get());
  observe_logprobs(slot);
  try {
    // Checked here, as one request's fault: a bad id in a shared pass would end every request in it.
    if (spec.prompt.empty()) throw Error(ExitCode::kBadInput, "the prompt is empty");
    check_token_ids(model_.config(), spec.prompt);
    slot.at = cache_.restore_longest(spec.prompt, *slot.session);
  } catch (const std::exception& e) {
    job->finish(EndReason::kCancelled, e.what());
    return;
  }
  if (draft) {
    // From a fresh context: the taps of this sequence's passes from here on.
    options_.draft->reset();
    options_.draft->attach(&slot.session->state());
    slot.session->set_drafts(options_.draft);
    slot.drafted = true;
  }
  for (const size_t point : {spec.system_prefix, spec.keep_prefix})
    if (point > slot.at && point <= spec.prompt.size()) slot.keep_at.push_back(point);
  std::sort(slot.keep_at.begin(), slot.keep_at.end());
  slot.keep_at.erase(std::unique(slot.keep_at.begin(), slot.keep_at.end()), slot.keep_at.end());
  // A prompt that is all in a kept state, nothing pending: it samples at once.
  slot.decoding = slot.at == spec.prompt.size() && slot.session->pending().empty();
  job->prefill_progress(static_cast<int64_t>(slot.at), static_cast<int64_t>(spec.prompt.size()));
  job->started(static_cast<int64_t>(slot.at));
  metrics_.prompt_tokens += spec.prompt.size();
  metrics_.cached_tokens += slot.at;
  slots_.push_back(std::move(slot));
}

void SlotScheduler::observe_logprobs(Slot& slot) {
  const int top = slot.job->spec().logprobs;
  if (top < 0) return;
  const int64_t vocab = model_.config().vocab_size;
  Job* job = slot.job.get();  // the slot's session ends before its job
  slot.session->set_sample_observer([job, top, vocab](int32_t id, const float* row, int64_t position) {
    job->push_logprobs(logprobs_at(row, vocab, id, top, position));
  });
}

void SlotScheduler::leave(Slot& slot, EndReason reason) {
  if (const OutputConstraint* c = slot.job->spec().constraint.get()) {
    metrics_.constraint_masks += static_cast<uint64_t>(c->stats().masks);
    metrics_.constraint_mask_nanoseconds += static_cast<uint64_t>(c->stats().mask_seconds * 1e9);
  }
  // The state (the last id pending, as a continuation wants it) is kept for
  // the conversation's next request.
  if (slot.drafted) options_.draft->detach();
  if (slot.session->position() > 0) cache_.keep(slot.session->release());
  slot.job->finish(reason);
  slot.job.reset();
}

void SlotScheduler::sample_decoding(bool stopping) {
  for (Slot& slot : slots_) {
    Job& job = *slot.job;
    if (stopping || job.cancelled()) {
      leave(slot, stopping ? EndReason::kLength : EndReason::kCancelled);
      continue;
    }
    // A decode row whose pass was stopped (another client went away) still
    // has its id pending: it runs again in the next pass.
    if (!slot.decoding || !slot.session->pending().empty()) continue;
    const int32_t id = slot.session->sample();
    ++slot.made;
    ++metrics_.generated_tokens;
    job.push(id);
    if (job.spec().stop.stops(id)) leave(slot, EndReason::kStop);
    else if (slot.made >= job.spec().max_new) leave(slot, EndReason::kLength);
  }
  std::erase_if(slots_, [](const Slot& s) { return !s.job; });
}

bool SlotScheduler::others_waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_ || !queue_.empty();
}

bool SlotScheduler::can_speculate() const {
  return slots_.size() == 1 && slots_[0].drafted && slots_[0].decoding && !slots_[0].job->cancelled() &&
         !others_waiting();
}

size_t SlotScheduler::speculate(Slot& slot) {
  Job& job = *slot.job;
  const int64_t made0 = slot.made;
  Session& s = *slot.session;  // its passes are accounted by the model (pass_done) as they run
  const int64_t passes0 = s.counters().weight_passes;
  const auto t0 = Clock::now();
  GenerationEnd end = GenerationEnd::kInterrupted;
  try {
    // The session samples, drafts and verifies as k3-forward --draft does;
    // it returns between two ids when a request arrives or this one is cancelled.
    end = s.generate(
        job.spec().max_new - slot.made,
        [&](int32_t id) {
          ++slot.made;
          ++metrics_.generated_tokens;
          job.push(id);
        },
        [&] { return job.cancelled() || others_waiting(); });
  } catch (const std::exception& e) {  // as a failed shared pass: this request ends, not the server
    options_.draft->detach();
    job.finish(EndReason::kCancelled, e.what());
    slots_.clear();
    return 0;  // its bytes are counted with no ids: not as decode
  }
  const auto made = static_cast<size_t>(slot.made - made0);
  metrics_.weight_passes += static_cast<uint64_t>(s.counters().weight_passes - passes0);
  metrics_.decode_nanoseconds += nanoseconds_since(t0);
  publish_draft_stats();
  if (end == GenerationEnd::kStop || end == GenerationEnd::kLength) {
    leave(slot, end == GenerationEnd::kStop ? EndReason::kStop : EndReason::kLength);
    std::erase_if(slots_, [](const Slot& x) { return !x.job; });
  }
  // kInterrupted: the next id is still to be sampled, as after any pass.
  return made;
}

void SlotScheduler::publish_draft_stats() {
  if (!options_.draft) return;
  const DSparkStats& d = options_.draft->stats();
  metrics_.draft_passes = static_cast<uint64_t>(d.passes);
  metrics_.drafts_proposed = static_cast<uint64_t>(d.proposed);
  metrics_.drafts_verified = static_cast<uint64_t>(d.verified);
  metrics_.drafts_accepted = static_cast<uint64_t>(d.accepted);
}

size_t SlotScheduler::run_pass() {
  // Decode rows first (one pending id each), then prompt chunks in order of
  // arrival within the engine's rows per pass (at least one chunk row, so a
  // prefill advances even when the decode rows fill the pass).
  std::vector<Session*> sessions;
  std::vector<std::span<const int32_t>> chunks;
  std::vector<Slot*> in_pass;
  Keeps keeps;
  size_t rows = 0;
  for (Slot& slot : slots_) {
    slot.chunk = 0;
    if (!slot.decoding) continue;
    sessions.push_back(slot.session.get());
    chunks.emplace_back();
    in_pass.push_back(&slot);
    ++rows;
  }
  const size_t max_rows = model_.tokens_per_read();
  size_t budget = max_rows > rows ? max_rows - rows : 1;
  bool prefill = false;
  for (Slot& slot : slots_) {
    if (slot.decoding) continue;
    const std::vector<int32_t>& prompt = slot.job->spec().prompt;
    const size_t pending = slot.session->pending().size();
    if (prefill && budget <= pending) break;
    // A kept point within the chunk is kept within the pass (the chunk runs
    // past it: one read of the weights for a system prompt and what follows).
    slot.chunk = std::min(prompt.size() - slot.at, budget > pending ? budget - pending : size_t{1});
    budget = budget > pending + slot.chunk ? budget - pending - slot.chunk : 0;
    keeps_within(slot, sessions.size(), keeps);
    sessions.push_back(slot.session.get());
    chunks.emplace_back(prompt.data() + slot.at, slot.chunk);
    in_pass.push_back(&slot);
    rows += pending + slot.chunk;
    prefill = true;
  }
  if (sessions.empty()) return 0;
  // The states kept within the pass are held from their layer on: they
  // count among the kept states (--keep-mb) from the start of the pass.
  if (keeps.bytes > 0) cache_.make_room_for(keeps.bytes);
  const auto t0 = Clock::now();
  std::vector<SavePoint> kept;
  try {
    // The model accounts the pass (pass_done).
    kept = model_.step_rows(sessions, chunks, prefill ? pass_control(in_pass) : Model::PassControl{}, keeps.points);
  } catch (const std::exception& e) {
    const auto* error = dynamic_cast<const Error*>(&e);
    if (error && error->code() == ExitCode::kInterrupted) {
      // Stopped within the pass: every sequence is as before it. The job whose
      // client went away leaves at the next sample_decoding; the rest run again.
      ++metrics_.stopped_passes;
      for (Slot* slot : in_pass) slot->job->prefill_pass({});
      return 0;
    }
    for (Slot* slot : in_pass) {  // an I/O error ends the requests of this pass, not the server
      slot->job->finish(EndReason::kCancelled, e.what());
      slot->job.reset();
    }
    std::erase_if(slots_, [](const Slot& s) { return !s.job; });
    return 0;
  }
  ++metrics_.weight_passes;
  if (prefill) ++metrics_.prefill_passes;
  (prefill ? metrics_.prefill_nanoseconds : metrics_.decode_nanoseconds) += nanoseconds_since(t0);
  for (Slot* slot : in_pass)
    if (!slot->decoding) prompt_chunk_done(*slot);
  for (SavePoint& point : kept) cache_.keep(std::move(point));
  return prefill ? 0 : rows;
}

void SlotScheduler::keeps_within(const Slot& slot, size_t sequence, Keeps& keeps) const {
  const size_t rows_before = slot.session->pending().size();
  for (const size_t point : slot.keep_at) {
    if (point > slot.at + slot.chunk) break;
    keeps.points.push_back({sequence, point - slot.at});
    keeps.bytes +=
        ConversationCache::bytes_after(model_.config(), slot.session->state(), rows_before + point - slot.at);
  }
}

void SlotScheduler::prompt_chunk_done(Slot& slot) {
  slot.at += slot.chunk;
  // The stream's ": prefill DONE/TOTAL" comments; TOTAL/TOTAL comes before
  // the first id is sampled (at the next sample_decoding).
  slot.job->prefill_pass({});
  slot.job->prefill_progress(static_cast<int64_t>(slot.at), static_cast<int64_t>(slot.job->spec().prompt.size()));
  log_prompt_progress(*slot.job);  // every 10 s of a long prompt: how far, how long left
  std::erase_if(slot.keep_at, [&](size_t point) { return point <= slot.at; });  // kept within the pass
  slot.decoding = slot.at == slot.job->spec().prompt.size();
}

Model::PassControl SlotScheduler::pass_control(const std::vector<Slot*>& in_pass) {
  std::vector<Slot*> prompts;
  for (Slot* slot : in_pass)
    if (!slot->decoding) prompts.push_back(slot);
  Model::PassControl control;
  control.stop = [this, prompts] {
    return stopping() || std::any_of(prompts.begin(), prompts.end(), [](Slot* s) { return s->job->cancelled(); });
  };
  const int layers = model_.config().num_hidden_layers;
  control.progress = [prompts, layers](int64_t done, int64_t total) {
    for (Slot* slot : prompts) {
      slot->job->prefill_pass({static_cast<int64_t>(slot->chunk), done, total, layers});
      log_prompt_progress(*slot->job);  // a long layer-major pass says where it is too
    }
  };
  return control;
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
        for (auto& job : queue_) job->shut_out_at_stop();
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
    if (!stopping && can_speculate()) {
      metrics_.slots_busy = 1;
      publish_stream_stats(speculate(slots_[0]));
      continue;  // back to the queue: a new arrival joins, the next id is sampled as usual
    }
    sample_decoding(stopping);  // the ones that end leave before the pass
    metrics_.slots_busy = slots_.size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = slots_.size();
    }
    publish_stream_stats(run_pass());
    cache_.publish(metrics_);
  }
  metrics_.slots_busy = 0;
}

}  // namespace k3::serve
