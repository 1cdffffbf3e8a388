// The model's one driver (engine/model.h: a Model and its sessions are used
// from one thread): the thread that runs every weight pass for up to `slots`
// sequences at once (continuous batching over the engine's several-sequences
// pass, Model::step_rows), with the model's per-pass accounting.
//
// A request becomes a Job. It waits in a bounded queue (full: submit()
// returns nullptr and the server answers 429) and joins at the next pass
// when a slot is free, from the longest kept conversation state its prompt
// extends (ConversationCache). Each pass then evaluates, in one weight pass,
// the last sampled id of every decoding slot and a chunk of the prompt of
// every slot still prefilling (Model::step_rows): requests that
// arrive together share their prefill passes, and a new arrival's prefill
// shares passes with the running decodes. The rows of a pass are bounded by
// the prompt tokens one read of the weights covers (Model::tokens_per_read:
// more than the max batch runs layer-major, each layer's weights read once
// for a long prompt's chunk and the decode rows riding with it, so the other
// conversations still get an id per pass); decode rows come first, prompt
// chunks fill the rest in order of arrival. A pass carrying prompt ids stops
// within about a layer when one of their clients goes away (or the server
// stops): every sequence in it is put back as before the pass, the client's
// job leaves, the others run the pass again. Each sequence has
// its own sampler keyed to positions, and the engine computes a row the same
// in any pass, so a sequence's ids are bit-identical to generating it alone.
// A cancelled job (client gone, stop string read) leaves at the next pass.
// On shutdown() queued jobs end at once and running ones at the next pass,
// cut as by max_tokens.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "draft/dspark_drafts.h"
#include "engine/model.h"
#include "engine/session.h"
#include "sampling/logprobs.h"
#include "sampling/stop_conditions.h"
#include "serve/conversation_cache.h"
#include "serve/openai_response.h"
#include "serve/serve_metrics.h"

namespace k3::serve {

struct JobSpec {
  std::vector<int32_t> prompt;
  // Ids of the prompt to keep as a conversation state of their own (a chat
  // prompt's unchanged prefix, SPEC section 5); 0: none.
  size_t keep_prefix = 0;
  // Ids of the prompt up to the end of its system prompt and tool list, kept
  // as a state of their own too, so a new conversation that shares only
  // them continues from it (chat/xtml_renderer.h's system_ids, when at least
  // the server's minimum); 0: none.
  size_t system_prefix = 0;
  SamplingParams sampling;
  StopConditions stop;
  int64_t max_new = 1;
  // Structured output (serve/structured_output.h): the ids the reply may hold; nullptr: any.
  std::shared_ptr<OutputConstraint> constraint;
  // The API's logprobs: each generated id's log-probability and the
  // `logprobs` most likely ids' (sampling/logprobs.h), as k3-forward
  // --logprobs N computes them; -1: none.
  int logprobs = -1;
};

// One request's generation, shared by the HTTP thread that reads it and the
// engine thread that writes it.
class Job {
 public:
  explicit Job(JobSpec spec) : spec_(std::move(spec)) {}
  const JobSpec& spec() const { return spec_; }

  // HTTP side. Waits up to `timeout` for new ids or the end, appends the new
  // ids to `out`; true once the job has ended and every id was taken.
  bool wait(std::vector<int32_t>& out, std::chrono::milliseconds timeout);
  // The log-probabilities of the ids taken so far, in order (spec().logprobs >= 0).
  std::vector<PositionLogprobs> take_logprobs();
  void cancel() { cancelled_ = true; }
  EndReason end_reason() const;
  std::string error() const;  // why the prompt could not be evaluated ("" when it was)
  // Still queued when the server began to stop: never started (503, not an engine error).
  bool shut_out() const { return shut_out_; }
  int64_t cached_tokens() const;  // prompt ids taken from a kept state
  // How far the prompt's evaluation is: {ids done (those continued from a
  // kept state included), the prompt's ids}; {0, 0} until it starts, the
  // total twice once it is done.
  std::pair<int64_t, int64_t> prefill() const { return {prefill_done_.load(), prefill_total_.load()}; }
  // Where the pass now evaluating `ids` of the prompt is: `done` of its
  // `total` layer steps over `layers` layers (a step is a layer, or a
  // sub-batch of one in a layer-major pass); ids 0 between passes.
  struct PassProgress {
    int64_t ids = 0, done = 0, total = 0;
    int layers = 0;
  };
  PassProgress prefill_pass() const;
  // Changes whenever prefill() or prefill_pass() does (a stream says the
  // progress again when it changed).
  int64_t progress_version() const { return progress_version_.load(); }
  // For the request's log line, /metrics and the prompt's time left: when
  // it took a slot and when its first id came (the clock's epoch until
  // then), and the ids made so far.
  using Clock = std::chrono::steady_clock;
  Clock::time_point admitted_at() const;
  Clock::time_point first_id_at() const;
  int64_t ids_made() const;
  // Engine thread: the prompt progress lines written to the log (serve/prompt_progress.h).
  int progress_lines() const { return progress_lines_; }
  void count_progress_line() { ++progress_lines_; }

  // Engine thread side.
  bool cancelled() const { return cancelled_; }
  void prefill_progress(int64_t done, int64_t total);
  void prefill_pass(PassProgress p);
  void started(int64_t cached);  // admitted to a slot (`cached` of the prompt's ids continue from a kept state)
  void push(int32_t id);
  void push_logprobs(PositionLogprobs p);  // before push() of its id
  void finish(EndReason reason, std::string error = "");
  void shut_out_at_stop();  // finish() for a job still queued at shutdown()

 private:
  JobSpec spec_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<int32_t> ids_;
  std::vector<PositionLogprobs> logprobs_;  // of ids pushed, taken or not
  size_t logprobs_taken_ = 0;               // ...given out by take_logprobs()
  size_t ids_given_ = 0;                    // ids given out by wait()
  bool done_ = false;
  EndReason reason_ = EndReason::kStop;
  std::string error_;
  int64_t cached_ = 0;
  int64_t made_ = 0;
  int progress_lines_ = 0;
  Clock::time_point admitted_at_{}, first_id_at_{};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> shut_out_{false};
  std::atomic<int64_t> prefill_done_{0}, prefill_total_{0}, progress_version_{0};
  PassProgress pass_;  // under mutex_
};

struct SchedulerOptions {
  size_t slots = 4;
  size_t queue_limit = 64;
  // k3-serve --draft: K3's draft model, its layer tap set on the model's
  // engine (DSparkDrafts follows one sequence). It follows the request
  // admitted while it follows none, from its first id (a request continued
  // from a kept state has no taps for the kept part and is not drafted);
  // while that request is the only one in a slot and none waits, it is
  // generated speculatively, up to max_drafts per pass (the rollback copies
  // the plan holds). With other requests running it shares their passes
  // like any request, one id per pass: a batched pass verifies no drafts.
  DSparkDrafts* draft = nullptr;
  size_t max_drafts = 0;
};

class SlotScheduler {
 public:
  // The streaming counters are read on the engine thread after each pass
  // for /metrics (bytes read since serving started, expert hits).
  SlotScheduler(Model& model, ConversationCache& cache, ServeMetrics& metrics, SchedulerOptions options);

  // Thread-safe. nullptr when the queue is full or the server is stopping.
  std::shared_ptr<Job> submit(JobSpec spec);
  // The engine thread's loop; returns after shutdown() once every job ended.
  void run();
  // Thread-safe: stop taking work, end queued jobs, end running ones at the next pass.
  void shutdown();
  bool stopping() const;

 private:
  struct Slot {
    std::shared_ptr<Job> job;
    std::unique_ptr<Session> session;
    int64_t made = 0;
    size_t at = 0;  // prompt ids in the state (restored or evaluated)
    // Where states are kept, ascending, each past `at`: the end of the system
    // prompt and tool list, then the conversation's unchanged prefix. The
    // pass whose prompt chunk reaches one keeps the state there within it
    // (Model::step_rows' keeps): the chunk does not end there.
    std::vector<size_t> keep_at = {};
    bool decoding = false;  // the prompt is evaluated: each pass samples an id
    size_t chunk = 0;       // prompt ids in the pass being run
    bool drafted = false;   // the draft model follows this sequence
  };
  void admit(const std::shared_ptr<Job>& job);
  // spec.logprobs >= 0: the session reports each generated id's logprobs to the job.
  void observe_logprobs(Slot& slot);
  void sample_decoding(bool stopping);
  size_t run_pass();  // the ids a pass of decode rows only will give (0 when it evaluated prompt ids)
  // What a pass carrying prompt chunks is told: stop when one of their
  // clients went away or the server stops; each prompt's layer progress.
  Model::PassControl pass_control(const std::vector<Slot*>& in_pass);
  void prompt_chunk_done(Slot& slot);  // after a pass that evaluated slot.chunk of its prompt
  // The states a pass keeps within it, and the RAM they take once kept.
  struct Keeps {
    std::vector<SavePointWithin> points;
    uint64_t bytes = 0;
  };
  // The slot's kept points its chunk reaches (the slot is the pass's
  // sequence `sequence`).
  void keeps_within(const Slot& slot, size_t sequence, Keeps& keeps) const;
  void leave(Slot& slot, EndReason reason);
  // The one busy slot, drafted, decoding and nobody waiting: generates it
  // speculatively until it ends or another request arrives.
  bool can_speculate() const;
  size_t speculate(Slot& slot);  // the ids it made
  bool others_waiting() const;
  void publish_draft_stats();
  void publish_stream_stats(size_t decode_ids);  // the ids the passes since the last call gave, if decode only

  Model& model_;
  ConversationCache& cache_;
  ServeMetrics& metrics_;
  SchedulerOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  size_t busy_ = 0;  // slots taken (or being filled), as of the engine's last look
  bool stopping_ = false;
  std::vector<Slot> slots_;  // engine thread only
  StreamStats baseline_;     // counters when serving started (the load is not serving)
};

}  // namespace k3::serve
