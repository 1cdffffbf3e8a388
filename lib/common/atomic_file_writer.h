// A file written as a stream and published atomically.
//
// Bytes go to a temporary file next to `path`, created exclusively under a
// random name (O_EXCL|O_NOFOLLOW: a link or file planted at a predictable
// name is never written through); commit() fsyncs it and renames it over
// `path`. If commit() is never reached (an error, an exception, a signal that
// ends the process), the temporary is removed and any previous `path` is
// untouched: readers see the old file or the complete new one.
//
// What is already at `path` decides what happens (OutputPolicy): a regular
// file is replaced; a symbolic link, directory, socket or block device is
// never replaced (the writer refuses, naming it); a character device or FIFO
// (/dev/null, /dev/stdout, a named pipe) is written through, without a
// temporary, where the caller allows it.
// For outputs too large to build in memory first (state files of long
// contexts); small outputs can use write_file_atomic().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

enum class OutputPolicy {
  kRegularFile,   // files a tool keeps in its own directories (trunk, shards, manifests)
  kFileOrStream,  // a user-named output (--logits, --state-out, --stats-json): devices and FIFOs written through
};

// Checks that `path` may be written under `policy` before any work is done:
// its directory exists, and what is at `path` (if anything) is a regular file
// or, under kFileOrStream, a character device or FIFO (a symlink to one
// counts as one: /dev/stdout). Throws k3::Error(kIo) naming `path` otherwise.
// Returns true when the output is a stream (written through, not replaced).
bool check_output_path(const std::string& path, OutputPolicy policy);

class AtomicFileWriter {
 public:
  // Creates the temporary file; throws k3::Error(kIo) naming `path`.
  explicit AtomicFileWriter(const std::string& path, OutputPolicy policy = OutputPolicy::kRegularFile);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();  // discards the temporary unless committed

  // Appends at the end of what write() has written so far.
  void write(const void* data, size_t n);
  // For files filled out of order: sets the size (extending leaves holes)
  // and writes at an absolute offset. Both flush write()'s buffer first.
  // Not for streams (k3::Error kInternal).
  void resize(uint64_t size);
  void write_at(uint64_t offset, const void* data, size_t n);
  // fsync, then rename over `path` (streams: flush only). Throws kIo when
  // something that is not a regular file appeared at `path` meanwhile.
  void commit();
  // commit() without the rename: the complete temporary stays under
  // temp_path() for the caller to rename (several files published together).
  void commit_to_temp();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }
  bool is_stream() const { return stream_; }

 private:
  void flush();
  void put(const void* data, size_t n, uint64_t offset);
  void fail(const std::string& what, int err);
  void discard();
  void finish_writing();

  std::string path_, tmp_;
  int fd_ = -1;
  int lock_fd_ = -1;  // holds the temporary's flock until destruction (also after commit_to_temp)
  bool stream_ = false;
  std::vector<char> buf_;
  size_t used_ = 0;
  uint64_t written_ = 0;  // bytes already in the temporary file
  bool committed_ = false;
};

// Creates `path` exclusively for writing (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC,
// mode 0644) and returns its descriptor; throws k3::Error(kIo) naming it.
int create_exclusive(const std::string& path);
// A name next to `path` no one can predict: `path`.tmp.<16 hex digits>.
std::string random_temp_name(const std::string& path);

struct StaleTemporaries {
  uint64_t files = 0;
  uint64_t bytes = 0;  // disk blocks they held
};
// Removes what a killed writer of `path` left: regular files named
// `path`.tmp.<16 hex digits> owned by this user that no live writer holds
// (an AtomicFileWriter keeps an exclusive flock on its temporary until it is
// destroyed). Links and other files at such names are left alone; the name
// is re-checked to be the same file before it is removed.
StaleTemporaries remove_stale_temporaries(const std::string& path);
// Renames `from` over `to` unless `to` exists and is not a regular file
// (a symlink, a directory, a device); throws k3::Error(kIo) naming `to`.
void rename_over_regular(const std::string& from, const std::string& to);

}  // namespace k3
