// Bit-for-bit comparisons of sequence states for the model tests.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/sequence_state.h"

namespace k3::test {

// The same floats, bit for bit (memcmp of two empty vectors would pass it
// null pointers).
inline bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Every float of the sequence state, bit for bit.
inline void expect_same_state(const SequenceState& a, const SequenceState& b, const std::string& what) {
  EXPECT_EQ(a.positions, b.positions) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  ASSERT_EQ(a.layers.size(), b.layers.size()) << what;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const LayerState &x = a.layers[i], &y = b.layers[i];
    EXPECT_TRUE(same_floats(x.kda.S, y.kda.S)) << what << ": KDA state of layer " << i;
    EXPECT_TRUE(same_floats(x.kda.conv_q, y.kda.conv_q) && same_floats(x.kda.conv_k, y.kda.conv_k) &&
                same_floats(x.kda.conv_v, y.kda.conv_v))
        << what << ": conv carries of layer " << i;
    EXPECT_TRUE(same_floats(x.mla.latent, y.mla.latent)) << what << ": MLA cache of layer " << i;
  }
}

}  // namespace k3::test
