// The slot scheduler on the tiny checkpoint, against exact identities: each
// sequence's ids, generated while others join and leave the shared weight
// passes, equal its ids generated alone by a GenerationSession; a request
// that extends a kept conversation state continues from it (cached ids
// reported) and still gets the ids of a fresh run; spilled states come back
// from their files; cancelled jobs end at the next pass.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include "../model/model_fixture.h"
#include "engine/model.h"
#include "generate/generation_session.h"
#include "lib/test_util.h"
#include "serve/conversation_cache.h"
#include "serve/slot_scheduler.h"
#include "state/continuation.h"

namespace k3::serve {
namespace {

struct Result {
  std::vector<int32_t> ids;
  EndReason end = EndReason::kStop;
  int64_t cached = 0;
};

Result drain(Job& job) {
  Result r;
  for (int i = 0; i < 6000; ++i)  // bounded: 10 minutes at most
    if (job.wait(r.ids, std::chrono::milliseconds(100))) {
      r.end = job.end_reason();
      r.cached = job.cached_tokens();
      return r;
    }
  ADD_FAILURE() << "job did not end";
  return r;
}

class SchedulerTest : public ::testing::Test {
 protected:
  static Model& model() {
    static std::unique_ptr<Model> m = [] {
      ModelParams params;
      params.threads = 2;
      return Model::open(test::tiny_dir(), params);
    }();
    return *m;
  }
  Model& m = model();
  ForwardPass& engine = m.forward_pass();  // the reference below runs lib/generate directly
  ServeMetrics metrics;
  ModelIdentity identity() { return ModelIdentity::of(m.config(), m.checkpoint()); }

  JobSpec spec(std::vector<int32_t> prompt, int64_t n, double temperature = 0, uint64_t seed = 0) {
    JobSpec s;
    s.prompt = std::move(prompt);
    s.max_new = n;
    s.sampling.temperature = temperature;
    s.sampling.top_p = temperature > 0 ? 0.9 : 1.0;
    s.sampling.seed = seed;
    s.stop = StopConditions(m.config().eos_token_ids, {}, /*ignore_eos=*/true);
    return s;
  }
  // The reference: the same request generated alone.
  std::vector<int32_t> alone(const JobSpec& s) {
    GenerationSession g(engine, GenerationOptions{s.sampling, s.stop});
    g.reset();
    g.feed(s.prompt);
    std::vector<int32_t> ids;
    g.generate(s.max_new, [&](int32_t id) { ids.push_back(id); });
    return ids;
  }
  std::vector<int32_t> prompt(int32_t first, size_t n) {
    std::vector<int32_t> p;
    for (size_t i = 0; i < n; ++i) p.push_back((first + static_cast<int32_t>(i) * 37) % 1000 + 5);
    return p;
  }
};

TEST_F(SchedulerTest, ConcurrentSequencesEqualTheirRunsAlone) {
  ConversationCache cache(identity(), CacheOptions{});
  SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{3, 16});
  std::thread engine_thread([&] { scheduler.run(); });
  // Five requests of different lengths and samplers on three slots: they
  // join and leave the shared passes at different steps.
  std::vector<JobSpec> specs{spec(prompt(1, 5), 9), spec(prompt(2, 11), 4, 0.8, 7), spec(prompt(3, 3), 12),
                             spec(prompt(4, 7), 6, 1.0, 3), spec(prompt(5, 2), 8)};
  std::vector<std::shared_ptr<Job>> jobs;
  for (const JobSpec& s : specs) jobs.push_back(scheduler.submit(s));
  std::vector<Result> got;
  for (auto& j : jobs) got.push_back(drain(*j));
  scheduler.shutdown();
  engine_thread.join();
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(got[i].ids, alone(specs[i])) << "request " << i;
    EXPECT_EQ(got[i].end, EndReason::kLength);
  }
  EXPECT_GT(metrics.weight_passes.load(), 0u);
  EXPECT_LT(metrics.weight_passes.load(), 9u + 4 + 12 + 6 + 8 - 5);  // passes were shared
}

TEST_F(SchedulerTest, ArrivalsTogetherShareOnePrefillPass) {
  ConversationCache cache(identity(), CacheOptions{});
  SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{4, 16});
  // Submitted before the engine thread runs: all four join the first pass,
  // whose rows are the four prompts (per-sequence prefill: four passes).
  std::vector<JobSpec> specs{spec(prompt(11, 6), 5), spec(prompt(12, 9), 3, 0.8, 2), spec(prompt(13, 4), 7),
                             spec(prompt(14, 12), 2, 1.0, 9)};
  std::vector<std::shared_ptr<Job>> jobs;
  for (const JobSpec& s : specs) jobs.push_back(scheduler.submit(s));
  std::thread engine_thread([&] { scheduler.run(); });
  std::vector<Result> got;
  for (auto& j : jobs) got.push_back(drain(*j));
  scheduler.shutdown();
  engine_thread.join();
  for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(got[i].ids, alone(specs[i])) << "request " << i;
  EXPECT_EQ(metrics.prefill_passes.load(), 1u);
  // One prefill pass, then a decode pass per id but the last of the longest request.
  EXPECT_EQ(metrics.weight_passes.load(), 7u);
}

TEST_F(SchedulerTest, StaggeredArrivalsPrefillWithinDecodePasses) {
  ConversationCache cache(identity(), CacheOptions{});
  SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{5, 16});
  std::thread engine_thread([&] { scheduler.run(); });
  // The first request runs until cancelled, so it is in every pass.
  std::vector<JobSpec> specs{spec(prompt(21, 5), 100000), spec(prompt(22, 13), 9, 0.8, 4), spec(prompt(23, 3), 6),
                             spec(prompt(24, 8), 11, 1.0, 8), spec(prompt(25, 17), 5, 0.6, 1)};
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<Result> got(specs.size());
  // Each request arrives after the one before has generated ids: its
  // prefill runs in passes that also carry the others' decode rows.
  for (size_t i = 0; i < specs.size(); ++i) {
    jobs.push_back(scheduler.submit(specs[i]));
    ASSERT_TRUE(jobs.back());
    while (got[i].ids.size() < 2 && !jobs[i]->wait(got[i].ids, std::chrono::milliseconds(100))) {}
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (i == 0) continue;
    Result rest = drain(*jobs[i]);
    got[i].ids.insert(got[i].ids.end(), rest.ids.begin(), rest.ids.end());
  }
  jobs[0]->cancel();
  Result rest = drain(*jobs[0]);
  got[0].ids.insert(got[0].ids.end(), rest.ids.begin(), rest.ids.end());
  specs[0].max_new = static_cast<int64_t>(got[0].ids.size());
  scheduler.shutdown();
  engine_thread.join();
  for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(got[i].ids, alone(specs[i])) << "request " << i;
  // Every later arrival's prefill ran in passes that carried the first
  // request's decode row: the passes are the first request's own (its
  // prefill, then one per id sampled before the cancel was seen).
  EXPECT_EQ(metrics.weight_passes.load(), got[0].ids.size() + 1);
  EXPECT_EQ(metrics.prefill_passes.load(), 5u);
}

TEST_F(SchedulerTest, PromptsLongerThanAPassRunInChunks) {
  // Four rows per pass: prompts run in chunks beside the decode rows, the
  // conversation's state is kept within the pass that reaches it, and ids
  // and the kept state are still those of a run alone.
  const size_t old_batch = engine.max_batch();
  engine.set_max_batch(4);
  ConversationCache cache(identity(), CacheOptions{});
  SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{3, 16});
  std::vector<JobSpec> specs{spec(prompt(31, 11), 6), spec(prompt(32, 9), 5, 0.9, 3), spec(prompt(33, 2), 8)};
  specs[0].keep_prefix = 7;
  std::vector<std::shared_ptr<Job>> jobs;
  for (const JobSpec& s : specs) jobs.push_back(scheduler.submit(s));
  std::thread engine_thread([&] { scheduler.run(); });
  std::vector<Result> got;
  for (auto& j : jobs) got.push_back(drain(*j));
  std::vector<int32_t> p(specs[0].prompt.begin(), specs[0].prompt.begin() + 7);
  for (int32_t id : prompt(60, 3)) p.push_back(id);
  const JobSpec next = spec(p, 4);
  Result r = drain(*scheduler.submit(next));
  scheduler.shutdown();
  engine_thread.join();
  engine.set_max_batch(old_batch);
  for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(got[i].ids, alone(specs[i])) << "request " << i;
  EXPECT_EQ(r.cached, 7);
  EXPECT_EQ(r.ids, alone(next));
  // 22 prompt ids and at most 4 rows a pass: at least 6 passes with prompt ids.
  EXPECT_GE(metrics.prefill_passes.load(), 6u);
}

TEST_F(SchedulerTest, FollowUpContinuesFromKeptStateAndSpillsToFiles) {
  const std::string dir = test::fresh_dir("serve_cache");
  std::vector<int32_t> first_ids, follow_prompt;
  const JobSpec first = spec(prompt(9, 6), 5);
  {
    // No RAM for states: every kept state goes to a file and comes back from it.
    ConversationCache cache(identity(), CacheOptions{0, dir, 8, nullptr});
    SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{2, 4});
    std::thread engine_thread([&] { scheduler.run(); });
    Result a = drain(*scheduler.submit(first));
    EXPECT_EQ(a.cached, 0);
    EXPECT_EQ(a.ids, alone(first));
    follow_prompt = first.prompt;
    follow_prompt.insert(follow_prompt.end(), a.ids.begin(), a.ids.end());
    for (int32_t id : prompt(77, 4)) follow_prompt.push_back(id);
    const JobSpec second = spec(follow_prompt, 6, 0.7, 5);
    Result b = drain(*scheduler.submit(second));
    EXPECT_EQ(b.cached, static_cast<int64_t>(first.prompt.size() + a.ids.size()));
    EXPECT_EQ(b.ids, alone(second));  // bit-identical to a fresh run of the whole prompt
    EXPECT_GT(cache.states_on_disk(), 0u);
    EXPECT_EQ(cache.states_in_ram(), 0u);
    scheduler.shutdown();
    engine_thread.join();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "spilled state files are removed with the cache";
}

TEST_F(SchedulerTest, KeptStatesAreWrittenFromTheStateAndLeaveRamOnceWritten) {
  const std::string dir = test::fresh_dir("serve_spill");
  std::promise<void> gate;
  std::shared_future<void> open_gate = gate.get_future().share();
  std::atomic<int> writes{0};
  auto state_files = [&] {
    int n = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir)) n += f.path().extension() == ".k3state";
    return n;
  };
  {
    Session g = m.session(GenerationOptions{}), g2 = m.session(GenerationOptions{});
    const std::vector<int32_t> p = prompt(41, 6), p2 = prompt(300, 6);
    g.prefill(p);
    g2.prefill(p2);
    const uint64_t one = ConversationCache::bytes_of(g.mark());
    ASSERT_EQ(ConversationCache::bytes_of(g2.mark()), one);
    // RAM for one state: keep() starts its file's write and returns; the write is held at the gate.
    CacheOptions options{one, dir, 8, [&](const std::string&) {
                           ++writes;
                           open_gate.wait();
                         }};
    ConversationCache cache(identity(), options);
    auto kept = std::async(std::launch::async, [&] { cache.keep(g.mark()); });
    if (kept.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      gate.set_value();
      FAIL() << "keep() waited for the state file to be written";
    }
    EXPECT_EQ(cache.states_on_disk(), 1u);
    EXPECT_EQ(cache.states_in_ram(), 1u);
    for (int i = 0; i < 2000 && writes.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(writes.load(), 1);
    EXPECT_EQ(state_files(), 0) << "no state file before its write";
    // A second state pushes the first out of RAM while its write is under
    // way: the writer still holds it, so it counts until written and keep()
    // waits for that write rather than go past the limit.
    auto second = std::async(std::launch::async, [&] { cache.keep(g2.mark()); });
    EXPECT_EQ(second.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
        << "a state left RAM (uncounted) before its file was written";
    gate.set_value();
    ASSERT_EQ(second.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_EQ(cache.states_in_ram(), 1u);
    EXPECT_EQ(cache.ram_bytes(), one);
    // The file written while its state was evicted is whole: the state comes back from it, the same bits.
    Session h = m.session(GenerationOptions{});
    EXPECT_EQ(cache.restore_longest(p, h), p.size());
    EXPECT_TRUE(test::same_bits(h.current_row(), g.current_row()));
    EXPECT_EQ(h.state().tokens, g.state().tokens);
    EXPECT_GE(state_files(), 1);
  }
  EXPECT_EQ(state_files(), 0) << "spilled state files are removed with the cache";
}

TEST_F(SchedulerTest, FilesOfStatesInRamDoNotCountAgainstMaxFiles) {
  // Every state kept with a directory is written there when kept; the file
  // limit is on states out of RAM, so the states in RAM keep their files
  // (and leave RAM later without a write).
  const std::string dir = test::fresh_dir("serve_max_files");
  {
    ConversationCache cache(identity(), CacheOptions{1ull << 40, dir, 1, nullptr});
    for (int first : {21, 500, 900}) {
      Session g = m.session(GenerationOptions{});
      g.prefill(prompt(first, 5));
      cache.keep(g.mark());
    }
    EXPECT_EQ(cache.states_in_ram(), 3u);
    EXPECT_EQ(cache.states_on_disk(), 3u);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "spilled state files are removed with the cache";
}

TEST_F(SchedulerTest, SpilledStateOfAnotherConversationIsNotContinued) {
  const std::string dir = test::fresh_dir("serve_swap");
  std::vector<std::string> files;  // in the order written
  CacheOptions options{0, dir, 8, [&](const std::string& path) { files.push_back(path); }};
  ConversationCache cache(identity(), options);
  Session g = m.session(GenerationOptions{});
  const std::vector<int32_t> a = prompt(11, 8), b = prompt(500, 8);
  g.prefill(a);
  cache.keep(g.mark());
  g.reset();
  g.prefill(b);
  cache.keep(g.mark());
  Session h = m.session(GenerationOptions{});
  std::vector<int32_t> longer = a, b_longer = b;
  longer.push_back(7);
  b_longer.push_back(9);
  ASSERT_EQ(cache.restore_longest(b_longer, h), b.size());  // each waits for its file's write
  ASSERT_EQ(cache.restore_longest(longer, h), a.size());
  ASSERT_EQ(files.size(), 2u);
  // a's file now holds b's state (same model, same length, other ids): it
  // is not a's conversation, so nothing is restored and a is evaluated anew.
  std::filesystem::copy_file(files[1], files[0], std::filesystem::copy_options::overwrite_existing);
  Session k = m.session(GenerationOptions{});
  EXPECT_EQ(cache.restore_longest(longer, k), 0u);
  EXPECT_TRUE(k.state().tokens.empty());
  // b's own state still comes back.
  Session j = m.session(GenerationOptions{});
  EXPECT_EQ(cache.restore_longest(b_longer, j), b.size());
  EXPECT_EQ(j.state().tokens, b);
}

TEST_F(SchedulerTest, KeptPrefixServesADifferentContinuation) {
  ConversationCache cache(identity(), CacheOptions{});
  SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{1, 4});
  std::thread engine_thread([&] { scheduler.run(); });
  JobSpec a = spec(prompt(3, 8), 3);
  a.keep_prefix = 5;  // a chat prompt's unchanged prefix
  drain(*scheduler.submit(a));
  std::vector<int32_t> p(a.prompt.begin(), a.prompt.begin() + 5);
  for (int32_t id : prompt(50, 3)) p.push_back(id);
  const JobSpec b = spec(p, 4);
  Result r = drain(*scheduler.submit(b));
  scheduler.shutdown();
  engine_thread.join();
  EXPECT_EQ(r.cached, 5);
  EXPECT_EQ(r.ids, alone(b));
}

TEST_F(SchedulerTest, SystemPrefixIsKeptBesideTheConversation) {
  ConversationCache cache(identity(), CacheOptions{});
  SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{1, 4});
  std::thread engine_thread([&] { scheduler.run(); });
  JobSpec a = spec(prompt(3, 12), 3);
  a.system_prefix = 6;  // the system prompt and tool list
  a.keep_prefix = 9;    // the conversation's unchanged prefix
  drain(*scheduler.submit(a));
  // Another conversation sharing only the first 6 ids (and the 7th, which is
  // not in a kept state): it continues from the system prompt's state.
  std::vector<int32_t> p(a.prompt.begin(), a.prompt.begin() + 7);
  for (int32_t id : prompt(60, 4)) p.push_back(id);
  const JobSpec b = spec(p, 4);
  Result r = drain(*scheduler.submit(b));
  scheduler.shutdown();
  engine_thread.join();
  EXPECT_EQ(r.cached, 6);
  EXPECT_EQ(r.ids, alone(b));
  // Kept: a's system prompt, a's prefix, a's whole conversation, b's.
  EXPECT_EQ(cache.states_in_ram(), 4u);
  // Both of a's points were kept within the one pass of its prompt.
  EXPECT_EQ(metrics.prefill_passes.load(), 2u) << "a's prompt, then b's past the system prompt";
}

// A pass that keeps states within it holds them from their layer on, so
// room is made for them among the kept states before it runs: bytes_after
// forecasts the kept state's RAM (ConversationCache::bytes_of) from the
// state before the pass, and make_room_for takes states out of RAM until
// that many more bytes fit.
TEST_F(SchedulerTest, RoomIsMadeForStatesKeptWithinAPass) {
  const std::vector<int32_t> first = prompt(3, 5), more = prompt(40, 4);
  Session s = m.session(GenerationOptions{});
  s.prefill(first);
  const uint64_t forecast = ConversationCache::bytes_after(m.config(), s.state(), more.size());
  s.prefill(more);
  const Session::SavePoint kept = s.mark();
  EXPECT_EQ(forecast, ConversationCache::bytes_of(kept));
  CacheOptions options;
  options.ram_bytes = 2 * forecast;
  ConversationCache cache(identity(), options);
  cache.keep(kept);
  Session t = m.session(GenerationOptions{});
  t.prefill(prompt(7, 9));
  cache.keep(t.mark());
  ASSERT_EQ(cache.states_in_ram(), 2u);
  cache.make_room_for(0);
  EXPECT_EQ(cache.states_in_ram(), 2u);
  cache.make_room_for(forecast);
  EXPECT_EQ(cache.states_in_ram(), 1u) << "the least recently used leaves RAM";
  EXPECT_LE(cache.ram_bytes() + forecast, options.ram_bytes);
}

TEST_F(SchedulerTest, CancelledAndQueueFullAndShutdown) {
  ConversationCache cache(identity(), CacheOptions{});
  SlotScheduler scheduler(m, cache, metrics, SchedulerOptions{1, 0});
  // Not running yet: one job for the free slot, no queue beyond it.
  auto queued = scheduler.submit(spec(prompt(1, 3), 100000));
  ASSERT_TRUE(queued);
  EXPECT_FALSE(scheduler.submit(spec(prompt(2, 3), 4)));
  std::thread engine_thread([&] { scheduler.run(); });
  std::vector<int32_t> ids;
  while (ids.size() < 3) queued->wait(ids, std::chrono::milliseconds(100));
  queued->cancel();
  Result r = drain(*queued);
  EXPECT_EQ(r.end, EndReason::kCancelled);
  std::shared_ptr<Job> last;
  for (int i = 0; i < 100 && !last; ++i) {  // the slot frees at the next pass
    last = scheduler.submit(spec(prompt(3, 3), 100000));
    if (!last) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(last);
  ids.clear();
  while (ids.empty()) last->wait(ids, std::chrono::milliseconds(100));
  scheduler.shutdown();
  EXPECT_EQ(drain(*last).end, EndReason::kLength);  // cut cleanly, as by max_tokens
  engine_thread.join();
  EXPECT_FALSE(scheduler.submit(spec(prompt(4, 3), 4)));
}

}  // namespace
}  // namespace k3::serve
