// The prompt's progress line: only on a terminal, rewritten in place and
// erased at the end; its figures (layer i of N, the read of the weights it
// is in, tokens/s, seconds left) against ForwardPass::forward's step count
// written out here.
#include "cli/prefill_progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "lib/test_util.h"

namespace k3 {
namespace {

using test::file_contents;

// 600 tokens, 13 layers, sub-batches of 256: one read of 600 rows is 3
// sub-batches x 13 layers = 39 steps; reads of 300 rows: 2 x (2 x 13) = 52.
const PromptSteps kOneRead{600, 700, 256, 13};
const PromptSteps kTwoReads{600, 300, 256, 13};

TEST(PromptSteps, LocatesLayerAndRead) {
  int64_t read = 0, reads = 0, layer = 0;
  ASSERT_TRUE(kOneRead.locate(1, 39, &read, &reads, &layer));
  EXPECT_EQ(read, 1);
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(layer, 1);
  ASSERT_TRUE(kOneRead.locate(3, 39, &read, &reads, &layer));  // layer 1's last sub-batch
  EXPECT_EQ(layer, 1);
  ASSERT_TRUE(kOneRead.locate(4, 39, &read, &reads, &layer));
  EXPECT_EQ(layer, 2);
  ASSERT_TRUE(kOneRead.locate(39, 39, &read, &reads, &layer));
  EXPECT_EQ(layer, 13);
  ASSERT_TRUE(kTwoReads.locate(27, 52, &read, &reads, &layer));  // the second read's first step
  EXPECT_EQ(read, 2);
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(layer, 1);
  // Batches (a read no longer than the batch): one step a layer.
  const PromptSteps batches{600, 256, 256, 13};  // 256, 256, 88: 3 x 13 = 39
  ASSERT_TRUE(batches.locate(14, 39, &read, &reads, &layer));
  EXPECT_EQ(read, 2);
  EXPECT_EQ(layer, 1);
  EXPECT_FALSE(kOneRead.locate(5, 40, &read, &reads, &layer)) << "another prompt's count";
}

TEST(PrefillProgress, LineFigures) {
  // Step 21 of 39 after 10 s: 20 steps in 10 s, 0.5 s a step; the prompt
  // takes 39 x 0.5 = 19.5 s for 600 tokens, 30.8 tokens/s; 18 steps left, 9 s.
  EXPECT_EQ(PrefillProgress::line("k3-forward", kOneRead, 21, 39, 10.0),
            "k3-forward: prompt of 600 tokens: layer 7 of 13, 30.8 tokens/s, 9 s left");
  EXPECT_EQ(PrefillProgress::line("k3-forward", kTwoReads, 30, 52, 29.0),
            "k3-forward: prompt of 600 tokens: layer 2 of 13 (read 2 of 2), 11.5 tokens/s, 22 s left");
  EXPECT_EQ(PrefillProgress::line("k3-forward", PromptSteps{}, 5, 40, 4.0),
            "k3-forward: prompt: step 5 of 40, 35 s left");
  EXPECT_EQ(PrefillProgress::line("k3-forward", kOneRead, 1, 39, 0.0),
            "k3-forward: prompt of 600 tokens: layer 1 of 13");
}

TEST(PrefillProgress, OnATerminalRewritesOneLineAndErasesIt) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PrefillProgress p("k3-forward", true, f, std::chrono::seconds(0));
  p.set_steps(kOneRead);
  for (int i = 1; i <= 39; ++i) p(i, 39);
  const std::string s = file_contents(f);
  EXPECT_EQ(s.find('\n'), std::string::npos) << s;
  EXPECT_NE(s.find("\rk3-forward: prompt of 600 tokens: layer 1 of 13"), std::string::npos) << s;
  EXPECT_NE(s.find("\rk3-forward: prompt of 600 tokens: layer 13 of 13"), std::string::npos) << s;
  EXPECT_EQ(s.rfind("\r\x1b[K"), s.size() - 4) << s;  // erased at the last step
  std::fclose(f);
}

TEST(PrefillProgress, OffATerminalPrintsNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PrefillProgress p("k3-forward", false, f, std::chrono::seconds(0));
  p.set_steps(kOneRead);
  for (int i = 1; i <= 39; ++i) p(i, 39);
  p.finish();
  EXPECT_EQ(file_contents(f), "");
  std::fclose(f);
}

TEST(PrefillProgress, RateLimited) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PrefillProgress p("k3-forward", true, f, std::chrono::hours(1));
  p.set_steps(kOneRead);
  for (int i = 1; i < 39; ++i) p(i, 39);
  EXPECT_EQ(file_contents(f), "");
  p.finish();
  std::fclose(f);
}

}  // namespace
}  // namespace k3
