#include "state/state_file.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"
#include "state/hashing_writer.h"
#include "state/state_layout.h"
#include "state/state_reader.h"

namespace k3 {

using namespace state_layout;
using namespace state_reader;

namespace {

// ---------------------------------------------------------------- writing

void check_consistent(const std::string& path, const ConversationStateRef& s) {
  const StateGeometry& g = s.geometry;
  auto bad = [&](const std::string& what) {
    throw Error(ExitCode::kInternal, path + ": refusing to write an inconsistent state: " + what);
  };
  const SequenceState& q = s.sequence;
  if (q.positions < 0 || static_cast<uint64_t>(q.positions) != q.tokens.size())
    bad("positions " + std::to_string(q.positions) + " but " + std::to_string(q.tokens.size()) + " tokens");
  if (q.layers.size() != g.num_layers())
    bad(std::to_string(q.layers.size()) + " layers, geometry has " + std::to_string(g.num_layers()));
  for (uint32_t i = 0; i < g.num_layers(); ++i) {
    const LayerState& l = q.layers[i];
    auto check = [&](const std::vector<float>& v, uint64_t n, const char* what) {
      if (!v.empty() && v.size() != n)
        bad("layer " + std::to_string(i) + " " + what + " has " + std::to_string(v.size()) + " floats, expected " +
            std::to_string(n));
    };
    if (g.layer_is_mla[i]) {
      uint64_t n = static_cast<uint64_t>(q.positions) * g.mla_floats_per_position();
      if (l.mla.latent.size() != n)
        bad("layer " + std::to_string(i) + " MLA latent has " + std::to_string(l.mla.latent.size()) +
            " floats, expected " + std::to_string(n));
    } else {
      check(l.kda.S, g.kda_state_floats(), "KDA S");
      check(l.kda.conv_q, g.kda_conv_floats(), "conv_q");
      check(l.kda.conv_k, g.kda_conv_floats(), "conv_k");
      check(l.kda.conv_v, g.kda_conv_floats(), "conv_v");
    }
  }
  if (!s.last_logits.empty() && s.last_logits.size() != g.vocab_size)
    bad("last logits have " + std::to_string(s.last_logits.size()) + " entries, vocab is " +
        std::to_string(g.vocab_size));
}

void write_ids(HashingWriter& w, uint32_t t, const std::vector<int32_t>& ids) {
  w.section(t, tokens_payload_bytes(ids.size()));
  w.u64(ids.size());
  if (!ids.empty()) w.write(ids.data(), 4 * ids.size());
  w.end_section();
}

// ---------------------------------------------------------------- reading
// (the sections themselves: state/state_reader.h, shared with the summary)

// A settings section (sampler, penalties): opened, checked for its size,
// read by `fill`, and refused as malformed when the flags' own check
// (`validate`) refuses the values, so a forged file cannot carry settings no
// flag could set.
template <typename Params, typename Fill>
Params read_settings(SectionReader& r, uint32_t tag, const char* what, uint64_t bytes, void (*validate)(const Params&),
                     Fill fill) {
  r.open(tag, what);
  r.expect_length(bytes, what);
  Params p;
  fill(p);
  try {
    validate(p);
  } catch (const Error& e) {
    r.malformed(std::string(what) + " section: " + e.what());
  }
  return p;
}

// The sampler's settings and, when active, the penalties'.
void write_settings(HashingWriter& w, const ConversationStateRef& s, bool penalties) {
  if (s.sampling) {
    const SamplingParams& p = *s.sampling;
    w.section(kTagSampling, kSamplingPayloadBytes);
    w.f64(p.temperature);
    w.i32(p.top_k);
    w.u32(0);
    w.f64(p.top_p);
    w.f64(p.min_p);
    w.u64(p.seed);
    w.end_section();
  }
  if (penalties) {
    const PenaltyParams& p = s.sampling->penalties;
    w.section(kTagPenalties, kPenaltiesPayloadBytes);
    w.f64(p.repetition);
    w.f64(p.frequency);
    w.f64(p.presence);
    w.i32(p.last_n);
    w.u32(0);
    w.end_section();
  }
}

// Each layer's state: an MLA layer's latent cache for `positions`, a KDA
// layer's recurrent state and convolution windows.
void write_layers(HashingWriter& w, const StateGeometry& g, const SequenceState& q, uint64_t positions) {
  for (uint32_t i = 0; i < g.num_layers(); ++i) {
    const LayerState& l = q.layers[i];
    if (g.layer_is_mla[i]) {
      uint64_t n = positions * g.mla_floats_per_position();
      w.section(kTagMla, mla_payload_bytes(g, positions));
      w.u32(i);
      w.u32(0);
      w.u64(positions);
      w.floats(l.mla.latent, n);
    } else {
      w.section(kTagKda, kda_payload_bytes(g));
      w.u32(i);
      w.u32(0);
      w.floats(l.kda.S, g.kda_state_floats());
      w.floats(l.kda.conv_q, g.kda_conv_floats());
      w.floats(l.kda.conv_k, g.kda_conv_floats());
      w.floats(l.kda.conv_v, g.kda_conv_floats());
    }
    w.end_section();
  }
}

}  // namespace

void write_state_file(const std::string& path, const ConversationState& s) {
  write_state_file(path, ConversationStateRef{s.model, s.geometry, s.sequence, s.pending, s.sampling, s.last_logits});
}

void write_state_file(const std::string& path, const ConversationStateRef& s) {
  if (s.pending.size() > kMaxPendingIds)
    throw Error(ExitCode::kInternal, path + ": a state with " + std::to_string(s.pending.size()) +
                                         " pending ids (read_state_file accepts at most " +
                                         std::to_string(kMaxPendingIds) + ")");
  check_consistent(path, s);
  const StateGeometry& g = s.geometry;
  const SequenceState& q = s.sequence;
  StateFileContents contents;
  contents.positions = static_cast<uint64_t>(q.positions);
  contents.pending_ids = s.pending.size();
  contents.has_sampling = s.sampling.has_value();
  contents.has_logits = !s.last_logits.empty();
  contents.has_penalties = s.sampling && s.sampling->penalties.active();
  const uint64_t total = state_file_bytes(g, contents);

  HashingWriter w(path);
  uint32_t flags = (contents.has_sampling ? kFlagSampling : 0) | (contents.has_logits ? kFlagLogits : 0) |
                   (contents.has_penalties ? kFlagPenalties : 0);
  uint32_t sections = 4 + (contents.has_sampling ? 1 : 0) + (contents.has_logits ? 1 : 0) +
                      (contents.has_penalties ? 1 : 0) + g.num_layers();
  w.write(kMagic, 8);
  w.u32(kFormatVersion);
  w.u32(flags);
  w.u64(total);
  w.u32(sections);
  w.u32(0);

  w.section(kTagModel, kModelPayloadBytes);
  w.u64(s.model.config_hash);
  w.u64(s.model.index_hash);
  w.u64(s.model.weights_hash);
  w.end_section();

  w.section(kTagGeometry, geometry_payload_bytes(g));
  for (uint32_t v : {g.num_layers(), g.vocab_size, g.kda_heads, g.kda_head_dim, g.conv_kernel, g.kv_lora_rank,
                     g.qk_rope_head_dim, 0u})
    w.u32(v);
  w.write(g.layer_is_mla.data(), g.layer_is_mla.size());
  w.end_section();

  write_ids(w, kTagTokens, q.tokens);
  write_ids(w, kTagPending, s.pending);

  write_settings(w, s, contents.has_penalties);
  if (!s.last_logits.empty()) {
    w.section(kTagLogits, 4 * uint64_t{g.vocab_size});
    w.write(s.last_logits.data(), 4 * s.last_logits.size());
    w.end_section();
  }
  write_layers(w, g, q, contents.positions);
  if (w.written() + kChecksumBytes != total)
    throw Error(ExitCode::kInternal, path + ": wrote " + std::to_string(w.written() + kChecksumBytes) +
                                         " bytes, the layout says " + std::to_string(total));
  w.finish();
}

namespace {

// The checksum over everything before the last 8 bytes, before trusting any of it.
void check_checksum(const File& f, uint64_t size, const std::string& path) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> h(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(h.get());
  std::vector<char> buf(4 << 20);
  for (uint64_t at = 0; at < size - kChecksumBytes;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - kChecksumBytes - at));
    f.pread_exact(buf.data(), n, at);
    XXH3_64bits_update(h.get(), buf.data(), n);
    at += n;
  }
  uint64_t stored, computed = XXH3_64bits_digest(h.get());
  f.pread_exact(&stored, 8, size - kChecksumBytes);
  if (stored != computed) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "checksum mismatch (stored %016llx, computed %016llx): the file is corrupted",
                  static_cast<unsigned long long>(stored), static_cast<unsigned long long>(computed));
    refuse(ExitCode::kBadInput, path, msg);
  }
}

// One section per layer, in order: an MLA layer's latent cache of
// `positions` rows, or a KDA layer's recurrent state and conv windows.
std::vector<LayerState> read_layer_sections(SectionReader& r, const StateGeometry& g, uint64_t positions) {
  const uint32_t layers = static_cast<uint32_t>(g.layer_is_mla.size());
  std::vector<LayerState> out(layers);
  for (uint32_t i = 0; i < layers; ++i) {
    LayerState& l = out[i];
    const bool mla = g.layer_is_mla[i];
    r.open(mla ? kTagMla : kTagKda, mla ? "MLA cache" : "KDA state");
    r.expect_length(mla ? mla_payload_bytes(g, positions) : kda_payload_bytes(g), mla ? "MLA cache" : "KDA state");
    uint32_t layer = r.u32();
    r.u32();
    if (layer != i)
      r.malformed("layer section " + std::to_string(layer) + " where layer " + std::to_string(i) + " belongs");
    if (mla) {
      if (r.u64() != positions) r.malformed("MLA cache of layer " + std::to_string(i) + " has another length");
      r.floats(l.mla.latent, positions * g.mla_floats_per_position());
    } else {
      r.floats(l.kda.S, g.kda_state_floats());
      r.floats(l.kda.conv_q, g.kda_conv_floats());
      r.floats(l.kda.conv_k, g.kda_conv_floats());
      r.floats(l.kda.conv_v, g.kda_conv_floats());
    }
  }
  return out;
}

}  // namespace

ConversationState read_state_file(const std::string& path, const ModelFingerprint& model,
                                  const StateGeometry& geometry) {
  File f = open_state(path);
  const uint64_t size = f.size();
  const StateHeader header = read_header(f, size, path);
  const uint32_t flags = header.flags;
  check_checksum(f, size, path);

  SectionReader r(f, size - kChecksumBytes);
  ConversationState s;

  s.model = read_model(r);
  s.geometry = read_geometry(r);
  const StateGeometry& g = s.geometry;

  // Model checks before reading the large sections.
  if (!(g == geometry))
    refuse(ExitCode::kBadModel, path,
           "this state was saved for a model of another shape: state " + g.describe() + "; model " +
               geometry.describe() + ". Continue it with the model it was saved with");
  if (!(s.model == model))
    refuse(ExitCode::kBadModel, path,
           "this state was saved for a different model (state: " + s.model.describe() + "; model: " + model.describe() +
               "). Continue it with the model it was saved with");

  s.sequence.tokens = read_ids(r, kTagTokens, "token history", g.vocab_size);
  s.sequence.positions = static_cast<int64_t>(s.sequence.tokens.size());
  s.pending = read_ids(r, kTagPending, "pending ids", g.vocab_size);
  // Only the last generated id is ever saved unevaluated: more is a forged
  // file, refused before a continuation spends minutes evaluating it.
  if (s.pending.size() > kMaxPendingIds)
    r.malformed(std::to_string(s.pending.size()) + " pending ids; a saved state holds at most " +
                std::to_string(kMaxPendingIds) + " (the last generated id, not yet evaluated)");

  if (flags & kFlagSampling)
    s.sampling = read_settings<SamplingParams>(r, kTagSampling, "sampler", kSamplingPayloadBytes,
                                               validate_sampling_params, [&](SamplingParams& p) {
                                                 p.temperature = r.f64();
                                                 p.top_k = r.i32();
                                                 r.u32();
                                                 p.top_p = r.f64();
                                                 p.min_p = r.f64();
                                                 p.seed = r.u64();
                                               });
  if (flags & kFlagPenalties) {
    const PenaltyParams p = read_settings<PenaltyParams>(r, kTagPenalties, "penalties", kPenaltiesPayloadBytes,
                                                         validate_penalty_params, [&](PenaltyParams& q) {
                                                           q.repetition = r.f64();
                                                           q.frequency = r.f64();
                                                           q.presence = r.f64();
                                                           q.last_n = r.i32();
                                                           r.u32();
                                                         });
    if (!s.sampling) s.sampling = SamplingParams{};
    s.sampling->penalties = p;
  }
  if (flags & kFlagLogits) {
    r.open(kTagLogits, "logits");
    r.expect_length(4 * uint64_t{g.vocab_size}, "logits");
    r.floats(s.last_logits, g.vocab_size);
  }

  const uint64_t positions = static_cast<uint64_t>(s.sequence.positions);
  s.sequence.layers = read_layer_sections(r, g, positions);
  if (r.pos() != size - kChecksumBytes) r.malformed("unexpected bytes after the last section");
  const uint32_t declared_sections = header.sections();
  if (declared_sections != r.sections())
    r.malformed("header counts " + std::to_string(declared_sections) + " sections, the file has " +
                std::to_string(r.sections()));
  return s;
}

}  // namespace k3
