#include "platform/block_device.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "platform/kernel_limits.h"
#include "platform/system_root.h"

namespace k3 {

namespace fs = std::filesystem;

namespace {
// A real directory under the root -> its system path ("/sys/devices/...").
std::string to_system_path(const SystemRoot& root, const fs::path& real) {
  std::string s = real.string();
  if (root.is_live()) return s;
  const std::string r = fs::weakly_canonical(root.root()).string();
  if (s.compare(0, r.size(), r) == 0) return s.substr(r.size());
  return s;
}

BlockDevice describe_disk(const SystemRoot& root, const fs::path& dev_dir, int depth) {
  BlockDevice b;
  std::error_code ec;
  fs::path dir = dev_dir;
  // A partition: the disk is the parent directory.
  if (fs::exists(dir / "partition", ec)) dir = dir.parent_path();
  // Device mapper / md: follow the first underlying device.
  if (depth < 4 && fs::is_directory(dir / "slaves", ec)) {
    for (const auto& e : fs::directory_iterator(dir / "slaves", ec)) {
      fs::path target = fs::canonical(e.path(), ec);
      if (ec) break;
      BlockDevice inner = describe_disk(root, target, depth + 1);
      if (inner.found) return inner;
    }
  }
  b.found = true;
  b.name = dir.filename().string();
  b.sys_path = to_system_path(root, dir);
  if (auto text = root.read(b.sys_path + "/queue/rotational")) {
    if (auto v = parse_uint_file(*text)) b.rotational = *v ? 1 : 0;
  }
  b.virtual_disk = b.sys_path.find("/virtio") != std::string::npos || b.sys_path.find("/xen") != std::string::npos ||
                   b.name.rfind("vd", 0) == 0 || b.name.rfind("xvd", 0) == 0;
  return b;
}
}  // namespace

BlockDevice find_block_device(const SystemRoot& root, uint32_t major, uint32_t minor) {
  if (major == 0) return {};  // anonymous device: tmpfs, overlay, NFS, FUSE...
  std::error_code ec;
  fs::path link = root.path("/sys/dev/block/" + std::to_string(major) + ":" + std::to_string(minor));
  fs::path real = fs::canonical(link, ec);
  if (ec) return {};
  return describe_disk(root, real, 0);
}

}  // namespace k3
