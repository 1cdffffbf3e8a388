#include "state/state_file_summary.h"

#include "state/state_file.h"
#include "state/state_reader.h"

namespace k3 {

using namespace state_reader;

// The leading sections, read with the whole reader's checks (state_reader.h)
// but not the checksum: every length is still bounded by the file's size.
StateFileSummary read_state_summary(const std::string& path) {
  File f = open_state(path);
  StateFileSummary s;
  s.file_bytes = f.size();
  read_header(f, s.file_bytes, path);
  SectionReader r(f, s.file_bytes - kChecksumBytes);
  s.model = read_model(r);
  s.geometry = read_geometry(r);
  s.ids = read_ids(r, kTagTokens, "token history", s.geometry.vocab_size);
  const std::vector<int32_t> pending = read_ids(r, kTagPending, "pending ids", s.geometry.vocab_size);
  if (pending.size() > kMaxPendingIds)
    r.malformed(std::to_string(pending.size()) + " pending ids; a saved state holds at most " +
                std::to_string(kMaxPendingIds));
  s.ids.insert(s.ids.end(), pending.begin(), pending.end());
  return s;
}

}  // namespace k3
