#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/byte_format.h"
#include "doctor/checks.h"
#include "platform/mountinfo.h"
#include "platform/system_root.h"

namespace k3::doctor {

namespace fs = std::filesystem;

namespace {
// statfs f_type for when mountinfo has no entry (a few common ones).
std::string fs_type_from_magic(long magic) {
  switch (static_cast<unsigned long>(magic)) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x794C7630: return "overlay";
    case 0x6969: return "nfs";
    case 0xFF534D42: return "cifs";
    case 0x65735546: return "fuse";
    case 0x2FC12FC1: return "zfs";
    case 0xF2F52010: return "f2fs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "unknown (0x%lx)", static_cast<unsigned long>(magic));
      return buf;
    }
  }
}

// Does an O_DIRECT read work here? Tries an aligned 4 KiB read of an
// existing file, else an unnamed temporary file in the directory.
void try_direct(StorageFacts& s) {
  if (!s.largest_file.empty() && s.largest_bytes >= 4096) {
    int fd = ::open(s.largest_file.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0) {
      s.direct_open = 0;
      s.direct_note = std::string("open(O_DIRECT) of ") + s.largest_file + " failed: " + std::strerror(errno);
      return;
    }
    void* buf = nullptr;
    if (posix_memalign(&buf, 4096, 4096) != 0) {
      ::close(fd);
      return;
    }
    ssize_t n = ::pread(fd, buf, 4096, 0);
    int e = errno;
    std::free(buf);
    ::close(fd);
    s.direct_open = n == 4096 ? 1 : 0;
    s.direct_note = n == 4096 ? "an aligned 4 KiB O_DIRECT read of " + s.largest_file + " worked"
                              : "O_DIRECT read of " + s.largest_file + " failed: " + std::strerror(e);
    return;
  }
  int fd = ::open(s.dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC | O_DIRECT, 0600);
  if (fd >= 0) {
    ::close(fd);
    s.direct_open = 1;
    s.direct_note = "an O_DIRECT temporary file could be created here";
    return;
  }
  if (errno == EINVAL) {
    s.direct_open = 0;
    s.direct_note = "O_DIRECT was refused here (EINVAL)";
  } else {
    s.direct_note =
        std::string("could not try O_DIRECT (no file here, and a temporary file: ") + std::strerror(errno) + ")";
  }
}
}  // namespace

StorageFacts gather_storage(const SystemRoot& root, const std::string& label, const std::string& dir,
                            const std::string& probe_file) {
  StorageFacts s;
  s.label = label;
  std::error_code ec;
  fs::path canon = fs::canonical(dir, ec);
  s.dir = ec ? dir : canon.string();
  struct stat st;
  s.exists = !ec && ::stat(s.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (!s.exists) return s;
  s.dev_major = major(st.st_dev);
  s.dev_minor = minor(st.st_dev);
  struct statvfs vfs;
  if (::statvfs(s.dir.c_str(), &vfs) == 0) {
    s.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    s.fs_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  }
  if (auto mi = root.read("/proc/self/mountinfo")) {
    auto mounts = parse_mountinfo(*mi);
    if (auto m = find_mount_for_path(mounts, s.dir, std::make_pair(s.dev_major, s.dev_minor))) {
      s.fs_type = m->fs_type;
      s.fs_source = m->source;
    }
  }
  if (s.fs_type.empty()) {
    struct statfs sf;
    if (::statfs(s.dir.c_str(), &sf) == 0) s.fs_type = fs_type_from_magic(sf.f_type);
  }
  s.disk = find_block_device(root, s.dev_major, s.dev_minor);

  if (!probe_file.empty()) {
    s.largest_file = probe_file;
    struct stat pst;
    if (::stat(probe_file.c_str(), &pst) == 0) s.largest_bytes = static_cast<uint64_t>(pst.st_size);
  } else {
    for (const auto& e : fs::directory_iterator(s.dir, ec)) {
      std::error_code fe;
      if (!e.is_regular_file(fe)) continue;
      const uint64_t n = e.file_size(fe);
      if (!fe && n > s.largest_bytes) {
        s.largest_bytes = n;
        s.largest_file = e.path().string();
      }
    }
  }
  try_direct(s);
  return s;
}

namespace {

// Free space against what the directory still needs stored.
void add_free_space_check(Report& r, const StorageFacts& s) {
  Check& k = r.add("storage", s.label + ".free_space");
  const bool enough = s.free_bytes >= s.needed_bytes;
  k.status = enough ? Status::kOk : (s.need_is_fatal ? Status::kFail : Status::kWarn);
  k.summary =
      format_bytes(s.free_bytes) + " free of " + format_bytes(s.fs_bytes) + " in " + s.dir + "; " + s.needed_why;
  k.advice =
      enough ? "enough space" : "free " + format_bytes(s.needed_bytes - s.free_bytes) + " more, or use a larger disk";
  k.details.set("dir", s.dir)
      .set("free_bytes", s.free_bytes)
      .set("filesystem_bytes", s.fs_bytes)
      .set("still_needed_bytes", s.needed_bytes);
}

// Network, FUSE, overlay and RAM filesystems read large random O_DIRECT ranges badly or not at all.
void add_filesystem_check(Report& r, const StorageFacts& s) {
  Check& k = r.add("storage", s.label + ".filesystem");
  const bool remote = is_network_or_fuse_fs(s.fs_type);
  const bool overlay = s.fs_type == "overlay" || s.fs_type == "aufs";
  const bool ram = s.fs_type == "tmpfs" || s.fs_type == "ramfs";
  k.status = remote || overlay || ram ? Status::kWarn : Status::kOk;
  k.summary = s.fs_type + (s.fs_source.empty() ? "" : " on " + s.fs_source);
  if (remote)
    k.advice =
        "a network or FUSE filesystem: large random O_DIRECT reads are slow or unsupported there; copy the model to "
        "a local NVMe disk";
  else if (overlay)
    k.advice =
        "an overlay (container) filesystem may not pass O_DIRECT through; bind-mount the model directory from the "
        "host";
  else if (ram) k.advice = "a RAM filesystem: its pages count against the memory budget and O_DIRECT is unsupported";
  else k.advice = "a local filesystem";
  k.details.set("type", s.fs_type)
      .set("source", s.fs_source)
      .set("device", std::to_string(s.dev_major) + ":" + std::to_string(s.dev_minor));
}

// Solid state or spinning, as far as the kernel tells.
void add_device_check(Report& r, const StorageFacts& s) {
  Check& k = r.add("storage", s.label + ".device");
  const BlockDevice& d = s.disk;
  if (!d.found) {
    k.status = Status::kOk;
    k.summary = "not a local block device (" + s.fs_type + ")";
    k.advice = "rotational or not cannot be told; the measured bandwidth below is what counts";
  } else if (d.rotational == 0) {
    k.status = Status::kOk;
    k.summary = d.name + ": solid state (queue/rotational = 0)";
    k.advice = "random reads are what an SSD does well";
  } else if (d.rotational == 1 && d.virtual_disk) {
    k.status = Status::kOk;
    k.summary = d.name + ": virtual disk reporting rotational = 1";
    k.advice = "hypervisors often report 1 for SSD-backed disks too; trust the measured bandwidth below";
  } else if (d.rotational == 1) {
    k.status = Status::kWarn;
    k.summary = d.name + ": rotational (a spinning disk)";
    k.advice = "random 17.5 MB reads from a hard disk run near 100 MB/s: expect minutes per token; use an NVMe SSD";
  } else {
    k.status = Status::kOk;
    k.summary = d.name + ": rotational flag not reported";
    k.advice = "the measured bandwidth below is what counts";
  }
  k.details.set("disk", d.name)
      .set("sys_path", d.sys_path)
      .set("rotational", d.rotational)
      .set("virtual_disk", d.virtual_disk);
}

// Whether reads can bypass the page cache.
void add_o_direct_check(Report& r, const StorageFacts& s) {
  Check& k = r.add("storage", s.label + ".o_direct");
  k.status = s.direct_open == 0 ? Status::kWarn : Status::kOk;
  k.summary = s.direct_open == 1 ? "works" : s.direct_open == 0 ? "refused" : "not tried";
  k.summary += ": " + s.direct_note;
  k.advice = s.direct_open == 0   ? "reads will go through the page cache, which then competes with the trunk and "
                                    "expert cache for RAM; use ext4 or xfs on a local disk"
             : s.direct_open == 1 ? "k3-forward can bypass the page cache"
                                  : "nothing to read here yet; run k3-doctor again once the files are in place";
  k.details.set("works", s.direct_open == 1   ? JsonValue(true)
                         : s.direct_open == 0 ? JsonValue(false)
                                              : JsonValue())
      .set("note", s.direct_note);
}

// The probe's figures, or why there are none.
void add_read_bandwidth_check(Report& r, const StorageFacts& s, uint64_t expert_request) {
  Check& k = r.add("storage", s.label + ".read_bandwidth");
  JsonValue points = JsonValue::array();
  if (!s.probe && s.probe_elsewhere) {
    k.status = Status::kOk;
    k.summary = "not measured here: " + s.probe_note;
    k.advice = "the forecast below uses the --probe-file measurement";
  } else if (!s.probe) {
    k.status = Status::kWarn;
    k.summary = "not measured: " + s.probe_note;
    k.advice = "the forecast below uses an assumed bandwidth";
  } else if (!s.probe->error.empty() && s.probe->data_bytes < s.probe->file_size) {
    k.status = Status::kWarn;
    k.summary = "not measured on " + s.probe->file + ": " + s.probe->error;
    k.advice = "give --probe-file a file whose data is on the disk (a downloaded shard)";
  } else if (!s.probe->error.empty()) {
    k.status = Status::kWarn;
    k.summary = "measurement failed on " + s.probe->file + ": " + s.probe->error;
    k.advice = "check the file and the disk (dmesg) before a long run";
  } else {
    const ProbeResult& pr = *s.probe;
    const double best = pr.best_mb_per_s(expert_request);
    std::string line;
    for (const ProbePoint& pt : pr.points) {
      if (pt.skipped) continue;
      char buf[96];
      std::snprintf(buf, sizeof(buf), "%s%s@QD%d %.0f MB/s", line.empty() ? "" : ", ",
                    format_bytes(pt.request_bytes).c_str(), pt.queue_depth, pt.mb_per_s());
      line += buf;
    }
    char tail[160];
    std::snprintf(tail, sizeof(tail), " (%s read in %.2f s%s)", format_bytes(pr.total_bytes).c_str(), pr.total_seconds,
                  pr.direct ? ", O_DIRECT" : ", BUFFERED: O_DIRECT refused");
    // Holes read as zeros without the disk: only the data was read, and said so.
    if (pr.data_bytes < pr.file_size)
      line += ", data only: " + format_bytes(pr.data_bytes) + " of a sparse " + format_bytes(pr.file_size);
    k.summary = line + tail;
    // The 1 GB/s bar is for experts of megabytes, as Kimi-K3's 17.5 MB; a
    // model with kilobyte experts (a small or synthetic checkpoint) is
    // bound by I/O operations instead, and reads little per token.
    const bool small_experts = expert_request < 1'000'000;
    k.status = pr.direct && (best >= 1000 || small_experts) ? Status::kOk : Status::kWarn;
    k.advice = !pr.direct     ? "reads went through the page cache, so these figures may be inflated"
               : best >= 1000 ? "fast enough for streaming"
               : small_experts
                   ? "this model's experts are small (" + format_bytes(expert_request) +
                         " reads), so this measures I/O operations more than bandwidth; the forecast below says what "
                         "it costs"
                   : "below 1 GB/s for expert-sized reads: tokens will be slow; an NVMe SSD reads 2-7 GB/s";
  }
  if (s.probe)
    for (const ProbePoint& pt : s.probe->points) {
      JsonValue o = JsonValue::object();
      o.set("request_bytes", pt.request_bytes)
          .set("queue_depth", pt.queue_depth)
          .set("requests", pt.requests)
          .set("bytes", pt.bytes)
          .set("seconds", pt.seconds)
          .set("mb_per_s", pt.mb_per_s())
          .set("skipped", pt.skipped);
      points.push(std::move(o));
    }
  k.details.set("file", s.probe ? JsonValue(s.probe->file) : JsonValue())
      .set("direct", s.probe ? JsonValue(s.probe->direct) : JsonValue())
      .set("total_bytes", s.probe ? JsonValue(s.probe->total_bytes) : JsonValue())
      .set("total_seconds", s.probe ? JsonValue(s.probe->total_seconds) : JsonValue())
      .set("file_bytes", s.probe ? JsonValue(s.probe->file_size) : JsonValue())
      .set("data_bytes", s.probe ? JsonValue(s.probe->data_bytes) : JsonValue())
      .set("note", s.probe ? (s.probe->error.empty() ? std::string() : s.probe->error) : s.probe_note)
      .set("points", std::move(points));
}

}  // namespace

void add_storage_checks(Report& r, const StorageFacts& s, uint64_t expert_request) {
  if (!s.exists) {
    Check& k = r.add("storage", s.label + ".directory");
    k.status = Status::kFail;
    k.summary = s.dir + " does not exist or is not a directory";
    k.advice = "create it, or pass the directory that holds the " + s.label;
    k.details.set("dir", s.dir);
    return;
  }
  add_free_space_check(r, s);
  add_filesystem_check(r, s);
  add_device_check(r, s);
  add_o_direct_check(r, s);
  add_read_bandwidth_check(r, s, expert_request);
}

}  // namespace k3::doctor
