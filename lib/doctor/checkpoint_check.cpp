#include <string>

#include "checkpoint/checkpoint.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "doctor/checks.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "planning/preset_plan.h"
#include "trunk/layout.h"
#include "trunk/plan.h"

namespace k3::doctor {

namespace {

// How a trunk compares with the checkpoint: its name in --json, and for the
// trunks k3-forward would refuse what the check says and what to do.
struct MatchWords {
  TrunkMatch match;
  const char* name;
  const char* refusal;  // nullptr: not refused
  const char* advice;
};
constexpr MatchWords kMatchWords[] = {
    {TrunkMatch::kUnknown, "unknown", nullptr, nullptr},
    {TrunkMatch::kMatches, "matches", nullptr, nullptr},
    {TrunkMatch::kDiffers, "differs", "was packed from another checkpoint",
     "pack the trunk again from this checkpoint (k3-pack MODEL_DIR TRUNK_DIR)"},
    {TrunkMatch::kStale, "stale", "may be stale",
     "if the weights are unchanged, k3-pack --refresh TRUNK_DIR MODEL_DIR re-checks the trunk tensors of the changed "
     "shards and records them; else pack it again (k3-pack MODEL_DIR TRUNK_DIR)"},
    {TrunkMatch::kDamaged, "damaged", "is damaged", "pack the trunk again (k3-pack MODEL_DIR TRUNK_DIR)"},
};
const MatchWords& match_words(TrunkMatch m) {
  for (const MatchWords& w : kMatchWords)
    if (w.match == m) return w;
  return kMatchWords[0];
}
// Sizes for the model k3 exists for, when the one given cannot be read.
void use_k3_reference(CheckpointFacts& c, const std::string& source) {
  const ModelConfig k3 = k3_reference_config();
  c.bytes = model_bytes_from_config(k3);
  c.plan_model = plan_model_for_config(k3);
  c.bytes_source = source;
}
}  // namespace

CheckpointFacts gather_checkpoint(const std::string& model_dir) {
  CheckpointFacts c;
  c.given = !model_dir.empty();
  if (!c.given) {
    use_k3_reference(c, "the real Kimi-K3 geometry (SPEC section 1)");
    return c;
  }
  try {
    // Opening parses the index and every shard header, and checks that each
    // tensor lies inside its file: the quick form of a verify.
    Checkpoint ck = Checkpoint::open(model_dir);
    c.opened = true;
    c.shards = ck.shards().size();
    c.tensors = ck.tensor_count();
    c.index_total = ck.index_total_size();
    for (const ShardInfo& s : ck.shards()) c.shard_bytes += s.file_size;
    try {
      c.fingerprint = fingerprint_checkpoint(ck);
    } catch (const Error& e) {
      c.fingerprint_error = e.what();
    }
    try {
      // The config reader refuses what the engine does not implement, and
      // every tensor's dtype and shape must be what the config implies.
      ModelConfig config = load_model_config(model_dir);
      validate_checkpoint(config, ck);
      c.plan_model = plan_model_for_checkpoint(config, ck);
      c.expected_trunk = layout_trunk(expected_tensors(config));
      c.config_loaded = true;
      c.bytes = model_bytes_from_config(config);
      c.bytes_source = "config.json of " + model_dir;
    } catch (const Error& e) {
      c.config_error = e.what();
    }
  } catch (const Error& e) {
    c.error = e.what();
  }
  if (!c.config_loaded) {
    // The model's own sizes are unknown: forecast for the model k3 exists for, and say so.
    use_k3_reference(c, "the real Kimi-K3 geometry (SPEC section 1; " + model_dir + " could not be read)");
  }
  return c;
}

namespace {

// The index and the shards' headers: every tensor inside its file.
void add_index_check(Report& r, const CheckpointFacts& c) {
  Check& k = r.add("checkpoint", "index");
  if (!c.given) {
    k.status = Status::kWarn;
    k.summary = "no --model given: only the machine was checked";
    k.advice = "pass --model DIR (the downloaded checkpoint) to check it too";
  } else if (!c.opened) {
    k.status = Status::kFail;
    k.summary = c.error;
    k.advice = "download the missing or damaged files again (k3-fetch-verify), then re-run k3-doctor";
  } else if (c.index_total > c.shard_bytes) {
    k.status = Status::kFail;
    k.summary = "the index records " + format_bytes(c.index_total) + " of tensors but the " + std::to_string(c.shards) +
                " shard files hold only " + format_bytes(c.shard_bytes);
    k.advice = "some shards are truncated: download them again, then run k3-fetch-verify verify";
  } else {
    k.status = Status::kOk;
    k.summary = std::to_string(c.shards) + " shards, " + std::to_string(c.tensors) + " tensors, " +
                format_bytes(c.shard_bytes) +
                " of shard files; every header parses and every tensor lies inside its file";
    k.advice = "for a full check of the bytes run k3-fetch-verify verify";
  }
  k.details.set("given", c.given)
      .set("opened", c.opened)
      .set("error", c.error)
      .set("shards", static_cast<uint64_t>(c.shards))
      .set("tensors", static_cast<uint64_t>(c.tensors))
      .set("shard_bytes", c.shard_bytes)
      .set("index_total_size", c.index_total);
}

// config.json, and every tensor with the dtype and shape it implies.
void add_config_check(Report& r, const CheckpointFacts& c) {
  Check& k = r.add("checkpoint", "config");
  if (!c.opened) {
    k.status = c.given ? Status::kFail : Status::kWarn;
    k.summary = c.given ? "not read: the checkpoint did not open" : "no --model given";
    k.advice = "forecasts use the real Kimi-K3 geometry";
  } else if (!c.config_loaded) {
    k.status = Status::kFail;
    k.summary = c.config_error;
    k.advice = "k3-forward would refuse this model: fix or re-download config.json and the named tensor";
  } else {
    k.status = Status::kOk;
    k.summary = "config.json reads and every tensor has the dtype and shape it implies";
    k.advice = "forecasts below use this model's sizes";
  }
  k.details.set("loaded", c.config_loaded).set("error", c.config_error).set("sizes_from", c.bytes_source);
}

// The packed trunk: present, whole, and packed from this checkpoint.
void add_trunk_check(Report& r, const CheckpointFacts& c, const std::string& trunk_dir, const TrunkInfo* trunk) {
  Check& k = r.add("checkpoint", "trunk");
  if (trunk_dir.empty()) {
    k.status = Status::kWarn;
    k.summary = "no --trunk given";
    k.advice = "pack the trunk once with k3-pack and pass its directory with --trunk";
  } else if (!trunk || (!trunk->has_bin && !trunk->has_json)) {
    k.status = Status::kWarn;
    k.summary = "no trunk.bin or trunk.json in " + trunk_dir;
    k.advice = "pack it with k3-pack (about " + format_bytes(c.bytes.trunk()) + " of disk)";
  } else if (!trunk->has_bin || !trunk->has_json) {
    k.status = Status::kFail;
    k.summary = std::string("incomplete trunk in ") + trunk_dir + ": " + (trunk->has_bin ? "trunk.json" : "trunk.bin") +
                " is missing";
    k.advice = "k3-pack was interrupted or the files were moved: pack it again";
  } else if (const MatchWords& w = match_words(trunk->match); w.refusal) {
    k.status = Status::kFail;
    k.summary = "the trunk in " + trunk_dir + " " + w.refusal + ": " + trunk->match_reason;
    k.advice = std::string("k3-forward would refuse it: ") + w.advice;
  } else if (trunk->match == TrunkMatch::kUnknown) {
    k.status = Status::kWarn;
    k.summary = "trunk.bin (" + format_bytes(trunk->bin_bytes) + ") and trunk.json present in " + trunk_dir +
                "; not compared: " + trunk->match_reason;
    k.advice = "pass the checkpoint with --model to tell whether the trunk was packed from it";
  } else {
    k.status = Status::kOk;
    k.summary = "trunk.bin (" + format_bytes(trunk->bin_bytes) + ") and trunk.json in " + trunk_dir +
                " were packed from this checkpoint";
    k.advice = "ready to use with --trunk";
  }
  const char* match = trunk ? match_words(trunk->match).name : "none";
  k.details.set("dir", trunk_dir)
      .set("trunk_bin", trunk && trunk->has_bin)
      .set("trunk_json", trunk && trunk->has_json)
      .set("trunk_bin_bytes", trunk ? trunk->bin_bytes : uint64_t{0})
      .set("trunk_bin_recorded_bytes", trunk ? trunk->recorded_bin_bytes : uint64_t{0})
      .set("matches", !trunk || trunk->match == TrunkMatch::kUnknown ? JsonValue()
                                                                     : JsonValue(trunk->match == TrunkMatch::kMatches))
      .set("match", trunk && (trunk->has_bin && trunk->has_json) ? match : "none")
      .set("match_note", trunk ? trunk->match_reason : std::string());
}

}  // namespace

void add_checkpoint_checks(Report& r, const CheckpointFacts& c, const std::string& trunk_dir, const TrunkInfo* trunk) {
  add_index_check(r, c);
  add_config_check(r, c);
  add_trunk_check(r, c, trunk_dir, trunk);
}

}  // namespace k3::doctor
