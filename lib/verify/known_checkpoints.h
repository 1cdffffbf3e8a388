// Facts about published checkpoints that a download must reproduce exactly.
#pragma once

#include <cstdint>

namespace k3 {

// moonshotai/Kimi-K3: 96 safetensors shards; the byte total counts whole
// shard files (headers included), unlike the index's metadata.total_size.
inline constexpr const char* kKimiK3ModelType = "kimi_k3";
inline constexpr uint64_t kKimiK3ShardCount = 96;
inline constexpr uint64_t kKimiK3ShardBytes = 1560936091448ull;

// Inferact/Kimi-K3-DSpark, K3's trained draft model: config.json and one
// model.safetensors (no index); it is used with --draft, not packed.
inline constexpr const char* kDSparkModelType = "k3_dspark";

}  // namespace k3
