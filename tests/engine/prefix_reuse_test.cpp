// The one prefix-reuse rule (engine/prefix_reuse.h) that k3::Session's save
// points and k3-serve's conversation cache choose with.
#include <gtest/gtest.h>

#include <cstdint>
#include <list>
#include <span>
#include <vector>

#include "engine/prefix_reuse.h"

namespace k3 {
namespace {

using Ids = std::vector<int32_t>;

std::span<const int32_t> ids_of(const Ids& ids) { return ids; }

TEST(PrefixReuse, IsIdPrefix) {
  EXPECT_TRUE(is_id_prefix(Ids{}, Ids{1, 2}));
  EXPECT_TRUE(is_id_prefix(Ids{1, 2}, Ids{1, 2}));
  EXPECT_TRUE(is_id_prefix(Ids{1}, Ids{1, 2}));
  EXPECT_FALSE(is_id_prefix(Ids{2}, Ids{1, 2}));
  EXPECT_FALSE(is_id_prefix(Ids{1, 2, 3}, Ids{1, 2}));
  EXPECT_FALSE(is_id_prefix(Ids{1, 3}, Ids{1, 2, 3}));
}

TEST(PrefixReuse, TheLongestStateThatIsAPrefixIsChosen) {
  const std::list<Ids> states = {{1, 2}, {1, 2, 3, 4}, {1, 2, 3, 9, 9}, {1}, {7, 8, 9}};
  const Ids prompt = {1, 2, 3, 4, 5};
  const auto best = longest_prefix_state(states.begin(), states.end(), prompt, ids_of);
  ASSERT_NE(best, states.end());
  EXPECT_EQ(*best, (Ids{1, 2, 3, 4}));
  // The longer state that is not a prefix ({1, 2, 3, 9, 9}) is never taken.
  const Ids other = {1, 2, 3, 9};
  const auto shorter = longest_prefix_state(states.begin(), states.end(), other, ids_of);
  ASSERT_NE(shorter, states.end());
  EXPECT_EQ(*shorter, (Ids{1, 2}));
}

TEST(PrefixReuse, NoneIsAPrefixGivesEnd) {
  const std::vector<Ids> states = {{2}, {1, 3}};
  EXPECT_EQ(longest_prefix_state(states.begin(), states.end(), Ids{1, 2}, ids_of), states.end());
  const std::vector<Ids> none;
  EXPECT_EQ(longest_prefix_state(none.begin(), none.end(), Ids{1}, ids_of), none.end());
}

TEST(PrefixReuse, OfEqualLengthTheFirstIsChosen) {
  // A cache lists its states most recently used first: the newest copy wins.
  const std::vector<Ids> states = {{5}, {1, 2}, {1, 2}};
  const auto best = longest_prefix_state(states.begin(), states.end(), Ids{1, 2, 3}, ids_of);
  EXPECT_EQ(best - states.begin(), 1);
}

}  // namespace
}  // namespace k3
