#include "sampling/logits_log.h"

#include <cstdint>

#include "checkpoint/safetensors.h"
#include "common/atomic_file_writer.h"

namespace k3 {

void LogitsLog::add(const float* rows, size_t n) {
  if (enabled_) data_.insert(data_.end(), rows, rows + n * vocab_);
}

void LogitsLog::truncate(size_t n) {
  if (n * vocab_ < data_.size()) data_.resize(n * vocab_);
}

void LogitsLog::write(const std::string& path) const {
  const uint64_t rows = data_.size() / vocab_;
  const uint64_t nbytes = data_.size() * sizeof(float);
  const std::string header =
      make_safetensors_header({{"logits", DType::kF32, {rows, static_cast<uint64_t>(vocab_)}, nbytes}});
  AtomicFileWriter out(path, OutputPolicy::kFileOrStream);
  out.write(header.data(), header.size());
  out.write(data_.data(), nbytes);
  out.commit();
}

}  // namespace k3
