// Counts with their nouns: "1 sequence", "2 sequences", "1 rollback copy".
#include "common/plural.h"

#include <gtest/gtest.h>

namespace k3 {
namespace {

TEST(Plural, OneIsSingularEverythingElsePlural) {
  EXPECT_EQ(plural(1, "sequence"), "1 sequence");
  EXPECT_EQ(plural(0, "sequence"), "0 sequences");
  EXPECT_EQ(plural(2, "token"), "2 tokens");
  EXPECT_EQ(plural(1, "rollback copy", "rollback copies"), "1 rollback copy");
  EXPECT_EQ(plural(4, "rollback copy", "rollback copies"), "4 rollback copies");
}

}  // namespace
}  // namespace k3
