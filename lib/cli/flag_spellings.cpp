#include "cli/flag_spellings.h"

#include "common/command_keys.h"
#include "common/quiet.h"
#include "common/setting_spelling.h"
#include "draft/dspark_config.h"
#include "gpu/gpu.h"
#include "planning/run_request.h"
#include "platform/system_root.h"
#include "sampling/stop_strings.h"
#include "verify/checkpoint_verifier.h"

namespace k3::cli {

namespace {

struct Spelling {
  std::string_view key;
  const char* flag;
};

constexpr Spelling kSpellings[] = {
    // The run's settings (planning/run_request.h).
    {run_setting::kTrunkDir, "--trunk"},
    {run_setting::kPreset, "--preset"},
    {run_setting::kTrunkGb, "--trunk-gb"},
    {run_setting::kCacheGb, "--cache-gb"},
    {run_setting::kBlockMb, "--block-mb"},
    {run_setting::kContext, "--ctx"},
    {run_setting::kKeptStateBytes, "--keep-mb"},
    {run_setting::kMaxNew, "--gen"},
    {kGpuSetting, "--gpu"},
    {kGpuMbSetting, "--gpu-mb"},
    // Sampling (sampling/sampling_settings.h names each by its API field).
    {"temperature", "--temp"},
    {"top_k", "--top-k"},
    {"top_p", "--top-p"},
    {"min_p", "--min-p"},
    {"repetition_penalty", "--repeat-penalty"},
    {"frequency_penalty", "--frequency-penalty"},
    {"presence_penalty", "--presence-penalty"},
    {"repeat_last_n", "--repeat-last-n"},
    {kStopSetting, "--stop"},
    // The rest of the library's settings.
    {kDraftDirSetting, "--draft"},
    {kQuietSetting, "--quiet"},
    {kRootSetting, "--root"},
    {verify_setting::kFull, "--full"},
    {verify_setting::kNoManifest, "--no-manifest"},
    // The commands a message tells the user to run (common/command_keys.h).
    {kPackTrunk, "k3-pack"},
    {kCheckTrunk, "k3-pack --check"},
    {kRefreshTrunk, "k3-pack --refresh"},
    {kCompressTrunk, "--compress"},
    {kStreamingRun, "k3-forward"},
    {kVerifyCheckpoint, "k3-fetch-verify verify"},
    {kVerifyCheckpointFull, "k3-fetch-verify verify --full"},
    {kDownloadCheckpoint, "k3-fetch-verify download"},
};

}  // namespace

const char* flag_spelling(std::string_view key) {
  for (const Spelling& s : kSpellings)
    if (s.key == key) return s.flag;
  return nullptr;
}

void use_flag_spellings() { set_setting_speller(&flag_spelling); }

}  // namespace k3::cli
