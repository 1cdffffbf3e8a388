// Which latent caches the device keeps and which rows a call copies
// (gpu/latent_cache_slots.h): only rows appended under the same generation
// are skipped; a new generation, an evicted cache or one shorter than its
// copy is copied whole; a call's own caches are never evicted for each
// other; what does not fit is declined before anything is recorded.
#include <gtest/gtest.h>

#include <vector>

#include "gpu/latent_cache_slots.h"

namespace k3 {
namespace {

using Placement = LatentCacheSlots::Placement;

std::vector<Placement> place(LatentCacheSlots& slots, const std::vector<uint64_t>& generations,
                             const std::vector<size_t>& positions) {
  std::vector<Placement> out;
  EXPECT_TRUE(slots.place(generations, positions, out));
  slots.commit();
  return out;
}

TEST(LatentCacheSlots, OnlyRowsAppendedUnderTheSameGenerationAreKept) {
  LatentCacheSlots slots;
  slots.configure(2, 100);
  EXPECT_TRUE(slots.keeps());
  auto p = place(slots, {7}, {30});
  EXPECT_EQ(p[0].from, 0u);  // new: copied whole
  const size_t slot = p[0].slot;
  p = place(slots, {7}, {45});
  EXPECT_EQ(p[0].slot, slot);
  EXPECT_EQ(p[0].from, 30u);  // rows 30..44 appended since
  p = place(slots, {7}, {45});
  EXPECT_EQ(p[0].from, 45u);  // nothing new
  p = place(slots, {8}, {45});
  EXPECT_EQ(p[0].from, 0u);  // another generation: another cache's rows
  // Shorter than the copy under the same name (a host that did not rename
  // cut rows): copied whole, not trusted.
  p = place(slots, {7}, {20});
  EXPECT_EQ(p[0].from, 0u);
  p = place(slots, {7}, {25});
  EXPECT_EQ(p[0].from, 20u);
}

TEST(LatentCacheSlots, EvictsTheLeastRecentlyUsedButNeverThisCallsOwn) {
  LatentCacheSlots slots;
  slots.configure(2, 100);
  const auto a = place(slots, {1}, {10});
  const auto b = place(slots, {2}, {10});
  EXPECT_NE(a[0].slot, b[0].slot);
  place(slots, {1}, {12});                 // 1 used after 2
  const auto c = place(slots, {3}, {10});  // evicts 2
  EXPECT_EQ(c[0].slot, b[0].slot);
  EXPECT_EQ(place(slots, {1}, {14})[0].from, 12u);  // 1 kept
  EXPECT_EQ(place(slots, {2}, {10})[0].from, 0u);   // 2 was evicted: whole
  // Two caches in one call: each its own slot, neither evicted for the other.
  const auto both = place(slots, {4, 5}, {10, 10});
  EXPECT_NE(both[0].slot, both[1].slot);
  const auto again = place(slots, {4, 5}, {11, 12});
  EXPECT_EQ(again[0].slot, both[0].slot);
  EXPECT_EQ(again[1].slot, both[1].slot);
  EXPECT_EQ(again[0].from, 10u);
  EXPECT_EQ(again[1].from, 10u);
  // A new cache beside a kept one whose slot is the least recently used:
  // the new one takes the other slot, the kept one stays.
  LatentCacheSlots two;
  two.configure(2, 100);
  place(two, {1}, {10});
  place(two, {2}, {10});
  const auto mixed = place(two, {3, 1}, {5, 12});
  EXPECT_NE(mixed[0].slot, mixed[1].slot);
  EXPECT_EQ(mixed[0].from, 0u);
  EXPECT_EQ(mixed[1].from, 10u);
  EXPECT_EQ(place(two, {2}, {10})[0].from, 0u);  // 2 made room
}

TEST(LatentCacheSlots, WhatDoesNotFitIsDeclinedAndNothingRecorded) {
  LatentCacheSlots slots;
  slots.configure(2, 100);
  place(slots, {1}, {50});
  std::vector<Placement> out;
  EXPECT_FALSE(
      slots.place(std::vector<uint64_t>{2, 3, 4}, std::vector<size_t>{1, 1, 1}, out));  // more caches than slots
  EXPECT_FALSE(slots.place(std::vector<uint64_t>{1}, std::vector<size_t>{101}, out));   // longer than a slot
  EXPECT_EQ(place(slots, {1}, {60})[0].from, 50u);                                      // the copy of 1 is still there
  // Placed but not committed (the copy did not happen): not recorded.
  ASSERT_TRUE(slots.place(std::vector<uint64_t>{9}, std::vector<size_t>{40}, out));
  EXPECT_EQ(place(slots, {9}, {40})[0].from, 0u);
  // forget: every copy gone (the device buffer was replaced).
  slots.forget();
  EXPECT_EQ(place(slots, {1}, {60})[0].from, 0u);
}

TEST(LatentCacheSlots, UnconfiguredKeepsNothing) {
  LatentCacheSlots slots;
  EXPECT_FALSE(slots.keeps());
  slots.configure(4, 0);
  EXPECT_FALSE(slots.keeps());
  EXPECT_EQ(slots.slots(), 0u);
}

}  // namespace
}  // namespace k3
