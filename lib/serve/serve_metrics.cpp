#include "serve/serve_metrics.h"

#include <cstdio>

namespace k3::serve {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  char line[96];
  std::snprintf(line, sizeof line, "%.17g", value);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + line + "\n";
}

// A metric that is one counter's value as it stands.
void metric(std::string& out, const char* name, const char* type, const char* help,
            const std::atomic<uint64_t>& value) {
  metric(out, name, type, help, static_cast<double>(value.load()));
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
  metric(out, "k3_prompt_tokens_total", "counter", "Prompt ids of requests.", prompt_tokens);
  metric(out, "k3_cached_tokens_total", "counter", "Prompt ids continued from kept conversation states.",
         cached_tokens);
  metric(out, "k3_generated_tokens_total", "counter", "Ids generated.", tokens);
  metric(out, "k3_weight_passes_total", "counter", "Weight passes (each shared by every busy slot).", weight_passes);
  metric(out, "k3_prefill_passes_total", "counter", "Weight passes that evaluated prompt ids (with any decode rows).",
         prefill_passes);
  metric(out, "k3_decode_seconds_total", "counter", "Seconds spent in decode passes.", decode_s);
  metric(out, "k3_prefill_seconds_total", "counter", "Seconds spent evaluating prompts.",
         static_cast<double>(prefill_nanoseconds.load()) * 1e-9);
  metric(out, "k3_seconds_per_token", "gauge", "Decode seconds per generated id, all slots together.",
         tokens > 0 ? decode_s / tokens : 0);
  metric(out, "k3_bytes_read_total", "counter", "Weight bytes read from storage while serving.", bytes_read);
  metric(out, "k3_bytes_read_per_token", "gauge", "Weight bytes read per generated id.",
         tokens > 0 ? static_cast<double>(bytes_read.load()) / tokens : 0);
  const double asked = static_cast<double>(experts_requested.load());
  metric(out, "k3_expert_hit_rate", "gauge", "Routed experts already resident when asked for (0..1).",
         asked > 0 ? static_cast<double>(experts_resident.load()) / asked : 0);
  metric(out, "k3_slots_busy", "gauge", "Sequences being generated.", slots_busy);
  metric(out, "k3_queue_length", "gauge", "Requests waiting for a slot.", queue_length);
  metric(out, "k3_kept_states_ram", "gauge", "Conversation states kept in RAM.", kept_states_ram);
  metric(out, "k3_kept_states_disk", "gauge", "Conversation states spilled to --cache-dir.", kept_states_disk);
  metric(out, "k3_kept_bytes_ram", "gauge", "Bytes of conversation states kept in RAM.", kept_bytes_ram);
  const double masks = static_cast<double>(constraint_masks.load());
  metric(out, "k3_constraint_masks_total", "counter", "Token masks computed for structured output.", masks);
  metric(out, "k3_constraint_mask_seconds_per_token", "gauge", "Mean seconds per structured-output token mask.",
         masks > 0 ? static_cast<double>(constraint_mask_nanoseconds.load()) * 1e-9 / masks : 0);
  if (draft) {
    metric(out, "k3_draft_passes_total", "counter", "Draft model passes (--draft).", draft_passes);
    metric(out, "k3_drafts_proposed_total", "counter", "Ids the draft model proposed (7 per pass).", drafts_proposed);
    metric(out, "k3_drafts_verified_total", "counter", "Of the proposed ids, those verified in a weight pass.",
           drafts_verified);
    metric(out, "k3_drafts_accepted_total", "counter", "Of the verified ids, those kept (the model's own choice).",
           drafts_accepted);
  }
  return out;
}

}  // namespace k3::serve
