#include "serve/serve_metrics.h"

#include <cstdio>

namespace k3::serve {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  char line[96];
  std::snprintf(line, sizeof line, "%.17g", value);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + line + "\n";
}

}  // namespace

void ServeMetrics::request_done(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

std::string ServeMetrics::prometheus_text() const {
  std::string out =
      "# HELP k3_requests_total HTTP requests answered, by endpoint and status.\n"
      "# TYPE k3_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, n] : requests_)
      out += "k3_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
             std::to_string(n) + "\n";
  }
  const double tokens = static_cast<double>(generated_tokens.load());
  const double decode_s = static_cast<double>(decode_nanoseconds.load()) * 1e-9;
  metric(out, "k3_prompt_tokens_total", "counter", "Prompt ids of requests.",
         static_cast<double>(prompt_tokens.load()));
  metric(out, "k3_cached_tokens_total", "counter", "Prompt ids continued from kept conversation states.",
         static_cast<double>(cached_tokens.load()));
  metric(out, "k3_generated_tokens_total", "counter", "Ids generated.", tokens);
  metric(out, "k3_weight_passes_total", "counter", "Weight passes (each shared by every busy slot).",
         static_cast<double>(weight_passes.load()));
  metric(out, "k3_prefill_passes_total", "counter", "Weight passes that evaluated prompt ids (with any decode rows).",
         static_cast<double>(prefill_passes.load()));
  metric(out, "k3_decode_seconds_total", "counter", "Seconds spent in decode passes.", decode_s);
  metric(out, "k3_prefill_seconds_total", "counter", "Seconds spent evaluating prompts.",
         static_cast<double>(prefill_nanoseconds.load()) * 1e-9);
  metric(out, "k3_seconds_per_token", "gauge", "Decode seconds per generated id, all slots together.",
         tokens > 0 ? decode_s / tokens : 0);
  metric(out, "k3_bytes_read_total", "counter", "Weight bytes read from storage while serving.",
         static_cast<double>(bytes_read.load()));
  metric(out, "k3_bytes_read_per_token", "gauge", "Weight bytes read per generated id.",
         tokens > 0 ? static_cast<double>(bytes_read.load()) / tokens : 0);
  const double asked = static_cast<double>(experts_requested.load());
  metric(out, "k3_expert_hit_rate", "gauge", "Routed experts already resident when asked for (0..1).",
         asked > 0 ? static_cast<double>(experts_resident.load()) / asked : 0);
  metric(out, "k3_slots_busy", "gauge", "Sequences being generated.", static_cast<double>(slots_busy.load()));
  metric(out, "k3_queue_length", "gauge", "Requests waiting for a slot.", static_cast<double>(queue_length.load()));
  metric(out, "k3_kept_states_ram", "gauge", "Conversation states kept in RAM.",
         static_cast<double>(kept_states_ram.load()));
  metric(out, "k3_kept_states_disk", "gauge", "Conversation states spilled to --cache-dir.",
         static_cast<double>(kept_states_disk.load()));
  metric(out, "k3_kept_bytes_ram", "gauge", "Bytes of conversation states kept in RAM.",
         static_cast<double>(kept_bytes_ram.load()));
  if (draft) {
    metric(out, "k3_draft_passes_total", "counter", "Draft model passes (--draft).",
           static_cast<double>(draft_passes.load()));
    metric(out, "k3_drafts_proposed_total", "counter", "Ids the draft model proposed (7 per pass).",
           static_cast<double>(drafts_proposed.load()));
    metric(out, "k3_drafts_verified_total", "counter", "Of the proposed ids, those verified in a weight pass.",
           static_cast<double>(drafts_verified.load()));
    metric(out, "k3_drafts_accepted_total", "counter", "Of the verified ids, those kept (the model's own choice).",
           static_cast<double>(drafts_accepted.load()));
  }
  return out;
}

}  // namespace k3::serve
