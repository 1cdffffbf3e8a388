// k3-doctor's memory ladder chart: bars proportional to each preset's
// forecast memory and seconds per token (the largest fills the width), the
// budget marked with '|' where it falls on the memory scale, and the
// figures printed beside the bars.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/byte_format.h"
#include "doctor/ladder_chart.h"

using namespace k3::doctor;

namespace {
int count(const std::string& s, char c) { return static_cast<int>(std::count(s.begin(), s.end(), c)); }
}  // namespace

TEST(LadderChart, BarsAreProportionalAndTheBudgetIsMarked) {
  const std::vector<LadderRow> rows = {
      {"small", 1'000'000'000, 60.0}, {"middle", 5'000'000'000, 30.0}, {"large", 20'000'000'000, 15.0}};
  const int width = 40;
  const std::vector<std::string> chart = ladder_chart(rows, 10'000'000'000, width);
  ASSERT_EQ(chart.size(), rows.size() + 1);  // a header, then one row per preset
  // Memory: 1, 5, 20 of 20 GB -> 2, 10, 40 characters ('#', with the budget
  // marker at 10 GB = 20 characters replacing one inside the large bar).
  EXPECT_EQ(count(chart[1], '#'), 2);
  EXPECT_EQ(count(chart[2], '#'), 10);
  EXPECT_EQ(count(chart[3], '#'), 39);
  for (size_t i = 1; i < chart.size(); ++i) {
    const size_t name_end = chart[i].find(rows[i - 1].name) + 12;
    EXPECT_EQ(chart[i].find('|'), name_end + 1 + 20) << chart[i];  // same column in every row
    EXPECT_NE(chart[i].find(k3::format_bytes(rows[i - 1].memory_bytes)), std::string::npos) << chart[i];
  }
  // Seconds per token: 60, 30, 15 of 60 -> 40, 20, 10 characters.
  EXPECT_EQ(count(chart[1], '='), 40);
  EXPECT_EQ(count(chart[2], '='), 20);
  EXPECT_EQ(count(chart[3], '='), 10);
  EXPECT_NE(chart[1].find("60.0"), std::string::npos);
}

TEST(LadderChart, SmallValuesStillShowAndZeroShowsNothing) {
  EXPECT_EQ(bar_length(1, 1000, 30), 1);
  EXPECT_EQ(bar_length(0, 1000, 30), 0);
  EXPECT_EQ(bar_length(1000, 1000, 30), 30);
  EXPECT_EQ(bar_length(500, 1000, 30), 15);
  // No budget: no marker.
  const std::vector<std::string> chart = ladder_chart({{"a", 100, 1.0}}, 0, 10);
  EXPECT_EQ(chart[1].find('|'), std::string::npos);
}
