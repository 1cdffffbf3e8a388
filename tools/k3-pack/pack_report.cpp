#include "pack_report.h"

#include <cstdio>

#include "common/byte_format.h"
#include "common/error.h"

namespace k3 {

int report_trunk_refresh(const TrunkCheck& r, const std::string& trunk_dir, const std::string& model_dir) {
  for (const std::string& p : r.problems) std::fprintf(stderr, "k3-pack: %s\n", p.c_str());
  if (!r.problems.empty()) {
    std::fprintf(stderr, "k3-pack: %s: %zu problem(s); re-run k3-pack %s %s\n", trunk_dir.c_str(), r.problems.size(),
                 model_dir.c_str(), trunk_dir.c_str());
    return static_cast<int>(ExitCode::kVerify);
  }
  if (r.refreshed && !r.shards_changed.empty())
    std::fprintf(stderr,
                 "k3-pack: %s: %s; the trunk tensors (%s re-hashed) are unchanged: trunk.json now records "
                 "the shards as they are\n",
                 trunk_dir.c_str(), r.shards_changed.c_str(), format_bytes(r.bytes_checked).c_str());
  if (r.upgraded_from)
    std::fprintf(stderr,
                 "k3-pack: %s: trunk.json upgraded from format version %d to %d: the block hashes of %s of "
                 "trunk.bin (read once, unchanged) are recorded\n",
                 trunk_dir.c_str(), r.upgraded_from, kTrunkFormatVersion, format_bytes(r.bytes_read).c_str());
  if (!r.refreshed)
    std::fprintf(stderr, "k3-pack: %s already matches %s: nothing to refresh\n", trunk_dir.c_str(), model_dir.c_str());
  return 0;
}

int report_trunk_check_problems(const TrunkCheck& r, const std::string& trunk_dir, const std::string& model_dir) {
  for (const std::string& p : r.problems) std::fprintf(stderr, "k3-pack: %s\n", p.c_str());
  if (!r.problems.empty()) {
    if (r.problems.size() == 1 && !r.shards_changed.empty())
      std::fprintf(stderr,
                   "k3-pack: %s: every section matches the checkpoint, but the shards changed on disk since "
                   "the pack; record them with k3-pack --refresh %s %s\n",
                   trunk_dir.c_str(), trunk_dir.c_str(), model_dir.c_str());
    else
      std::fprintf(stderr, "k3-pack: %s: %zu problem(s); re-run k3-pack %s %s\n", trunk_dir.c_str(), r.problems.size(),
                   model_dir.c_str(), trunk_dir.c_str());
    return static_cast<int>(ExitCode::kVerify);
  }
  return 0;
}

}  // namespace k3
