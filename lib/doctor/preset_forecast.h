// What a preset costs on this machine: the memory it holds, and the bytes
// and seconds each generated token must spend reading from storage.
//
// Memory: pinned trunk + expert cache + (when the trunk is not fully pinned)
// one MoE layer's trunk in flight (read while the previous layer computes;
// the larger dense layer 0 and head are assumed read in parts) + one layer's
// routed experts in flight + a fixed allowance for activations, attention
// state and buffers.
//
// Time per token (decode, one token at a time) is taken as I/O bound:
//   bytes = trunk read per token not pinned + routed expert bytes x (1 - h)
//   seconds = bytes / measured bandwidth
// where h is the expert cache hit rate. Unless given, h is the cache's share
// of all routed experts (what uniform routing would give); real routing is
// skewed and repeats across neighbouring tokens, so this is pessimistic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/model_bytes.h"
#include "runtime/presets.h"

namespace k3::doctor {

// Activations, attention/KDA state for a few thousand tokens, read buffers.
inline constexpr uint64_t kRuntimeAllowanceBytes = 500'000'000;
// A preset is recommended when its forecast fits in this share of usable memory.
inline constexpr double kUsableShare = 0.90;

struct PresetForecast {
  Preset preset;
  uint64_t pinned_trunk = 0;   // min(preset trunk, per-token trunk)
  uint64_t cache = 0;
  uint64_t stream_buffers = 0;  // layer in flight + experts in flight
  uint64_t runtime = kRuntimeAllowanceBytes;
  uint64_t memory() const { return pinned_trunk + cache + stream_buffers + runtime; }

  double hit_rate = 0;
  bool hit_rate_assumed = true;     // true: the cache-share estimate; false: given by the user
  uint64_t trunk_read = 0;          // per token
  uint64_t expert_read = 0;         // per token, after cache hits
  uint64_t bytes_per_token() const { return trunk_read + expert_read; }
};

PresetForecast forecast_preset(const Preset& p, const ModelBytes& m, std::optional<double> hit_rate);

// The largest preset (by memory()) whose forecast fits in kUsableShare of
// `usable_bytes`; nullopt when none does.
std::optional<PresetForecast> recommend_preset(uint64_t usable_bytes, const ModelBytes& m,
                                               std::optional<double> hit_rate);

}  // namespace k3::doctor
