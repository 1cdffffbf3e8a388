#include "cli/token_id_writer.h"

#include <charconv>

namespace k3 {

namespace {

template <typename Id>
std::string format_ids(const std::vector<Id>& ids, TokenIdLayout layout) {
  // At most 11 characters for an int32 id, plus its separator.
  std::string out(ids.size() * 12 + 1, '\0');
  const char sep = layout == TokenIdLayout::kOneLine ? ' ' : '\n';
  char* p = out.data();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) *p++ = sep;
    p = std::to_chars(p, p + 11, ids[i]).ptr;
  }
  if (!ids.empty() || layout == TokenIdLayout::kOneLine) *p++ = '\n';
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

}  // namespace

std::string format_token_ids(const std::vector<uint32_t>& ids, TokenIdLayout layout) { return format_ids(ids, layout); }
std::string format_token_ids(const std::vector<int32_t>& ids, TokenIdLayout layout) { return format_ids(ids, layout); }

}  // namespace k3
