#include "draft/draft_row_stream.h"

#include <algorithm>

#include "common/error.h"

namespace k3 {

DraftStreamFile::DraftStreamFile(const std::string& path, uint64_t block_bytes)
    : file_(File::open_read(path)), block_bytes_(block_bytes), buffer_((block_bytes + 1) / 2) {}

const uint16_t* DraftStreamFile::read(uint64_t offset, uint64_t n) {
  if (n > block_bytes_) throw Error(ExitCode::kInternal, "a draft row block larger than its buffer");
  file_.pread_exact(buffer_.data(), n, offset);
  bytes_read_ += n;
  return buffer_.data();
}

void DraftRowStream::for_each_block(const Block& on_block) const {
  const uint64_t row_bytes = static_cast<uint64_t>(cols_) * 2;
  // The buffer is sized by the plan for at least one row of the widest matrix.
  const int64_t per = static_cast<int64_t>(std::max<uint64_t>(1, file_->block_bytes() / row_bytes));
  for (int64_t r0 = 0; r0 < rows_; r0 += per) {
    const int64_t m = std::min(per, rows_ - r0);
    const uint16_t* data =
        file_->read(offset_ + static_cast<uint64_t>(r0) * row_bytes, static_cast<uint64_t>(m) * row_bytes);
    on_block(r0, Bf16Matrix{data, m, cols_, nullptr});
  }
}

}  // namespace k3
