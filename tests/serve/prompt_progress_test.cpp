// The prompt progress k3-serve's log writes: "prompt 1,234 / 4,430, 3 min
// left", the time left at the rate of the ids evaluated so far (those
// continued from a kept state took no time).
#include "serve/prompt_progress.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace k3::serve
