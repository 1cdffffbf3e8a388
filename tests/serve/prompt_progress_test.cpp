// The prompt progress k3-serve's log writes: "prompt 1,234 / 4,430, 3 min
// left", the time left at the rate of the ids evaluated so far (those
// continued from a kept state took no time).
#include "serve/prompt_progress.h"

#include <gtest/gtest.h>

#include <regex>

#include "serve/slot_scheduler.h"

namespace k3::serve {
namespace {

TEST(PromptProgress, GroupsThousands) {
  EXPECT_EQ(grouped(0), "0");
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(grouped(1234), "1,234");
  EXPECT_EQ(grouped(1234567), "1,234,567");
}

TEST(PromptProgress, TimeLeftToTheNeededPrecision) {
  EXPECT_EQ(time_left_text(0.2), "1 s");
  EXPECT_EQ(time_left_text(59), "59 s");
  EXPECT_EQ(time_left_text(170), "3 min");
  EXPECT_EQ(time_left_text(3599), "1 h 00 min");
  EXPECT_EQ(time_left_text(3 * 3600 + 5 * 60), "3 h 05 min");
}

TEST(PromptProgress, RateOfTheEvaluatedIdsOnly) {
  // 1,000 continued from a kept state, 234 evaluated in 60 s: 3,196 left take 819.5 s.
  const auto left = prompt_seconds_left(1000, 1234, 4430, 60);
  ASSERT_TRUE(left);
  EXPECT_DOUBLE_EQ(*left, 3196.0 * 60 / 234);
  EXPECT_FALSE(prompt_seconds_left(1000, 1000, 4430, 5));  // nothing evaluated yet: unknown
  EXPECT_EQ(prompt_progress_text(1234, 4430, left), "prompt 1,234 / 4,430, 14 min left");
  EXPECT_EQ(prompt_progress_text(1000, 4430, std::nullopt), "prompt 1,000 / 4,430");
}

TEST(PromptProgress, LayerOfALayerMajorPass) {
  // 20 steps a layer (20 sub-batches x 13 layers): step 26 is in layer 2.
  EXPECT_EQ(pass_layer_text(26, 260, 13), "layer 2 of 13");
  EXPECT_EQ(pass_layer_text(20, 260, 13), "layer 1 of 13");
  EXPECT_EQ(pass_layer_text(260, 260, 13), "layer 13 of 13");
  EXPECT_EQ(pass_layer_text(1, 13, 13), "layer 1 of 13");  // a batch: a step per layer
  EXPECT_EQ(pass_layer_text(0, 0, 13), "");                // between passes
  PromptProgress p;
  p.done = 1000;
  p.total = 4430;
  p.layer = "layer 2 of 13";
  p.ids_per_second = 1234.4;
  p.seconds_left = 170;
  EXPECT_EQ(prompt_progress_text(p), "prompt 1,000 / 4,430, layer 2 of 13, 1,234 tokens/s, 3 min left");
  p.layer.clear();
  p.ids_per_second.reset();
  EXPECT_EQ(prompt_progress_text(p), "prompt 1,000 / 4,430, 3 min left");
}

TEST(PromptProgress, StreamNoteSaysTheLayerWhenItChanges) {
  Job job(JobSpec{});
  job.started(0);
  int64_t sent = -1;
  job.prefill_progress(0, 4430);
  EXPECT_EQ(prefill_note(job, sent), ": prefill 0/4430\n\n");
  EXPECT_EQ(prefill_note(job, sent), "");  // nothing changed
  // A pass over 4,430 ids at step 26 of 260: 443 ids' worth done.
  job.prefill_pass({4430, 26, 260, 13});
  const std::string note = prefill_note(job, sent);
  EXPECT_TRUE(std::regex_match(note, std::regex(": prefill 0/4430\n: layer 2 of 13, [0-9,]+ tokens/s, .+ left\n\n")))
      << note;
  EXPECT_EQ(prefill_note(job, sent), "");
  job.prefill_pass({});
  job.prefill_progress(4430, 4430);
  EXPECT_EQ(prefill_note(job, sent), ": prefill 4430/4430\n\n");
}

}  // namespace
}  // namespace k3::serve
