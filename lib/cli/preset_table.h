// `--list-presets`: every preset's forecast for a model, or for the real
// Kimi-K3 (its reference geometry) when no model directory is given, with
// what each costs per generated token: the bytes read from storage and the
// seconds those take at a read bandwidth (k3-doctor's assumed 2 GB/s, or
// the one it measured, given with --read-gbps). The memory figure is the
// plan k3-forward refuses on; the time is k3-doctor's forecast (reads
// only, uniform routing for the cache hit rate: pessimistic).
#pragma once

#include <string>

#include "cli/model_options.h"

namespace k3 {

// The table (stdout text). `model_dir` empty: K3's reference geometry.
// `read_gbps` <= 0: the assumed bandwidth. Every plan counts what
// `run_flags` (may be empty) adds for the model's config: a draft model,
// rollback copies, sequences, kept states, as --preset auto counts them.
std::string preset_table(const ModelOptions& options, double read_gbps, const RunFlags& run_flags = nullptr);

}  // namespace k3
