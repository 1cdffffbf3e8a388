// --stats-json's "draft" member: valid JSON whatever the length of the
// per-position array (it was once printed into a fixed buffer that a long
// array cut short), every counter and [accepted, offered] pair read back.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/draft_options.h"
#include "common/json_value.h"

namespace k3 {
namespace {

JsonValue parse_member(const std::string& member) {
  JsonValue doc;
  std::string error;
  EXPECT_TRUE(parse_json("{\n" + member + "\n}", doc, error)) << error << "\n" << member;
  const JsonValue* draft = doc.find("draft");
  EXPECT_NE(draft, nullptr);
  return draft ? *draft : JsonValue{};
}

int64_t int_of(const JsonValue& v) {
  EXPECT_EQ(v.kind, JsonValue::Kind::kInt);
  return std::stoll(v.text);
}

TEST(DraftStatsJson, CountersReadBack) {
  DSparkStats s;
  s.passes = 11;
  s.proposed = 77;
  s.verified = 30;
  s.accepted = 19;
  s.positions_fused = 123456789012LL;
  s.skipped_long_context = 2;
  s.skipped_no_taps = 3;
  const JsonValue d = parse_member(draft_stats_member(s, 65536, {5, 4}, {9, 8}, {32000000, 4780000000ULL}));
  EXPECT_EQ(int_of(*d.find("passes")), 11);
  EXPECT_EQ(int_of(*d.find("drafts_proposed")), 77);
  EXPECT_EQ(int_of(*d.find("drafts_verified")), 30);
  EXPECT_EQ(int_of(*d.find("drafts_accepted")), 19);
  EXPECT_EQ(int_of(*d.find("positions_fused")), 123456789012LL);
  EXPECT_EQ(int_of(*d.find("max_context")), 65536);
  EXPECT_EQ(int_of(*d.find("skipped_long_context")), 2);
  EXPECT_EQ(int_of(*d.find("skipped_no_taps")), 3);
  EXPECT_EQ(int_of(*d.find("streamed_block_bytes")), 32000000);
  EXPECT_EQ(int_of(*d.find("bytes_read")), 4780000000LL);
  const JsonValue& per = *d.find("accepted_of_offered_by_position");
  ASSERT_EQ(per.items.size(), 2u);
  EXPECT_EQ(int_of(per.items[1].items[0]), 4);
  EXPECT_EQ(int_of(per.items[1].items[1]), 8);
}

TEST(DraftStatsJson, LongPerPositionArrayStaysValid) {
  // 300 positions of 19-digit counts: about 12 KB of array.
  const size_t n = 300;
  std::vector<int64_t> accepted(n), offered(n);
  for (size_t i = 0; i < n; ++i) {
    offered[i] = 9000000000000000000LL + static_cast<int64_t>(i);
    accepted[i] = 1000000000000000000LL + static_cast<int64_t>(i);
  }
  const std::string member = draft_stats_member(DSparkStats{}, 7, accepted, offered);
  EXPECT_GT(member.size(), 768u * 4);
  const JsonValue d = parse_member(member);
  const JsonValue* per = d.find("accepted_of_offered_by_position");
  ASSERT_NE(per, nullptr);
  ASSERT_EQ(per->items.size(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(per->items[i].items.size(), 2u);
    EXPECT_EQ(int_of(per->items[i].items[0]), accepted[i]);
    EXPECT_EQ(int_of(per->items[i].items[1]), offered[i]);
  }
}

TEST(DraftStatsJson, ShorterAcceptedCountsAsZero) {
  const JsonValue d = parse_member(draft_stats_member(DSparkStats{}, 1, {}, {3}));
  const JsonValue& per = *d.find("accepted_of_offered_by_position");
  ASSERT_EQ(per.items.size(), 1u);
  EXPECT_EQ(int_of(per.items[0].items[0]), 0);
  EXPECT_EQ(int_of(per.items[0].items[1]), 3);
}

}  // namespace
}  // namespace k3
