#include "trunk/block_reader.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "platform/thread_cpu_time.h"
#include "trunk/pack_command.h"

namespace k3 {

namespace {
// Decoder state per I/O thread (zstd context and plane scratch).
TrunkBlockDecoder& thread_decoder() {
  thread_local TrunkBlockDecoder decoder;
  return decoder;
}
}  // namespace

double TrunkBlockReader::decode_seconds() const { return decode_ns_->load() * 1e-9; }

namespace {
// One submitted read: its pieces (runs of whole blocks), which are issued
// into staging slots as earlier ones are decoded.
struct Piece {
  BlockRange blocks;
  uint8_t* dst = nullptr;
  uint64_t dst_base = 0, dst_len = 0;
};
struct Job {
  const TrunkSection* s = nullptr;
  uint8_t* staging = nullptr;
  std::vector<Piece> pieces;
  ReadEngine::Done done;
  bool urgent = false;
  std::mutex mu;
  size_t next = 0;      // next piece to issue
  int outstanding = 0;  // issued, not yet decoded
  std::string error;

  // Piece `p` decoded (`err` empty) or failed. Returns the next piece to
  // issue into its slot (SIZE_MAX: none, or a piece failed); sets
  // `finished` when no piece is outstanding, with the job's first failure.
  size_t piece_done(const std::string& err, bool& finished, std::string& final_err) {
    std::lock_guard<std::mutex> lk(mu);
    if (!err.empty() && error.empty()) error = err;
    --outstanding;
    size_t n = SIZE_MAX;
    if (error.empty() && next < pieces.size()) {
      n = next++;
      ++outstanding;
    }
    finished = outstanding == 0;
    final_err = error;
    return n;
  }
};

// Cuts each target's blocks into pieces of whole blocks of at most
// `piece_bytes` stored bytes, adding the aligned bytes each reads to
// `stored`. Returns what a damaged trunk.json claims, or "".
std::string cut_pieces(const TrunkSection& s, const std::vector<TrunkBlockReader::Target>& targets,
                       uint64_t piece_bytes, std::vector<Piece>& pieces, uint64_t& stored) {
  for (const TrunkBlockReader::Target& t : targets) {
    if (t.blocks.last > s.blocks.size() || t.blocks.first > t.blocks.last)
      return "trunk.json: section " + s.name + ": no blocks " + std::to_string(t.blocks.first) + " to " +
             std::to_string(t.blocks.last) + " (damaged; re-run " + repack_command(true) + ")";
    for (size_t first = t.blocks.first; first < t.blocks.last;) {
      if (s.blocks[first].stored_size > piece_bytes)  // only a damaged trunk.json says so
        return "trunk.json: section " + s.name + " block " + std::to_string(first) + " claims " +
               std::to_string(s.blocks[first].stored_size) + " stored bytes (damaged; re-run " + repack_command(true) +
               ")";
      size_t last = first + 1;
      while (last < t.blocks.last &&
             s.blocks[last].stored_offset + s.blocks[last].stored_size - s.blocks[first].stored_offset <= piece_bytes)
        ++last;
      pieces.push_back(Piece{BlockRange{first, last}, t.dst, t.dst_base, t.dst_len});
      const StoredSpan span = stored_span(s, BlockRange{first, last});
      stored += align_up(span.offset + span.length) - align_down(span.offset);
      first = last;
    }
  }
  return "";
}
}  // namespace

uint64_t TrunkBlockReader::submit(const TrunkSection& s, BlockRange r, uint8_t* dst, uint64_t dst_base,
                                  uint64_t dst_len, AlignedBuffer& staging, ReadEngine::Done done, bool urgent) {
  return submit(s, std::vector<Target>{Target{r, dst, dst_base, dst_len}}, staging, std::move(done), urgent);
}

uint64_t TrunkBlockReader::submit(const TrunkSection& s, const std::vector<Target>& targets, AlignedBuffer& staging,
                                  ReadEngine::Done done, bool urgent) {
  if (staging.size() < staging_bytes(piece_bytes_))
    throw Error(ExitCode::kInternal, "trunk block staging buffer smaller than its pieces");
  auto job = std::make_shared<Job>();
  job->s = &s;
  job->staging = staging.data();
  job->done = std::move(done);
  job->urgent = urgent;
  uint64_t stored = 0;
  const std::string damaged = cut_pieces(s, targets, piece_bytes_, job->pieces, stored);
  if (!damaged.empty()) {
    job->done(damaged);
    return 0;
  }
  if (job->pieces.empty()) {
    job->done(std::string());
    return 0;
  }
  // Issues piece `p` into staging slot `slot`; its completion decodes it
  // and issues the next piece into the same slot.
  auto totals = decode_ns_;
  const DirectFile* file = &file_;
  ReadEngine* io = &io_;
  const uint64_t slot_bytes = piece_bytes_ + 2 * kDirectAlign;
  auto issue = std::make_shared<std::function<void(size_t, int)>>();
  std::weak_ptr<std::function<void(size_t, int)>> weak_issue = issue;
  *issue = [job, totals, file, io, weak_issue, slot_bytes](size_t p, int slot) {
    // Pieces are at most piece_bytes_ of whole blocks (checked above), so
    // the aligned read fits its slot; decode_blocks checks each block
    // against both the bytes read and the target.
    const StoredSpan span = stored_span(*job->s, job->pieces[p].blocks);
    const uint64_t offset = align_down(span.offset);
    const uint64_t length = align_up(span.offset + span.length) - offset;
    uint8_t* buf = job->staging + static_cast<uint64_t>(slot) * slot_bytes;
    auto self = weak_issue.lock();  // alive while any piece is outstanding
    io->submit(
        {ReadEngine::Read{file, offset, length, span.offset + span.length - offset, buf}},
        [job, totals, self, p, slot, buf, offset, length](const std::string& read_err) {
          std::string err = read_err;
          if (err.empty()) {
            const double t0 = thread_cpu_seconds();
            const Piece& piece = job->pieces[p];
            err = decode_blocks(*job->s, piece.blocks, buf, offset, length, piece.dst, piece.dst_base, piece.dst_len,
                                thread_decoder());
            *totals += static_cast<uint64_t>((thread_cpu_seconds() - t0) * 1e9);
          }
          bool finished = false;
          std::string final_err;
          const size_t next = job->piece_done(err, finished, final_err);
          if (next != SIZE_MAX) (*self)(next, slot);
          if (finished) job->done(final_err);
        },
        job->urgent);
  };
  std::vector<std::pair<size_t, int>> first_pieces;
  {
    std::lock_guard<std::mutex> lk(job->mu);
    for (int slot = 0; slot < kPiecesInFlight && job->next < job->pieces.size(); ++slot) {
      first_pieces.emplace_back(job->next++, slot);
      ++job->outstanding;
    }
  }
  // Each outstanding completion holds `issue` alive through its own copy.
  for (auto [p, slot] : first_pieces) (*issue)(p, slot);
  return stored;
}

uint64_t TrunkBlockReader::read_now(const TrunkSection& s, BlockRange r, uint8_t* dst, uint64_t dst_base,
                                    uint64_t dst_len, AlignedBuffer& staging) {
  ReadLatch latch;
  std::string error;
  auto cb = latch.callback();
  const uint64_t n = submit(
      s, r, dst, dst_base, dst_len, staging,
      [&error, cb](const std::string& e) {
        error = e;
        cb(std::string());
      },
      true);
  latch.wait();
  if (!error.empty())
    throw Error(error.find("damaged") != std::string::npos ? ExitCode::kBadModel : ExitCode::kIo, error);
  return n;
}

}  // namespace k3
