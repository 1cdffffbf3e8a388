// The library names settings by their keys and the command line spells them
// as flags: a refusal made in runtime/ reads "trunk_gb needs trunk_dir" to a
// program embedding the library and, once the tools' spellings are
// installed, exactly the line k3-forward has always printed ("--trunk-gb
// needs --trunk DIR ... k3-pack MODEL_DIR TRUNK_DIR").
#include "cli/flag_spellings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "common/cli_limits.h"
#include "common/error.h"
#include "common/setting_spelling.h"
#include "planning/run_request.h"
#include "runtime/resident_plan.h"
#include "runtime/streaming_setup.h"
#include "sampling/sampling_settings.h"
#include "trunk/pack_command.h"

namespace k3 {
namespace {

// Each test starts and ends with no speller: the process-wide state never
// leaks from one test into the next.
class FlagSpellings : public ::testing::Test {
 protected:
  void SetUp() override { set_setting_speller(nullptr); }
  void TearDown() override { set_setting_speller(nullptr); }
};

std::string refusal(const RunRequest& req) {
  uint64_t trunk = 0, cache = 0;
  try {
    resolve_budgets(req, &trunk, &cache);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    return e.what();
  }
  return "(accepted)";
}

RunRequest trunk_gb_without_trunk() {
  RunRequest req;
  req.trunk_gb = 1;
  return req;
}

TEST_F(FlagSpellings, WithoutASpellerTheLibraryNamesItsSettings) {
  EXPECT_EQ(refusal(trunk_gb_without_trunk()),
            "trunk_gb needs trunk_dir DIR (without a packed trunk the whole trunk is resident; pack one with "
            "pack_trunk MODEL_DIR TRUNK_DIR)");
  RunRequest huge;
  huge.preset = "huge";
  EXPECT_EQ(refusal(huge).rfind("unknown preset 'huge' (known: min, ", 0), 0u) << refusal(huge);
  EXPECT_EQ(stream_instead_advice(),
            "pack the trunk once (pack_trunk MODEL_DIR TRUNK_DIR) and run with trunk_dir TRUNK_DIR preset auto to "
            "stream within the memory");
}

TEST_F(FlagSpellings, TheCommandLineReadsTheFlagsItTakes) {
  cli::use_flag_spellings();
  EXPECT_EQ(refusal(trunk_gb_without_trunk()),
            "--trunk-gb needs --trunk DIR (without a packed trunk the whole trunk is resident; pack one with "
            "k3-pack MODEL_DIR TRUNK_DIR)");
  RunRequest blocks;
  blocks.block_mb = 1;
  EXPECT_EQ(refusal(blocks),
            "--block-mb needs --trunk DIR (row blocks are read from a packed trunk; pack one with k3-pack "
            "MODEL_DIR TRUNK_DIR)");
  RunRequest huge;
  huge.preset = "huge";
  EXPECT_EQ(refusal(huge).rfind("unknown --preset 'huge' (known: min, ", 0), 0u) << refusal(huge);
  RunRequest absurd;
  absurd.preset = "laptop";
  absurd.cache_gb = 1e300;  // past any machine: refused, not wrapped to a 0-byte cache
  EXPECT_EQ(refusal(absurd).rfind("--cache-gb ", 0), 0u) << refusal(absurd);
  // The library's range is the flags' own (common/cli_limits.h): its end is
  // a budget, the next double past it is not.
  RunRequest at_limit;
  at_limit.preset = "laptop";
  at_limit.cache_gb = kMaxGigabytes;
  EXPECT_EQ(refusal(at_limit), "(accepted)");
  at_limit.cache_gb = std::nextafter(kMaxGigabytes, 2 * kMaxGigabytes);
  EXPECT_NE(refusal(at_limit).find("is not a budget: give GB from 0 to 1000000"), std::string::npos)
      << refusal(at_limit);
  EXPECT_EQ(stream_instead_advice(),
            "pack the trunk once (k3-pack MODEL_DIR TRUNK_DIR) and run with --trunk TRUNK_DIR --preset auto to "
            "stream within the memory");
  EXPECT_EQ(rerun_pack_hint(), "(re-run k3-pack)");
}

std::string sampling_refusal(SamplingSetting setting, double value, SettingNames names) {
  try {
    check_setting(setting, value, names);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// The sampler, the tools' flags and the server's fields share one rule per
// setting; only the name in the refusal differs.
TEST_F(FlagSpellings, SamplingSettingsReadAsTheirFlagsOnTheCommandLine) {
  EXPECT_EQ(sampling_refusal(SamplingSetting::kTopK, -1, SettingNames::kFlag),
            "top_k must be >= 0 (0 means off), got -1");
  cli::use_flag_spellings();
  EXPECT_EQ(sampling_refusal(SamplingSetting::kTopK, -1, SettingNames::kFlag),
            "--top-k must be >= 0 (0 means off), got -1");
  EXPECT_EQ(sampling_refusal(SamplingSetting::kTemperature, -1, SettingNames::kFlag).rfind("--temp must be", 0), 0u);
  EXPECT_EQ(sampling_refusal(SamplingSetting::kRepeatLastN, -2, SettingNames::kFlag).rfind("--repeat-last-n must", 0),
            0u);
  EXPECT_EQ(sampling_refusal(SamplingSetting::kTopK, -1, SettingNames::kApiField),
            "top_k must be >= 0 (0 means off), got -1");
}

TEST_F(FlagSpellings, EveryRunSettingHasOneFlag) {
  const std::pair<const char*, const char*> flags[] = {
      {run_setting::kTrunkDir, "--trunk"},         {run_setting::kPreset, "--preset"},
      {run_setting::kTrunkGb, "--trunk-gb"},       {run_setting::kCacheGb, "--cache-gb"},
      {run_setting::kBlockMb, "--block-mb"},       {run_setting::kContext, "--ctx"},
      {run_setting::kKeptStateBytes, "--keep-mb"}, {kPackTrunk, "k3-pack"},
  };
  for (const auto& [key, flag] : flags) {
    ASSERT_NE(cli::flag_spelling(key), nullptr) << key;
    EXPECT_STREQ(cli::flag_spelling(key), flag) << key;
  }
  // A key the command line does not spell reads as itself, speller or not.
  EXPECT_EQ(cli::flag_spelling("no_such_setting"), nullptr);
  cli::use_flag_spellings();
  EXPECT_EQ(spelled("no_such_setting"), "no_such_setting");
  EXPECT_EQ(spelled(run_setting::kContext), "--ctx");
}

}  // namespace
}  // namespace k3
