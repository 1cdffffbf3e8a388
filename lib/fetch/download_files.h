// The files a download writes on the local side, kept safe: every .part and
// finished file is opened without following a link and must be a regular
// file, every directory on the way must be a real directory inside the
// target, a repository file may not take a name the downloader writes itself,
// and a full disk is reported as such (with what to do) rather than as a
// generic write failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

// What lstat says about a download name (a link is reported, never followed).
struct DownloadPathStat {
  bool exists = false;
  bool regular = false;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};
DownloadPathStat stat_path(const std::string& path);

// Free bytes on the file system holding `dir`. Throws Error(kIo).
// Test hook: K3_FETCH_FREE_BYTES pretends the file system has that much room.
uint64_t free_bytes(const std::string& dir);

// How many of `n` bytes may be written now; fewer means "disk full".
// Test hook: K3_FETCH_FAIL_WRITE_AFTER=<bytes> makes writes fail with ENOSPC
// once this process has written that many bytes, to exercise the full-disk
// path without a real full disk. Without it, always n.
size_t write_budget_take(size_t n);
// Writes n bytes at `at`, as many as the write budget allows; 0, or the
// errno that stopped it (ENOSPC when the budget ran out).
int write_budgeted(int fd, const char* data, size_t n, uint64_t at);

// Makes a rename in the directory of `path` durable.
void fsync_dir_of(const std::string& path);

// Opens a file the downloader owns (a .part, or a finished file to re-hash)
// without following a link and without blocking on a FIFO, and refuses
// anything but a regular file: a planted link or device is never written
// through or renamed into place. Throws Error(kIo).
int open_own_file(const std::string& path, int flags);

// Every directory between `dir` and the file `rel` must be a real directory,
// not a link leading out of the download directory. Throws Error(kIo).
void check_no_linked_parents(const std::string& dir, const std::string& rel);

// A repository file must not share a name with what the downloader writes
// itself (the manifest and its temporaries, any file's .part): it would be
// overwritten, or taken for a partial download, and break verify. Throws
// Error(kNetwork) naming the file and the --exclude that leaves it out.
void refuse_own_name(const std::string& path, const std::string& repo);

// Throws Error(kIo) for a failed write of `path` with errno `e`; a full disk
// (ENOSPC, EDQUOT) says that finished files are kept and how to resume.
[[noreturn]] void throw_write_error(const std::string& path, int e);

}  // namespace k3
