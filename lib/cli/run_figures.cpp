#include "cli/run_figures.h"

#include <algorithm>
#include <cstdio>

#include "common/byte_format.h"
#include "common/json_writer.h"
#include "common/rate_format.h"
#include "common/tool_main.h"

namespace k3 {

namespace {

struct Derived {
  double trunk_per_token = 0, expert_per_token = 0, hit_rate = 0, io_wait = 0, compute = 0, gbps = 0, s_per_token = 0;
  double io_busy = 0;           // share of the wall time with a read in progress
  double decode_per_token = 0;  // CPU seconds decoding compressed trunk blocks
};

// `tokens`: the ids those seconds generated (s/token and the compressed
// trunk's CPU seconds are per generated token, common/rate_format.h).
Derived derive(const StreamStats& a, const StreamStats& b, uint64_t steps, double seconds, uint64_t tokens = 0) {
  Derived d;
  const double n = steps ? static_cast<double>(steps) : 1.0;
  d.trunk_per_token = (b.trunk_bytes - a.trunk_bytes) / n;
  d.expert_per_token = (b.expert_bytes - a.expert_bytes) / n;
  const uint64_t req = b.experts_requested - a.experts_requested;
  d.hit_rate = req ? static_cast<double>(b.experts_resident - a.experts_resident) / req : 0;
  d.io_wait = b.io_wait_seconds - a.io_wait_seconds;
  d.io_busy = seconds > 0 ? std::min(1.0, (b.io_busy_seconds - a.io_busy_seconds) / seconds) : 0;
  d.compute = seconds > d.io_wait ? seconds - d.io_wait : 0;
  const double bytes = static_cast<double>(b.trunk_bytes - a.trunk_bytes + b.expert_bytes - a.expert_bytes);
  d.gbps = seconds > 0 ? bytes / seconds / 1e9 : 0;
  const double per = tokens ? static_cast<double>(tokens) : n;
  d.s_per_token = (tokens || steps) ? seconds / per : 0;
  d.decode_per_token = (b.decode_seconds - a.decode_seconds) / per;
  return d;
}

// --expert-lookahead's counters between two snapshots.
ExpertGuessStats guess_delta(const StreamStats& a, const StreamStats& b) {
  ExpertGuessStats d;
  d.layers = b.guess.layers - a.guess.layers;
  d.experts = b.guess.experts - a.guess.experts;
  d.used = b.guess.used - a.guess.used;
  d.reads = b.guess.reads - a.guess.reads;
  d.read_bytes = b.guess.read_bytes - a.guess.read_bytes;
  d.reads_used = b.guess.reads_used - a.guess.reads_used;
  d.wasted_reads = b.guess.wasted_reads - a.guess.wasted_reads;
  d.wasted_bytes = b.guess.wasted_bytes - a.guess.wasted_bytes;
  d.cancelled_reads = b.guess.cancelled_reads - a.guess.cancelled_reads;
  d.cancelled_bytes = b.guess.cancelled_bytes - a.guess.cancelled_bytes;
  return d;
}

// Where the disk was busy around the MoE layers, between two snapshots.
ExpertPhaseStats phase_delta(const StreamStats& a, const StreamStats& b) {
  ExpertPhaseStats d;
  d.experts_seconds = b.phases.experts_seconds - a.phases.experts_seconds;
  d.experts_busy_seconds = b.phases.experts_busy_seconds - a.phases.experts_busy_seconds;
  d.between_seconds = b.phases.between_seconds - a.phases.between_seconds;
  d.between_busy_seconds = b.phases.between_busy_seconds - a.phases.between_busy_seconds;
  d.boundary_seconds = b.phases.boundary_seconds - a.phases.boundary_seconds;
  d.boundary_busy_seconds = b.phases.boundary_busy_seconds - a.phases.boundary_busy_seconds;
  return d;
}

double share(double part, double whole) { return whole > 0 ? std::min(1.0, std::max(0.0, part / whole)) : 0.0; }

// The prefill's scratch files, exact counts: its spill file (where the
// chunk's block states went to disk) and the sequence state lent to the chunk
// (its layers but the running one's in a file).
void prefill_file_counts(JsonWriter& w, const ModelCounters& m) {
  if (m.spill_written_bytes > 0)
    w.key("spill_written_bytes").value(m.spill_written_bytes).key("spill_read_bytes").value(m.spill_read_bytes);
  if (m.state_loan_written_bytes > 0)
    w.key("state_loan_written_bytes")
        .value(m.state_loan_written_bytes)
        .key("state_loan_read_bytes")
        .value(m.state_loan_read_bytes);
}

}  // namespace

std::string figures_text(const RunFigures& f) {
  const Derived pre = derive(f.at_start, f.after_prefill, 1, f.prefill_seconds);
  const Derived dec = derive(f.after_prefill, f.at_end, f.decode_steps, f.decode_seconds, f.generated);
  char buf[1024];
  std::string o;
  std::snprintf(buf, sizeof buf,
                "%s: prefill of %llu tokens: %.3f s, read %s trunk + %s experts, resident expert hit rate "
                "%.1f%%, I/O wait %.3f s, %.2f GB/s\n",
                tool_name(), (unsigned long long)f.prompt_tokens, f.prefill_seconds,
                format_bytes((uint64_t)pre.trunk_per_token).c_str(),
                format_bytes((uint64_t)pre.expert_per_token).c_str(), 100 * pre.hit_rate, pre.io_wait, pre.gbps);
  o += buf;
  if (f.decode_steps) {
    std::snprintf(buf, sizeof buf,
                  "%s: decode: %llu steps, %s, per step %s trunk + %s experts read, resident "
                  "expert hit rate %.1f%%, compute %.3f s vs I/O wait %.3f s, %.2f GB/s, disk busy %.0f%%\n",
                  tool_name(), (unsigned long long)f.decode_steps,
                  seconds_per_token(f.decode_seconds, static_cast<int64_t>(f.generated)).c_str(),
                  format_bytes((uint64_t)dec.trunk_per_token).c_str(),
                  format_bytes((uint64_t)dec.expert_per_token).c_str(), 100 * dec.hit_rate, dec.compute, dec.io_wait,
                  dec.gbps, 100 * dec.io_busy);
    o += buf;
    const ExpertPhaseStats ph = phase_delta(f.after_prefill, f.at_end);
    if (ph.experts_seconds > 0) {
      std::snprintf(buf, sizeof buf,
                    "%s: decode disk busy by phase: MoE expert reads %.0f%% of %.3f s, between MoE layers %.0f%% of "
                    "%.3f s, across the token boundary %.0f%% of %.3f s\n",
                    tool_name(), 100 * share(ph.experts_busy_seconds, ph.experts_seconds), ph.experts_seconds,
                    100 * share(ph.between_busy_seconds, ph.between_seconds), ph.between_seconds,
                    100 * share(ph.boundary_busy_seconds, ph.boundary_seconds), ph.boundary_seconds);
      o += buf;
    }
    if (dec.decode_per_token > 0) {
      std::snprintf(buf, sizeof buf, "%s: compressed trunk: %s CPU s/token decoding on the I/O threads\n", tool_name(),
                    three_digits(dec.decode_per_token).c_str());
      o += buf;
    }
  }
  const ExpertGuessStats g = guess_delta(f.at_start, f.at_end);
  if (g.layers) {
    std::snprintf(buf, sizeof buf,
                  "%s: expert lookahead: %llu experts guessed in %llu layers, %.1f%% right; %llu read (%s), "
                  "%llu of them used, %llu evicted unused (%s wasted), %llu cancelled unread (%s)\n",
                  tool_name(), (unsigned long long)g.experts, (unsigned long long)g.layers,
                  g.experts ? 100.0 * g.used / g.experts : 0.0, (unsigned long long)g.reads,
                  format_bytes(g.read_bytes).c_str(), (unsigned long long)g.reads_used,
                  (unsigned long long)g.wasted_reads, format_bytes(g.wasted_bytes).c_str(),
                  (unsigned long long)g.cancelled_reads, format_bytes(g.cancelled_bytes).c_str());
    o += buf;
  }
  std::snprintf(buf, sizeof buf, "%s: peak RSS %s (forecast %s)%s\n", tool_name(),
                format_bytes(f.peak_rss_bytes).c_str(), format_bytes(f.forecast_peak_rss).c_str(),
                f.direct_io ? "" : "; reads went through the page cache");
  o += buf;
  return o;
}

std::string stats_json(const RunFigures& f, const GenerationCounters& c, const ModelCounters& m, const RunInfo& run) {
  const Derived pre = derive(f.at_start, f.after_prefill, 1, f.prefill_seconds);
  const Derived dec = derive(f.after_prefill, f.at_end, f.decode_steps, f.decode_seconds, f.generated);
  const double gen = static_cast<double>(c.generated);
  JsonWriter w(2);
  w.begin_object();
  w.key("prompt_tokens").value(f.prompt_tokens);
  w.key("decode_steps").value(f.decode_steps);
  w.key("streaming").value(f.streaming);
  w.key("load_bytes").value(f.load_bytes);
  w.key("load_seconds").fixed(f.load_seconds, 6);
  // Without streaming nothing is read while running: the byte, hit-rate and
  // I/O figures are left out rather than written as zeros.
  w.key("prefill").inline_next().begin_object().key("seconds").fixed(f.prefill_seconds, 6);
  // Layer-major prefill: one read of the weights per chunk of this many tokens.
  w.key("tokens_per_read").value(m.tokens_per_read).key("weight_reads").value(c.weight_passes - c.generate_passes);
  prefill_file_counts(w, m);
  if (f.streaming) {
    w.key("trunk_bytes").fixed(pre.trunk_per_token, 0).key("expert_bytes").fixed(pre.expert_per_token, 0);
    w.key("expert_hit_rate").fixed(pre.hit_rate, 6).key("io_wait_seconds").fixed(pre.io_wait, 6);
    w.key("compute_seconds").fixed(pre.compute, 6).key("achieved_gbps").fixed(pre.gbps, 4);
    w.key("io_busy_share").fixed(pre.io_busy, 4);
  }
  w.end_object();
  w.key("decode").inline_next().begin_object().key("seconds").fixed(f.decode_seconds, 6);
  w.key("s_per_token").fixed(dec.s_per_token, 6);
  if (f.streaming) {
    w.key("trunk_bytes_per_token")
        .fixed(dec.trunk_per_token, 0)
        .key("expert_bytes_per_token")
        .fixed(dec.expert_per_token, 0);
    w.key("expert_hit_rate").fixed(dec.hit_rate, 6).key("io_wait_seconds").fixed(dec.io_wait, 6);
    w.key("compute_seconds").fixed(dec.compute, 6).key("achieved_gbps").fixed(dec.gbps, 4);
    w.key("io_busy_share").fixed(dec.io_busy, 4).key("decode_cpu_seconds_per_token").fixed(dec.decode_per_token, 6);
    // Where the disk idled: seconds of each phase around the MoE layers and
    // the share of them with a read in progress (ExpertPhaseStats).
    const ExpertPhaseStats ph = phase_delta(f.after_prefill, f.at_end);
    w.key("io_busy_by_phase").inline_next().begin_object();
    w.key("experts_seconds").fixed(ph.experts_seconds, 6);
    w.key("experts_busy_share").fixed(share(ph.experts_busy_seconds, ph.experts_seconds), 4);
    w.key("between_layers_seconds").fixed(ph.between_seconds, 6);
    w.key("between_layers_busy_share").fixed(share(ph.between_busy_seconds, ph.between_seconds), 4);
    w.key("token_boundary_seconds").fixed(ph.boundary_seconds, 6);
    w.key("token_boundary_busy_share").fixed(share(ph.boundary_busy_seconds, ph.boundary_seconds), 4);
    w.end_object();
  }
  w.end_object();
  w.key("peak_rss_bytes").value(f.peak_rss_bytes);
  if (f.streaming) {
    w.key("forecast_peak_rss_bytes").value(f.forecast_peak_rss);
    w.key("direct_io").value(f.direct_io);
  }
  if (f.streaming) {
    // The whole run's guesses (--expert-lookahead; zeros without it). A
    // wasted read is one evicted before any layer asked for it; a cancelled
    // one was dropped unread when its layer routed without it.
    const ExpertGuessStats g = guess_delta(f.at_start, f.at_end);
    w.key("expert_lookahead").inline_next().begin_object();
    w.key("guessed_layers").value(g.layers).key("guessed_experts").value(g.experts).key("guessed_used").value(g.used);
    w.key("guess_hit_rate").fixed(g.experts ? static_cast<double>(g.used) / static_cast<double>(g.experts) : 0.0, 6);
    w.key("reads").value(g.reads).key("read_bytes").value(g.read_bytes).key("reads_used").value(g.reads_used);
    w.key("wasted_reads").value(g.wasted_reads).key("wasted_bytes").value(g.wasted_bytes);
    w.key("cancelled_reads").value(g.cancelled_reads).key("cancelled_bytes").value(g.cancelled_bytes);
    w.end_object();
  }
  w.key("generation").inline_next().begin_object();
  w.key("weight_passes").value(c.generate_passes).key("generated_tokens").value(c.generated);
  w.key("tokens_per_pass").fixed(c.generate_passes > 0 ? gen / static_cast<double>(c.generate_passes) : 0.0, 6);
  w.key("drafts_proposed").value(c.drafts_proposed).key("drafts_accepted").value(c.drafts_accepted);
  if (c.constraint_masks > 0) {  // --json-schema: the masks over the vocabulary
    w.key("constraint_masks").value(c.constraint_masks);
    w.key("constraint_mask_ms_mean").fixed(c.constraint_seconds * 1e3 / static_cast<double>(c.constraint_masks), 4);
    w.key("constraint_mask_ms_max").fixed(c.constraint_max_seconds * 1e3, 4);
  }
  if (f.streaming) {
    const StreamStats &a = f.after_prefill, &b = f.at_end;
    w.key("trunk_bytes_per_generated_token")
        .fixed(gen > 0 ? static_cast<double>(b.trunk_bytes - a.trunk_bytes) / gen : 0.0, 0);
    w.key("expert_bytes_per_generated_token")
        .fixed(gen > 0 ? static_cast<double>(b.expert_bytes - a.expert_bytes) / gen : 0.0, 0);
  }
  w.key("passes_by_rows").begin_array();
  for (size_t r = 0; r < m.passes_by_rows.size(); ++r) {
    const PassAccount& p = m.passes_by_rows[r];
    if (p.passes == 0) continue;
    const double n = static_cast<double>(p.passes);
    w.begin_object().key("rows").value(r).key("passes").value(p.passes);
    if (f.streaming) {
      w.key("trunk_bytes_per_pass").fixed(static_cast<double>(p.trunk_bytes) / n, 0);
      w.key("expert_bytes_per_pass").fixed(static_cast<double>(p.expert_bytes) / n, 0);
      w.key("experts_per_pass").fixed(static_cast<double>(p.experts) / n, 3);
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.key("run").inline_next().begin_object();
  w.key("version").value(run.version).key("threads").value(run.threads).key("io_threads").value(run.io_threads);
  w.key("preset").value(run.preset).key("trunk_budget_bytes").value(run.trunk_budget);
  w.key("cache_budget_bytes").value(run.cache_budget).key("generated_tokens").value(c.generated);
  if (f.streaming) {
    w.key("expert_cache_policy").value(run.expert_cache_policy);
    w.key("expert_lookahead").value(run.expert_lookahead);
  }
  w.key("wall_seconds")
      .begin_object()
      .key("load")
      .fixed(run.load_seconds, 6)
      .key("prefill")
      .fixed(c.prefill_seconds, 6);
  w.key("decode").fixed(c.decode_seconds, 6).key("total").fixed(run.total_seconds, 6).end_object();
  w.end_object();
  w.end_object();
  return w.take() + "\n";
}

std::string device_stats_member(const ModelCounters& m) {
  if (!m.device) return {};
  JsonWriter w;
  w.begin_object().key("gpu").begin_object();
  w.key("plan_bytes").value(static_cast<unsigned long long>(m.device_plan_bytes));
  w.key("products").value(static_cast<unsigned long long>(m.device_counters.products));
  w.key("upload_bytes").value(static_cast<unsigned long long>(m.device_counters.upload_bytes));
  w.key("peak_bytes").value(static_cast<unsigned long long>(m.device_counters.peak_bytes));
  // The double-buffered staging (gpu/gpu_backend.h).
  w.key("dispatches").value(static_cast<unsigned long long>(m.device_counters.dispatches));
  w.key("overlapped_upload_bytes").value(static_cast<unsigned long long>(m.device_counters.overlapped_upload_bytes));
  w.key("busy_waits").value(static_cast<unsigned long long>(m.device_counters.busy_waits));
  w.key("rms_norms").value(static_cast<unsigned long long>(m.device_counters.rms_norms));
  w.key("situ_steps").value(static_cast<unsigned long long>(m.device_counters.situ_steps));
  w.key("attention").value(static_cast<unsigned long long>(m.device_counters.attention));
  w.key("kda_recurrences").value(static_cast<unsigned long long>(m.device_counters.kda_recurrences));
  // MLA's latent caches kept on the device between the chunk's passes.
  w.key("latent_upload_bytes").value(static_cast<unsigned long long>(m.device_counters.latent_upload_bytes));
  w.key("latent_kept_bytes").value(static_cast<unsigned long long>(m.device_counters.latent_kept_bytes));
  // Where staged weights were read from, and the slices copied there.
  w.key("staging").value(m.device_counters.device_local_staging ? "device_local" : "host_visible");
  w.key("device_local_copies").value(static_cast<unsigned long long>(m.device_counters.device_local_copies));
  w.key("kda_convs").value(static_cast<unsigned long long>(m.device_counters.kda_convs));
  w.key("attn_res_mixes").value(static_cast<unsigned long long>(m.device_counters.attn_res_mixes));
  // The chunk's AttnRes block states kept on the device: copied once each.
  w.key("block_upload_bytes").value(static_cast<unsigned long long>(m.device_counters.block_upload_bytes));
  w.key("block_kept_bytes").value(static_cast<unsigned long long>(m.device_counters.block_kept_bytes));
  w.key("kda_norms").value(static_cast<unsigned long long>(m.device_counters.kda_norms));
  w.key("kda_gates").value(static_cast<unsigned long long>(m.device_counters.kda_gates));
  w.key("kda_outputs").value(static_cast<unsigned long long>(m.device_counters.kda_outputs));
  w.key("weight_upload_bytes").value(static_cast<unsigned long long>(m.device_counters.weight_upload_bytes));
  w.key("weight_kept_bytes").value(static_cast<unsigned long long>(m.device_counters.weight_kept_bytes));
  w.key("weight_reused_bytes").value(static_cast<unsigned long long>(m.device_counters.weight_reused_bytes));
  // The KDA states kept on the device across a layer's sub-batches.
  w.key("kda_state_upload_bytes").value(static_cast<unsigned long long>(m.device_counters.kda_state_upload_bytes));
  w.key("kda_state_download_bytes").value(static_cast<unsigned long long>(m.device_counters.kda_state_download_bytes));
  // Copied into the device-local twins of the kept block states and latent caches.
  w.key("block_twin_bytes").value(static_cast<unsigned long long>(m.device_counters.block_twin_bytes));
  w.key("latent_twin_bytes").value(static_cast<unsigned long long>(m.device_counters.latent_twin_bytes));
  w.key("row_twin_bytes").value(static_cast<unsigned long long>(m.device_counters.row_twin_bytes));
  w.end_object().end_object();
  // The member alone, without the braces of the object it was written in.
  const std::string object = w.take();
  return "  " + object.substr(1, object.size() - 2);
}

std::string expert_cache_loan_member(const ModelCounters& m) {
  if (!m.streaming || m.cache_lent_bytes == 0) return {};
  const StreamStats& s = m.now;
  JsonWriter w;
  w.begin_object().key("expert_cache_loan").inline_next().begin_object();
  w.key("planned_lent_bytes").value(m.cache_lent_bytes).key("lent_bytes").value(s.cache_lent_bytes);
  w.key("lends").value(s.cache_lends).key("reclaims").value(s.cache_reclaims);
  w.key("slots_lent_at_end").value(s.cache_lent_slots);
  w.end_object().end_object();
  const std::string object = w.take();
  return "  " + object.substr(1, object.size() - 2);
}

std::string layer_hold_member(const ModelCounters& m) {
  if (!m.streaming || m.hold_bytes == 0) return {};
  const StreamStats& s = m.now;
  JsonWriter w;
  w.begin_object().key("layer_hold").inline_next().begin_object();
  w.key("planned_hold_bytes").value(m.hold_bytes).key("planned_pinned_lent_bytes").value(m.pinned_lent_bytes);
  w.key("held_layers").value(s.held_layers).key("held_bytes").value(s.held_bytes);
  w.key("repinned_bytes").value(s.repinned_bytes).key("dropped_ahead_bytes").value(s.dropped_ahead_bytes);
  w.key("skipped_layers").value(s.skipped_layers);
  w.end_object().end_object();
  const std::string object = w.take();
  return "  " + object.substr(1, object.size() - 2);
}

}  // namespace k3
