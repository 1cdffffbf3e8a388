// The keys messages name the library's commands by when they tell the user
// what to run (common/setting_spelling.h): the trunk packer and its modes
// (trunk/writer.h, trunk/check.h), the checkpoint verifier and downloader
// (verify/, fetch/) and the streaming run. Defined here, below every layer
// that gives such advice, once each; the command-line tools spell each as the
// tool and flags that run it (cli/flag_spellings.cpp: "pack_trunk" ->
// "k3-pack", "verify_checkpoint_full" -> "k3-fetch-verify verify --full").
#pragma once

namespace k3 {

inline constexpr const char* kPackTrunk = "pack_trunk";
inline constexpr const char* kCheckTrunk = "check_trunk";
inline constexpr const char* kRefreshTrunk = "refresh_trunk";
inline constexpr const char* kCompressTrunk = "compress";      // pack_trunk's option to compress the sections
inline constexpr const char* kStreamingRun = "streaming_run";  // a run from a packed trunk, which checks its blocks
inline constexpr const char* kVerifyCheckpoint = "verify_checkpoint";
inline constexpr const char* kVerifyCheckpointFull = "verify_checkpoint_full";
inline constexpr const char* kDownloadCheckpoint = "download_checkpoint";

}  // namespace k3
