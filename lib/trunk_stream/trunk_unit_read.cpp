#include <algorithm>

#include "common/clock.h"
#include "common/error.h"
#include "trunk/blocks.h"
#include "trunk_stream/trunk_stream_parts.h"

namespace k3 {

uint64_t TrunkStream::unit_buffer_bytes(const Unit& un) const {
  const Section& sec = *sections_[un.section];
  if (sec.ts->compressed && (un.kind == UnitKind::kMatrixRows || un.kind == UnitKind::kHeadRows)) {
    const RowSpan r = unit_rows(un);
    return decoded_rows(*sec.ts, r.begin, r.end).bytes;
  }
  if (sec.block_ok && (un.kind == UnitKind::kMatrixRows || un.kind == UnitKind::kHeadRows)) {
    // The first read of rows reads their trunk blocks whole, to check them
    // (blocks start 4096-aligned, so no page more than the blocks).
    const RowSpan r = unit_rows(un);
    const DecodedRows d = decoded_rows(*sec.ts, r.begin, r.end);
    return std::max(covering_read(stored_at(*sec.ts, d.base), d.bytes).length,
                    covering_read(stored_at(*sec.ts, r.begin), r.end - r.begin).length);
  }
  switch (un.kind) {
    case UnitKind::kSection: return sec.ts->length;
    case UnitKind::kHeld: return sec.rb.held_bytes;
    case UnitKind::kMatrixRows: {
      const StreamedMatrix& m = sec.rb.matrices[un.matrix];
      return covering_read(m.tensor->offset + un.first_row * m.row_bytes, un.rows * m.row_bytes).length;
    }
    case UnitKind::kHeadRows: {
      const uint64_t row = static_cast<uint64_t>(config_.hidden_size) * 2;
      return covering_read(lm_head_offset_ + un.first_row * row, un.rows * row).length;
    }
  }
  return 0;
}

TrunkStream::RowSpan TrunkStream::unit_rows(const Unit& un) const {
  const Section& sec = *sections_[un.section];
  uint64_t begin = 0, row = 0;
  if (un.kind == UnitKind::kMatrixRows) {
    const StreamedMatrix& m = sec.rb.matrices[un.matrix];
    begin = m.tensor->offset;
    row = m.row_bytes;
  } else {
    begin = lm_head_offset_;
    row = static_cast<uint64_t>(config_.hidden_size) * 2;
  }
  begin += static_cast<uint64_t>(un.first_row) * row;
  return RowSpan{begin, begin + static_cast<uint64_t>(un.rows) * row};
}

// The reads, block decodes and block checks that bring a unit into a buffer.
struct TrunkStream::UnitReads {
  std::vector<ReadEngine::Read> reads;            // a raw section's reads
  std::vector<TrunkBlockReader::Target> decodes;  // a compressed section's blocks
  std::vector<TrunkBlockReader::Target> checks;   // a raw section's blocks to check once read
  uint64_t length = 0;                            // stored bytes read
  uint64_t skip = 0;                              // the unit's bytes start at buf + skip
};

namespace {
// The layout was checked against the model's (check_trunk_table), so every
// read lands inside the buffer sized for its unit; a bug that broke that
// must not write past it.
void refuse_outside(const std::vector<ReadEngine::Read>& reads, const std::vector<TrunkBlockReader::Target>& decodes,
                    const AlignedBuffer& buf, const std::string& section) {
  for (const ReadEngine::Read& r : reads)
    if (r.dst < buf.data() || r.length > buf.size() ||
        static_cast<uint64_t>(r.dst - buf.data()) > buf.size() - r.length)
      throw Error(ExitCode::kInternal, "trunk section " + section + ": a read of " + std::to_string(r.length) +
                                           " bytes does not fit its stream buffer");
  for (const TrunkBlockReader::Target& t : decodes)
    if (t.dst < buf.data() || t.dst_len > buf.size() ||
        static_cast<uint64_t>(t.dst - buf.data()) > buf.size() - t.dst_len)
      throw Error(ExitCode::kInternal, "trunk section " + section + ": decoded blocks do not fit their stream buffer");
}
}  // namespace

TrunkStream::UnitReads TrunkStream::plan_unit_reads(StreamBuffer& b, const Unit& un) const {
  const Section& sec = *sections_[un.section];
  const TrunkSection& ts = *sec.ts;
  UnitReads p;
  std::vector<ReadEngine::Read>& reads = p.reads;
  std::vector<TrunkBlockReader::Target>& decodes = p.decodes;
  // Raw blocks `r`, read to `at` (holding decoded bytes from `base`), are
  // checked unless an earlier read checked them all.
  auto check = [&](BlockRange r, uint8_t* at, uint64_t base, uint64_t len) {
    if (sec.block_ok && !blocks_verified(r, sec.block_ok.get())) p.checks.push_back({r, at, base, len});
  };
  uint64_t& length = p.length;
  uint64_t& skip = p.skip;
  switch (un.kind) {
    case UnitKind::kSection:
      if (ts.compressed) {
        zero_section_gaps(ts, b.buf.data());  // padding is not stored; the blocks fill the rest
        decodes.push_back({BlockRange{0, ts.blocks.size()}, b.buf.data(), ts.offset, b.buf.size()});
      } else {
        reads.push_back(ReadEngine::Read{trunk_file_, ts.stored_offset, ts.length, ts.length, b.buf.data()});
        length = ts.length;
        check(BlockRange{0, ts.blocks.size()}, b.buf.data(), ts.offset, ts.length);
      }
      break;
    case UnitKind::kHeld:
      for (const HeldTensor& h : sec.rb.held) {
        if (ts.compressed) {
          decodes.push_back({tensor_blocks(ts, *h.tensor), b.buf.data() + h.buffer_offset + h.skip, h.tensor->offset,
                             h.tensor->nbytes});
          continue;
        }
        reads.push_back(ReadEngine::Read{trunk_file_, stored_at(ts, h.read_offset), h.read_length,
                                         h.skip + h.tensor->nbytes, b.buf.data() + h.buffer_offset});
        length += h.read_length;
        check(tensor_blocks(ts, *h.tensor), b.buf.data() + h.buffer_offset + h.skip, h.tensor->offset,
              h.tensor->nbytes);
      }
      break;
    case UnitKind::kMatrixRows:
    case UnitKind::kHeadRows: {
      const RowSpan r = unit_rows(un);
      if (ts.compressed) {
        const DecodedRows d = decoded_rows(ts, r.begin, r.end);
        decodes.push_back({d.blocks, b.buf.data(), d.base, b.buf.size()});
        skip = d.skip;
      } else {
        // The rows alone once their blocks were checked; until then the
        // blocks whole (at most one more at each end), to check them.
        const DecodedRows d = decoded_rows(ts, r.begin, r.end);
        const bool whole = sec.block_ok && !blocks_verified(d.blocks, sec.block_ok.get());
        const uint64_t begin = whole ? d.base : r.begin, end = whole ? d.base + d.bytes : r.end;
        const CoveringRead c = covering_read(stored_at(ts, begin), end - begin);
        reads.push_back(ReadEngine::Read{trunk_file_, c.offset, c.length, c.skip + (end - begin), b.buf.data()});
        length = c.length;
        skip = c.skip + (r.begin - begin);
        if (whole) check(d.blocks, b.buf.data() + c.skip, d.base, d.bytes);
      }
      break;
    }
  }
  return p;
}

void TrunkStream::issue_stream_read(StreamBuffer& b, int u, bool urgent) {
  wait_buffer(b);  // never overwrite a buffer a read is still filling
  const Unit& un = units_[u];
  const Section& sec = *sections_[un.section];
  const TrunkSection& ts = *sec.ts;
  UnitReads p = plan_unit_reads(b, un);
  std::vector<TrunkBlockReader::Target>& checks = p.checks;
  const uint64_t skip = p.skip;
  uint64_t length = p.length;
  refuse_outside(p.reads, p.decodes, b.buf, ts.name);
  {
    std::lock_guard<std::mutex> lk(b.mu);
    b.unit = u;
    b.skip = skip;
    b.pending = true;
    b.done = false;
    b.error.clear();
    b.corrupt = false;
  }
  StreamBuffer* bp = &b;
  // Raw blocks read for the first time are checked here, on the I/O thread,
  // while the compute thread works on an earlier unit (compressed blocks are
  // each checked as they are decoded).
  const Section* sp = &sec;
  auto done = [bp, sp, checks = std::move(checks), this](const std::string& err) {
    std::string problem;
    for (size_t i = 0; err.empty() && problem.empty() && i < checks.size(); ++i)
      problem = check_raw_blocks(*sp->ts, checks[i].blocks, checks[i].dst, checks[i].dst_base, checks[i].dst_len,
                                 sp->block_ok.get(), trunk_file_->path());
    std::lock_guard<std::mutex> lk(bp->mu);
    bp->error = err.empty() ? problem : err;
    // A block that fails its hash (raw, or compressed as decoded) is a
    // damaged trunk (exit 3), not a failed read.
    bp->corrupt = (err.empty() && !problem.empty()) || err.find("damaged") != std::string::npos;
    bp->done = true;
    bp->cv.notify_all();
  };
  if (ts.compressed)
    length = reader_->submit(ts, p.decodes, b.staging, done, urgent);  // decoded by the I/O threads as pieces arrive
  else io_.submit(std::move(p.reads), done, urgent);
  b.read_bytes = length;
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.trunk_bytes += length;
}

void TrunkStream::wait_buffer(StreamBuffer& b) {
  std::unique_lock<std::mutex> lk(b.mu);
  if (b.done) return;
  const auto t0 = SteadyClock::now();
  b.cv.wait(lk, [&] { return b.done; });
  std::lock_guard<std::mutex> slk(stats_mu_);
  stats_.io_wait_seconds += seconds_since(t0);
}

}  // namespace k3
