// forecast/compression: whether a compressed trunk (k3-pack --compress)
// makes this machine faster. Per token the streamed trunk is read at the
// disk's bandwidth D; compressed, S = ratio x L bytes are read and L bytes
// decoded at R per core on the machine's cores, overlapped with the reads:
//   uncompressed:  (L + E) / D
//   compressed:    max((S + E) / D, L / (R x cores))   disk-bound or decode-bound
// where E is the routed-expert bytes read (never compressed).
#include <algorithm>
#include <cstdio>
#include <string>

#include "common/byte_format.h"
#include "doctor/checks.h"

namespace k3::doctor {

void add_compression_check(Report& r, const PresetForecast& f, const Bandwidth& bw,
                           const std::optional<DecodeProbe>& probe, const TrunkInfo* trunk, int cores) {
  Check& k = r.add("forecast", "compression");
  const double L = double(f.plan.streamed_decoded_bytes), E = double(f.expert_read), D = bw.bytes_per_s;
  cores = std::max(1, cores);
  double ratio = probe ? probe->ratio : 0.68;
  std::string ratio_source = probe ? "Gaussian weights through the trunk codec (published measurements on trained "
                                     "models: 67-70%)"
                                   : "ASSUMED from published measurements on trained models (67-70%)";
  if (trunk && trunk->compressed && trunk->layer_bytes) {
    ratio = double(trunk->layer_stored_bytes) / double(trunk->layer_bytes);
    ratio_source = "the compressed trunk given with --trunk";
  }
  const double S = L * ratio;
  k.details.set("preset", f.preset.name)
      .set("trunk_decoded_bytes_per_token", L)
      .set("ratio", ratio)
      .set("ratio_source", ratio_source)
      .set("trunk_compressed_bytes_per_token", S)
      .set("cores", cores)
      .set("trunk_is_compressed", trunk && trunk->compressed);
  if (L <= 0) {
    k.status = Status::kOk;
    k.summary = "nothing streams with --preset " + f.preset.name + ": compression would only save disk space";
    k.advice = "pack with or without --compress; the pinned trunk is decoded once at start";
    return;
  }
  if (!probe || probe->bytes_per_s_per_core <= 0 || D <= 0) {
    k.status = Status::kWarn;
    k.summary = "decode speed not measured (--no-probe): cannot tell whether --compress pays here";
    k.advice = "run k3-doctor without --no-probe";
    return;
  }
  const double R = probe->bytes_per_s_per_core;
  const double t_raw = (L + E) / D, t_disk = (S + E) / D, t_decode = L / (R * cores);
  const double t_comp = std::max(t_disk, t_decode);
  const bool disk_bound = t_disk >= t_decode;
  // Decode throughput (all cores) at which reading, not decoding, sets the pace.
  const double needed = L * D / std::max(1.0, S + E);
  r.arithmetic.push_back("compressed trunk with --preset " + f.preset.name + " (" + ratio_source + "):");
  r.arithmetic.push_back("  trunk per token = " + format_bytes_of(L) + " decoded, " + format_bytes_of(S) + " stored (" +
                         format_figure("%.1f%%", 100 * ratio) + ")");
  r.arithmetic.push_back("  decode          = " + format_bytes_of(R) + "/s per core x " + std::to_string(cores) +
                         " cores = " + format_bytes_of(R * cores) + "/s (stays disk-bound above " +
                         format_bytes_of(needed) + "/s)");
  r.arithmetic.push_back("  uncompressed    = " + format_bytes_of(L + E) + " / " + format_bytes_of(D) +
                         "/s = " + format_figure("%.2f s", t_raw));
  r.arithmetic.push_back("  compressed      = max(" + format_bytes_of(S + E) + " / " + format_bytes_of(D) + "/s, " +
                         format_bytes_of(L) + " / " + format_bytes_of(R * cores) + "/s) = " +
                         format_figure("%.2f s", t_comp) + (disk_bound ? " (disk-bound)" : " (decode-bound)"));
  const bool pays = t_comp < 0.97 * t_raw;
  k.status = (trunk && trunk->compressed && !pays) ? Status::kWarn : Status::kOk;
  k.summary = std::string(disk_bound ? "disk-bound" : "decode-bound") +
              " with a compressed trunk: " + format_figure("%.2f", t_comp) + " s/token of reads vs " +
              format_figure("%.2f", t_raw) + " s uncompressed (decode " + format_bytes_of(R) + "/s per core, trunk " +
              format_figure("%.0f%%", 100 * ratio) + " of its size)";
  k.advice = pays ? "pack with k3-pack --compress: fewer bytes per token and the same output"
                  : "pack without --compress: decoding would cost more than the bytes it saves on this machine";
  k.details.set("decode_bytes_per_s_per_core", R)
      .set("seconds_uncompressed", t_raw)
      .set("seconds_compressed", t_comp)
      .set("disk_bound", disk_bound)
      .set("decode_bytes_per_s_needed", needed)
      .set("recommend_compress", pays);
}

}  // namespace k3::doctor
