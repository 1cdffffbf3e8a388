// Bit-for-bit comparisons of sequence states for the model tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/test_util.h"
#include "model/sequence_state.h"

namespace k3::test {

// Every float of the sequence state, bit for bit.
inline void expect_same_state(const SequenceState& a, const SequenceState& b, const std::string& what) {
  EXPECT_EQ(a.positions, b.positions) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  ASSERT_EQ(a.layers.size(), b.layers.size()) << what;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const LayerState &x = a.layers[i], &y = b.layers[i];
    EXPECT_TRUE(same_bits(x.kda.S, y.kda.S)) << what << ": KDA state of layer " << i;
    EXPECT_TRUE(same_bits(x.kda.conv_q, y.kda.conv_q) && same_bits(x.kda.conv_k, y.kda.conv_k) &&
                same_bits(x.kda.conv_v, y.kda.conv_v))
        << what << ": conv carries of layer " << i;
    EXPECT_TRUE(same_bits(x.mla.latent, y.mla.latent)) << what << ": MLA cache of layer " << i;
  }
}

}  // namespace k3::test
