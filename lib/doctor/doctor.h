// Layer doctor (leaf): k3-doctor, whether and how well this machine runs K3.
//
// k3-doctor's library entry point: examine the machine (and optionally a
// model and trunk directory) and say whether, with which preset and how fast
// k3-forward can run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "doctor/report.h"

namespace k3::doctor {

struct DoctorOptions {
  std::string model_dir;  // empty: no checkpoint checks, forecasts use the real K3 geometry
  std::string trunk_dir;  // empty: no trunk checks
  std::string root;       // where /proc and /sys are read from (empty: $K3_DOCTOR_ROOT or "/")
  bool probe = true;      // measure O_DIRECT bandwidth
  double probe_seconds = 3.0;
  uint64_t probe_max_bytes = 4'000'000'000;
  std::string probe_file;          // measure this file instead of the largest in the model/trunk dirs
  std::optional<double> hit_rate;  // expert cache hit rate for the forecast (default: cache share)
  std::string draft_dir;  // --draft: the preset recommended with this DSpark draft counted (as --preset auto does)
  uint64_t prompt_tokens = 4000;  // --prompt-tokens: the prompt of the time-to-first-token forecast
};

// Files smaller than this are not worth measuring: the device's own cache
// would answer. Real shards are ~16 GB and the trunk ~109 GB.
inline constexpr uint64_t kMinProbeFileBytes = 256'000'000;
// Bandwidth used for the forecast when nothing could be measured, clearly
// labelled as assumed in the output (a PCIe 3.0 x4 NVMe drive's random-read rate).
inline constexpr double kAssumedBandwidth = 2.0e9;

Report run_doctor(const DoctorOptions& options);

}  // namespace k3::doctor
