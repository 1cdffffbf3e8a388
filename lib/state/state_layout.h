// Byte layout of a state file (format version 1), shared by the writer, the
// reader and state_file_bytes(). docs/state-format.md is the prose version.
//
// Everything is little-endian. The file is
//   header (32 B) | sections... | XXH3-64 of every preceding byte (8 B)
// and each section is
//   tag (u32) | reserved 0 (u32) | payload length (u64) | payload | zero pad to 8 B.
#pragma once

#include <bit>
#include <cstdint>

#include "state/state_geometry.h"

namespace k3::state_layout {

static_assert(std::endian::native == std::endian::little,
              "state files are little-endian; a big-endian port needs byte swapping here");

inline constexpr char kMagic[8] = {'K', '3', 'S', 'T', 'A', 'T', 'E', '\0'};
inline constexpr uint32_t kFormatVersion = 1;

// Header flags: which optional sections follow.
inline constexpr uint32_t kFlagSampling = 1u << 0;
inline constexpr uint32_t kFlagLogits = 1u << 1;
inline constexpr uint32_t kFlagPenalties = 1u << 2;
inline constexpr uint32_t kKnownFlags = kFlagSampling | kFlagLogits | kFlagPenalties;

inline constexpr uint64_t kHeaderBytes = 32;  // magic, version, flags, file size, section count, reserved
inline constexpr uint64_t kSectionHeaderBytes = 16;
inline constexpr uint64_t kChecksumBytes = 8;

constexpr uint32_t tag(const char (&s)[5]) {
  return uint32_t(uint8_t(s[0])) | uint32_t(uint8_t(s[1])) << 8 | uint32_t(uint8_t(s[2])) << 16 |
         uint32_t(uint8_t(s[3])) << 24;
}
inline constexpr uint32_t kTagModel = tag("MODL");
inline constexpr uint32_t kTagGeometry = tag("GEOM");
inline constexpr uint32_t kTagTokens = tag("TOKN");
inline constexpr uint32_t kTagPending = tag("PEND");
inline constexpr uint32_t kTagSampling = tag("SAMP");
inline constexpr uint32_t kTagLogits = tag("LOGT");
inline constexpr uint32_t kTagPenalties = tag("PENA");
inline constexpr uint32_t kTagKda = tag("KDAS");
inline constexpr uint32_t kTagMla = tag("MLAC");

inline constexpr uint64_t pad8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }
inline constexpr uint64_t section_bytes(uint64_t payload) { return kSectionHeaderBytes + pad8(payload); }

// MODL: config hash, index hash, weights probe (u64 each).
inline constexpr uint64_t kModelPayloadBytes = 24;
// GEOM: u32 layers, vocab, kda heads, kda head dim, conv kernel, kv_lora, rope, 0; then one byte per layer.
inline uint64_t geometry_payload_bytes(const StateGeometry& g) { return 32 + uint64_t{g.num_layers()}; }
// TOKN / PEND: u64 count, then count x i32.
inline constexpr uint64_t tokens_payload_bytes(uint64_t n) { return 8 + 4 * n; }
// SAMP: f64 temperature, i32 top_k, u32 0, f64 top_p, f64 min_p, u64 seed.
inline constexpr uint64_t kSamplingPayloadBytes = 40;
// PENA: f64 repetition, f64 frequency, f64 presence, i32 last_n, u32 0.
inline constexpr uint64_t kPenaltiesPayloadBytes = 32;
// KDAS: u32 layer, u32 0, then S, conv_q, conv_k, conv_v as f32.
inline uint64_t kda_payload_bytes(const StateGeometry& g) {
  return 8 + 4 * (g.kda_state_floats() + 3 * g.kda_conv_floats());
}
// MLAC: u32 layer, u32 0, u64 positions, then positions x (kv_lora + rope) f32.
inline uint64_t mla_payload_bytes(const StateGeometry& g, uint64_t positions) {
  return 16 + 4 * positions * g.mla_floats_per_position();
}

}  // namespace k3::state_layout
