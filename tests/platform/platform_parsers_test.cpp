// The /proc and /sys parsers (lib/platform; k3-doctor and the memory plan
// read the machine through them) against recorded sample trees in
// tests/data/doctor/ (see its README.md): a cgroup v1 host, a Docker
// container on cgroup v1, a cgroup v2 container with memory.max, a v2
// desktop with no limit ('max'), and a v2 service limited two levels up.
#include <gtest/gtest.h>

#include <cstdlib>

#include "platform/block_device.h"
#include "platform/cgroup_memory.h"
#include "platform/cpu_features.h"
#include "platform/kernel_limits.h"
#include "platform/meminfo.h"
#include "platform/memory_limits.h"
#include "platform/mountinfo.h"
#include "platform/system_root.h"

using namespace k3;

namespace {
const std::string kData = std::string(K3_TEST_DATA) + "/doctor/";
SystemRoot sample(const std::string& name) { return SystemRoot(kData + name); }
std::string read_sample(const std::string& name, const std::string& path) {
  auto t = sample(name).read(path);
  EXPECT_TRUE(t.has_value()) << name << path;
  return t.value_or("");
}
constexpr uint64_t GiB = uint64_t{1} << 30;
}  // namespace

TEST(Meminfo, ParsesKibibytesIntoBytes) {
  MemInfo m = parse_meminfo(read_sample("v1-host", "/proc/meminfo"));
  ASSERT_TRUE(m.total && m.available && m.swap_total && m.swap_free);
  EXPECT_EQ(*m.total, 131621888ULL * 1024);
  EXPECT_EQ(*m.available, 120453120ULL * 1024);
  EXPECT_EQ(*m.swap_total, 8388604ULL * 1024);
  MemInfo none = parse_meminfo(read_sample("v1-docker", "/proc/meminfo"));
  ASSERT_TRUE(none.swap_total);
  EXPECT_EQ(*none.swap_total, 0u);
}

TEST(Meminfo, MissingOrMalformedLinesStayUnset) {
  // Kernels before 3.14 have no MemAvailable; a damaged value is not guessed.
  MemInfo m = parse_meminfo("MemTotal:  1000 kB\nMemFree: lots kB\nSwapTotal: 12 MB\n");
  ASSERT_TRUE(m.total);
  EXPECT_EQ(*m.total, 1024000u);
  EXPECT_FALSE(m.available);
  EXPECT_FALSE(m.free);
  EXPECT_FALSE(m.swap_total);
  EXPECT_FALSE(parse_meminfo("").total);
}

TEST(Cpuinfo, FlagsCountAndModel) {
  const std::string text = read_sample("v1-host", "/proc/cpuinfo");
  auto flags = parse_cpuinfo_flags(text);
  EXPECT_TRUE(flags.count("avx512_bf16"));
  EXPECT_TRUE(flags.count("avx512_vnni"));
  EXPECT_TRUE(flags.count("f16c"));
  EXPECT_FALSE(flags.count("bugs"));
  EXPECT_FALSE(flags.count("spectre_v1"));  // from the bugs line, not flags
  EXPECT_EQ(count_cpuinfo_processors(text), 4);
  EXPECT_EQ(parse_cpuinfo_model_name(text), "Intel(R) Xeon(R) Platinum 8480+");
}

TEST(Cpuinfo, KernelPathPredictedFromFlags) {
  EXPECT_EQ(predict_kernel_path(parse_cpuinfo_flags(read_sample("v1-host", "/proc/cpuinfo"))), "AVX3");
  EXPECT_EQ(predict_kernel_path(parse_cpuinfo_flags(read_sample("v2-container", "/proc/cpuinfo"))), "AVX3");
  EXPECT_EQ(predict_kernel_path(parse_cpuinfo_flags(read_sample("v1-docker", "/proc/cpuinfo"))), "AVX2");
  EXPECT_EQ(predict_kernel_path(parse_cpuinfo_flags(read_sample("v2-unlimited", "/proc/cpuinfo"))), "SSE4");
  EXPECT_EQ(predict_kernel_path({}), "EMU128");
  // AVX-512F alone (no BW/VL/DQ, e.g. Xeon Phi) is not Highway's AVX3.
  EXPECT_EQ(predict_kernel_path(
                {"avx2", "fma", "f16c", "bmi1", "bmi2", "sse4_1", "sse4_2", "ssse3", "pclmulqdq", "aes", "avx512f"}),
            "AVX2");
}

TEST(Cpuinfo, DetectFromRecordedRoot) {
  CpuFeatures c = detect_cpu(sample("v1-docker"));
  EXPECT_EQ(c.flags_source, "cpuinfo");
  EXPECT_EQ(c.logical_cpus, 8);
  EXPECT_TRUE(c.avx2 && c.fma && c.f16c);
  EXPECT_FALSE(c.avx512f || c.avx512_bf16 || c.avx512_vnni);
  EXPECT_EQ(c.kernel_path, "AVX2");
}

TEST(Cgroup, ParsesProcSelfCgroup) {
  auto v = parse_proc_cgroup(read_sample("v1-host", "/proc/self/cgroup"));
  ASSERT_EQ(v.size(), 13u);
  EXPECT_EQ(v[1].hierarchy_id, 11);
  ASSERT_EQ(v[1].controllers.size(), 1u);
  EXPECT_EQ(v[1].controllers[0], "memory");
  EXPECT_EQ(v[1].path, "/user.slice/user-1000.slice/session-4.scope");
  EXPECT_EQ(v[3].controllers.size(), 2u);  // cpu,cpuacct
  EXPECT_EQ(v.back().hierarchy_id, 0);
  EXPECT_TRUE(v.back().controllers.empty());
  EXPECT_TRUE(parse_proc_cgroup("garbage\n7:x\n").empty());
}

TEST(Cgroup, LimitValues) {
  bool ok = true;
  EXPECT_FALSE(parse_cgroup_limit("max\n", &ok));
  EXPECT_TRUE(ok);
  EXPECT_FALSE(parse_cgroup_limit("9223372036854771712\n", &ok));  // v1 "unlimited"
  EXPECT_TRUE(ok);
  auto v = parse_cgroup_limit("8589934592\n", &ok);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 8 * GiB);
  parse_cgroup_limit("eight gigs", &ok);
  EXPECT_FALSE(ok);
}

TEST(Cgroup, DirectoryMapsThroughTheMountRoot) {
  MountEntry m;
  m.mount_point = "/sys/fs/cgroup/memory";
  m.root = "/docker/abc";
  EXPECT_EQ(cgroup_dir(m, "/docker/abc").value_or("?"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(cgroup_dir(m, "/docker/abc/sub").value_or("?"), "/sys/fs/cgroup/memory/sub");
  EXPECT_FALSE(cgroup_dir(m, "/docker/abcdef"));
  EXPECT_FALSE(cgroup_dir(m, "/user.slice"));
  m.root = "/";
  EXPECT_EQ(cgroup_dir(m, "/").value_or("?"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(cgroup_dir(m, "/a/b").value_or("?"), "/sys/fs/cgroup/memory/a/b");
}

TEST(Cgroup, V1HostHasNoLimit) {
  CgroupMemory c = read_cgroup_memory(kData + "v1-host");
  EXPECT_TRUE(c.v1.hierarchy_found);
  EXPECT_EQ(c.v1.dir, "/sys/fs/cgroup/memory/user.slice/user-1000.slice/session-4.scope");
  EXPECT_FALSE(c.v1.limit);
  EXPECT_TRUE(c.v2.hierarchy_found);  // hybrid: unified mounted, memory controller not on it
  EXPECT_EQ(c.v2.dir, "/sys/fs/cgroup/unified/user.slice/user-1000.slice/session-4.scope");
  EXPECT_FALSE(c.v2.limit);
  EXPECT_FALSE(c.effective_limit());
}

TEST(Cgroup, V1DockerLimitAtTheMountedRoot) {
  CgroupMemory c = read_cgroup_memory(kData + "v1-docker");
  ASSERT_TRUE(c.v1.hierarchy_found);
  EXPECT_EQ(c.v1.dir, "/sys/fs/cgroup/memory");
  ASSERT_TRUE(c.v1.limit);
  EXPECT_EQ(*c.v1.limit, 16 * GiB);
  EXPECT_FALSE(c.v2.hierarchy_found);
  EXPECT_EQ(c.effective_limit().value_or(0), 16 * GiB);
}

TEST(Cgroup, V2ContainerMemoryMax) {
  CgroupMemory c = read_cgroup_memory(kData + "v2-container");
  EXPECT_FALSE(c.v1.hierarchy_found);
  ASSERT_TRUE(c.v2.hierarchy_found);
  EXPECT_EQ(c.v2.dir, "/sys/fs/cgroup");
  EXPECT_EQ(c.v2.limit.value_or(0), 8 * GiB);
  EXPECT_EQ(c.effective_limit().value_or(0), 8 * GiB);
}

TEST(Cgroup, V2UnlimitedMax) {
  CgroupMemory c = read_cgroup_memory(kData + "v2-unlimited");
  ASSERT_TRUE(c.v2.hierarchy_found);
  EXPECT_EQ(c.v2.dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
  EXPECT_FALSE(c.v2.limit);
  EXPECT_FALSE(c.effective_limit());
}

TEST(Cgroup, V2NestedLimitTwoLevelsUp) {
  CgroupMemory c = read_cgroup_memory(kData + "v2-nested");
  ASSERT_TRUE(c.v2.hierarchy_found);
  EXPECT_EQ(c.v2.dir, "/sys/fs/cgroup/system.slice/k3.service/worker");
  EXPECT_EQ(c.v2.limit.value_or(0), 6 * GiB);
  EXPECT_EQ(c.v2.limit_dir, "/sys/fs/cgroup/system.slice/k3.service");
}

// The one reader k3-forward, the resident weights and k3-doctor share, on
// the recorded trees: min(MemAvailable, the cgroup limit) as the files say
// (no usage files recorded, so nothing is subtracted).
TEST(MemoryLimits, RecordedTreesGiveMemAvailableOrTheCgroupLimit) {
  struct Case {
    const char* tree;
    uint64_t available;
    uint64_t cgroup_limit;
  };
  for (const Case& c : {Case{"v1-host", 120453120ULL * 1024, 0}, Case{"v1-docker", 16 * GiB, 16 * GiB},
                        Case{"v2-container", 8 * GiB, 8 * GiB}, Case{"v2-nested", 6 * GiB, 6 * GiB},
                        Case{"v2-unlimited", 12001234ULL * 1024, 0}}) {
    ::unsetenv("K3_AVAILABLE_MEMORY");
    MemoryLimits m = read_memory_limits(kData + c.tree);
    EXPECT_EQ(m.available(), c.available) << c.tree;
    EXPECT_EQ(m.cgroup_limit, c.cgroup_limit) << c.tree;
    EXPECT_EQ(m.cgroup_source.empty(), c.cgroup_limit == 0) << c.tree;
    ASSERT_TRUE(m.meminfo.total) << c.tree;
  }
  MemoryLimits nested = read_memory_limits(kData + "v2-nested");
  EXPECT_EQ(nested.cgroup_source, "cgroup v2 /sys/fs/cgroup/system.slice/k3.service/memory.max");
  EXPECT_FALSE(nested.cgroup.v2.usage);
}

TEST(Mountinfo, ParsesFieldsAndEscapes) {
  auto m = parse_mountinfo(read_sample("v1-host", "/proc/self/mountinfo"));
  ASSERT_EQ(m.size(), 15u);
  const MountEntry& root = m[3];
  EXPECT_EQ(root.mount_point, "/");
  EXPECT_EQ(root.fs_type, "ext4");
  EXPECT_EQ(root.source, "/dev/mapper/vg0-root");
  EXPECT_EQ(root.major, 253u);
  EXPECT_EQ(root.minor, 0u);
  EXPECT_EQ(m[11].mount_point, "/mnt/my disk");
  EXPECT_EQ(m[14].root, "/scratch");
  EXPECT_TRUE(parse_mountinfo("not a mountinfo line\n1 2 3\n").empty());
}

TEST(Mountinfo, FindsTheFilesystemOfAPath) {
  auto m = parse_mountinfo(read_sample("v1-host", "/proc/self/mountinfo"));
  auto at = [&](const std::string& p, std::optional<std::pair<uint32_t, uint32_t>> dev = std::nullopt) {
    auto e = find_mount_for_path(m, p, dev);
    return e ? e->mount_point + " " + e->fs_type : std::string("none");
  };
  EXPECT_EQ(at("/data/k3/model-00001-of-00096.safetensors"), "/data xfs");
  EXPECT_EQ(at("/data/models/scratch/k3", std::make_pair(259u, 2u)), "/data/models/scratch xfs");
  EXPECT_EQ(at("/dataset"), "/ ext4");  // a prefix only counts at a path boundary
  EXPECT_EQ(at("/mnt/my disk/k3"), "/mnt/my disk ext4");
  EXPECT_EQ(at("/mnt/models/k3"), "/mnt/models nfs4");
  EXPECT_EQ(at("/home/user/remote/k3"), "/home/user/remote fuse.sshfs");
  EXPECT_EQ(at("/home/user"), "/ ext4");
  EXPECT_TRUE(is_network_or_fuse_fs("nfs4"));
  EXPECT_TRUE(is_network_or_fuse_fs("fuse.sshfs"));
  EXPECT_TRUE(is_network_or_fuse_fs("cifs"));
  EXPECT_FALSE(is_network_or_fuse_fs("xfs"));
  EXPECT_FALSE(is_network_or_fuse_fs("ext4"));
}

TEST(BlockDevice, PartitionsLvmAndVirtio) {
  BlockDevice nvme = find_block_device(sample("v1-host"), 259, 2);
  ASSERT_TRUE(nvme.found);
  EXPECT_EQ(nvme.name, "nvme0n1");  // the partition's disk
  EXPECT_EQ(nvme.rotational, 0);
  EXPECT_FALSE(nvme.virtual_disk);

  BlockDevice lvm = find_block_device(sample("v1-host"), 253, 0);
  ASSERT_TRUE(lvm.found);
  EXPECT_EQ(lvm.name, "nvme0n1");  // dm-0 -> slaves/nvme0n1p3 -> nvme0n1
  EXPECT_EQ(lvm.rotational, 0);

  BlockDevice sata = find_block_device(sample("v1-host"), 8, 1);
  ASSERT_TRUE(sata.found);
  EXPECT_EQ(sata.name, "sda");
  EXPECT_EQ(sata.rotational, 1);
  EXPECT_FALSE(sata.virtual_disk);

  BlockDevice vda = find_block_device(sample("v2-nested"), 254, 1);
  ASSERT_TRUE(vda.found);
  EXPECT_EQ(vda.name, "vda");
  EXPECT_EQ(vda.rotational, 1);
  EXPECT_TRUE(vda.virtual_disk);

  EXPECT_FALSE(find_block_device(sample("v1-host"), 0, 50).found);  // NFS: anonymous device
  EXPECT_FALSE(find_block_device(sample("v1-host"), 7, 0).found);   // not recorded
}

TEST(KernelLimits, ProcLimitsThpAndMapCount) {
  ResourceLimit memlock = parse_proc_limit(read_sample("v1-host", "/proc/self/limits"), "Max locked memory");
  EXPECT_TRUE(memlock.found);
  EXPECT_FALSE(memlock.soft);  // unlimited
  ResourceLimit nofile = parse_proc_limit(read_sample("v1-host", "/proc/self/limits"), "Max open files");
  ASSERT_TRUE(nofile.found && nofile.soft && nofile.hard);
  EXPECT_EQ(*nofile.soft, 1024u);
  EXPECT_EQ(*nofile.hard, 1048576u);
  ResourceLimit docker = parse_proc_limit(read_sample("v1-docker", "/proc/self/limits"), "Max locked memory");
  EXPECT_EQ(docker.soft.value_or(0), 65536u);
  EXPECT_FALSE(parse_proc_limit("", "Max open files").found);

  EXPECT_EQ(parse_thp_mode(read_sample("v1-host", "/sys/kernel/mm/transparent_hugepage/enabled")), "always");
  EXPECT_EQ(parse_thp_mode(read_sample("v2-container", "/sys/kernel/mm/transparent_hugepage/enabled")), "never");
  EXPECT_EQ(parse_thp_mode("always madvise never"), "");
  EXPECT_EQ(parse_uint_file(read_sample("v2-container", "/proc/sys/vm/max_map_count")).value_or(0), 1048576u);
  EXPECT_FALSE(parse_uint_file("n/a"));
  std::string_view rest;
  EXPECT_EQ(parse_leading_uint(" \t24683620 kB", &rest).value_or(0), 24683620u);
  EXPECT_EQ(rest, " kB");
  EXPECT_FALSE(parse_leading_uint("   ", &rest));
  EXPECT_FALSE(parse_leading_uint("-5"));
}

TEST(SystemRoot, FlagThenEnvironmentThenLive) {
  ::setenv(kRootEnv, (kData + "v2-nested").c_str(), 1);
  EXPECT_EQ(SystemRoot::from_flag_or_env("").root(), kData + "v2-nested");
  EXPECT_EQ(SystemRoot::from_flag_or_env(kData + "v1-host/").root(), kData + "v1-host");
  ::unsetenv(kRootEnv);
  EXPECT_TRUE(SystemRoot::from_flag_or_env("").is_live());
  EXPECT_FALSE(sample("v1-host").read("/proc/does-not-exist"));
}
