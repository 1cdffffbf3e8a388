#include "trunk/source.h"

#include <algorithm>

namespace k3 {

const File& ShardFiles::at(uint32_t i) {
  if (!files_[i]) files_[i] = std::make_unique<File>(File::open_read(c_.shards()[i].path));
  return *files_[i];
}

void stream_section(const TrunkSection& s, const Checkpoint& c, ShardFiles& files, std::vector<uint8_t>& buf,
                    const std::function<void(uint64_t, const uint8_t*, uint64_t)>& sink) {
  static const std::vector<uint8_t> zeros(1 << 16, 0);
  uint64_t pos = s.offset;
  auto pad_to = [&](uint64_t end) {
    while (pos < end) {
      uint64_t n = std::min<uint64_t>(zeros.size(), end - pos);
      sink(pos - s.offset, zeros.data(), n);
      pos += n;
    }
  };
  for (const TrunkTensor& t : s.tensors) {
    pad_to(t.offset);
    const TensorLocation& loc = c.at(t.name);
    const File& f = files.at(loc.shard);
    for (uint64_t done = 0; done < t.nbytes; done += kChunk) {
      uint64_t n = std::min<uint64_t>(kChunk, t.nbytes - done);
      f.pread_exact(buf.data(), n, loc.info->offset + done);
      sink(pos - s.offset, buf.data(), n);
      pos += n;
    }
  }
  pad_to(s.offset + s.length);
}

NonFiniteScan trunk_float_scan(const TrunkLayout& t) {
  std::vector<NonFiniteScan::Span> spans;
  for (const TrunkSection& s : t.sections)
    for (const TrunkTensor& x : s.tensors) spans.push_back({x.name, x.dtype, x.offset, x.nbytes});
  return NonFiniteScan(std::move(spans));
}

}  // namespace k3
