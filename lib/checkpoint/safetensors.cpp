#include "checkpoint/safetensors.h"

#include <simdjson.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "common/file.h"
#include "common/json_writer.h"
#include "common/shape_format.h"

namespace k3 {

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_str() const { return k3::shape_str(shape); }

namespace {

// Sanity bound on the JSON header: real K3 shards have ~600 KB headers.
constexpr uint64_t kMaxHeaderBytes = 256ull << 20;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ExitCode::kBadModel, path + ": invalid safetensors header: " + what);
}

}  // namespace

namespace {

// Parses `json` (with simdjson's padding readable past its end) and hands
// every tensor to `sink` after the dtype, size and bounds checks.
void parse_tensors(const std::string& path, const char* json, size_t json_len, uint64_t file_size, uint64_t data_start,
                   const std::function<void(TensorInfo&&)>& sink) {
  if (data_start > file_size) bad(path, "header is longer than the file");
  const uint64_t data_bytes = file_size - data_start;

  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json, json_len, false).get(root)) bad(path, "the JSON header does not parse");
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) bad(path, "the JSON header is not an object");

  // A name given twice is ambiguous (readers disagree on which copy wins) and
  // two tensors sharing bytes cannot both be what the file claims: both are
  // refused. Keys are views into the parser's document, alive until return.
  std::unordered_set<std::string_view> names;
  names.reserve(obj.size());
  struct Span {
    uint64_t begin, end;
    std::string_view name;
  };
  std::vector<Span> spans;
  spans.reserve(obj.size());
  for (auto field : obj) {
    std::string_view key = field.key;
    if (!names.insert(key).second)
      bad(path, "tensor '" + std::string(key) + "' is listed twice (the header is ambiguous; re-download the shard)");
    if (key == "__metadata__") continue;
    simdjson::dom::object t;
    if (field.value.get_object().get(t)) bad(path, "tensor '" + std::string(key) + "' is not an object");
    std::string_view dtype_s;
    simdjson::dom::array shape_a, offs_a;
    if (t["dtype"].get_string().get(dtype_s) || t["shape"].get_array().get(shape_a) ||
        t["data_offsets"].get_array().get(offs_a))
      bad(path, "tensor '" + std::string(key) + "' lacks dtype, shape or data_offsets");
    TensorInfo ti;
    ti.name = key;
    const std::string& name = ti.name;
    if (!parse_dtype(std::string(dtype_s), &ti.dtype))
      bad(path, "tensor '" + name + "' has unknown dtype '" + std::string(dtype_s) + "'");
    ti.shape.reserve(shape_a.size());
    for (auto d : shape_a) {
      uint64_t v;
      if (d.get_uint64().get(v)) bad(path, "tensor '" + name + "' has a non-integer shape");
      ti.shape.push_back(v);
    }
    uint64_t offs[2] = {0, 0};
    size_t n_offs = 0;
    for (auto o : offs_a) {
      uint64_t v;
      if (o.get_uint64().get(v)) bad(path, "tensor '" + name + "' has a non-integer data offset");
      if (n_offs < 2) offs[n_offs] = v;
      ++n_offs;
    }
    if (n_offs != 2 || offs[0] > offs[1]) bad(path, "tensor '" + name + "' has malformed data_offsets");
    // numel * size with overflow check
    unsigned __int128 want = dtype_size(ti.dtype);
    for (uint64_t d : ti.shape) want *= d;
    ti.nbytes = offs[1] - offs[0];
    if (want != ti.nbytes)
      bad(path, "tensor '" + name + "' " + ti.shape_str() + " " + dtype_name(ti.dtype) + " needs " +
                    std::to_string(static_cast<uint64_t>(want)) + " bytes but data_offsets span " +
                    std::to_string(ti.nbytes));
    if (offs[1] > data_bytes)
      bad(path, "tensor '" + name + "' ends at data offset " + std::to_string(offs[1]) + " past the end of the file (" +
                    std::to_string(data_bytes) + " data bytes): the shard is truncated or the header is corrupt");
    ti.offset = data_start + offs[0];
    if (ti.nbytes) spans.push_back({offs[0], offs[1], key});
    sink(std::move(ti));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].begin < spans[i - 1].end)
      bad(path, "tensors '" + std::string(spans[i - 1].name) + "' [" + std::to_string(spans[i - 1].begin) + ", " +
                    std::to_string(spans[i - 1].end) + ") and '" + std::string(spans[i].name) + "' [" +
                    std::to_string(spans[i].begin) + ", " + std::to_string(spans[i].end) +
                    ") overlap in data_offsets (the header is corrupt; re-download the shard)");
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const std::string& path, const std::string& json, uint64_t file_size) {
  SafetensorsHeader h;
  h.path = path;
  h.file_size = file_size;
  h.data_start = 8 + json.size();
  simdjson::padded_string padded(json);
  parse_tensors(path, padded.data(), padded.size(), file_size, h.data_start,
                [&](TensorInfo&& ti) { h.tensors.emplace(ti.name, std::move(ti)); });
  return h;
}

SafetensorsExtent read_safetensors_tensors(const std::string& path, const std::function<void(TensorInfo&&)>& sink) {
  File f = File::open_read(path);
  const uint64_t size = f.size();
  if (size < 8) bad(path, "file is " + std::to_string(size) + " bytes, shorter than the 8-byte length");
  unsigned char len_bytes[8];
  f.pread_exact(len_bytes, 8, 0);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > kMaxHeaderBytes || n > size - 8)
    bad(path, "header length " + std::to_string(n) + " exceeds the file size " + std::to_string(size));
  // Read straight into a padded buffer: no copy of a ~700 KB header per shard.
  simdjson::padded_string json(static_cast<size_t>(n));
  f.pread_exact(json.data(), n, 8);
  SafetensorsExtent e{size, 8 + n};
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, len_bytes, 8);
  XXH3_64bits_update(st, json.data(), n);
  e.header_xxh3 = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  struct stat fs;
  if (::fstat(f.fd(), &fs) == 0) {
    e.mtime_ns = static_cast<int64_t>(fs.st_mtim.tv_sec) * 1000000000 + fs.st_mtim.tv_nsec;
    e.inode = static_cast<uint64_t>(fs.st_ino);
  }
  parse_tensors(path, json.data(), json.size(), size, e.data_start, sink);
  return e;
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  SafetensorsHeader h;
  h.path = path;
  SafetensorsExtent e =
      read_safetensors_tensors(path, [&](TensorInfo&& ti) { h.tensors.emplace(ti.name, std::move(ti)); });
  h.file_size = e.file_size;
  h.data_start = e.data_start;
  return h;
}

std::string make_safetensors_header(const std::vector<TensorToWrite>& tensors) {
  JsonWriter w = JsonWriter::compact();  // the bytes other readers hash and compare: no spaces
  w.begin_object();
  uint64_t off = 0;
  for (const TensorToWrite& t : tensors) {
    w.key(t.name).begin_object();
    w.key("dtype").value(dtype_name(t.dtype));
    w.key("shape").begin_array();
    for (uint64_t d : t.shape) w.value(static_cast<unsigned long long>(d));
    w.end_array();
    w.key("data_offsets").begin_array().value(static_cast<unsigned long long>(off));
    w.value(static_cast<unsigned long long>(off + t.nbytes)).end_array();
    w.end_object();
    off += t.nbytes;
  }
  w.end_object();
  std::string json = w.take();
  while (json.size() % 8) json += ' ';
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json;
}

}  // namespace k3
