// Whether the disk under a filesystem is rotational, found from sysfs.
//
// A filesystem's device number (stat st_dev, or mountinfo major:minor) names
// /sys/dev/block/M:m, a link into /sys/devices. A partition's directory sits
// inside its disk's and has a `partition` file; a device-mapper or md device
// (LVM, dm-crypt, RAID) lists the disks under it in `slaves/`. The disk's
// queue/rotational says 1 for spinning media; virtual disks (virtio, Xen)
// report whatever the hypervisor chose, often 1 even on SSD-backed storage.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

class SystemRoot;

struct BlockDevice {
  bool found = false;         // false: not a block device (tmpfs, overlay, NFS, ...)
  std::string name;           // the whole disk: "nvme0n1", "sda", "vda"
  int rotational = -1;        // 1 spinning, 0 solid state, -1 unknown
  bool virtual_disk = false;  // virtio / Xen: the rotational flag is not trustworthy
  std::string sys_path;       // system path of the disk in /sys/devices
};

BlockDevice find_block_device(const SystemRoot& root, uint32_t major, uint32_t minor);

}  // namespace k3
