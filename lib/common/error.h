// Layer common (bottom): errors and exit codes, files, atomic writes, progress, text helpers.
//
// Errors and the exit codes every k3 tool documents.
//
// Library code throws k3::Error carrying the exit code that a tool should
// return; tools catch it in main(), print "k3-<tool>: <message>" on one line
// and exit with that code. Codes are shared by all tools so scripts can rely
// on them.
#pragma once

#include <stdexcept>
#include <string>

namespace k3 {

enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,      // a bug in k3: please report it
  kUsage = 2,         // bad command-line flags or arguments
  kBadModel = 3,      // model directory, config, index, shard or trunk is invalid
  kBadInput = 4,      // the input on stdin or in an input file is invalid
  kIo = 5,            // a read or write failed (disk full, file vanished, ...)
  kResource = 6,      // refused: not enough memory / disk for the request
  kNetwork = 7,       // download failed after retries, or authentication failed
  kVerify = 8,        // verification found a problem (hash, size, header)
  kInterrupted = 130  // SIGINT/SIGTERM: stopped cleanly, partial work kept
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code), message_(message) {}
  ExitCode code() const { return code_; }
  // The whole message: what() is a C string, cut at a NUL that quoted input may hold.
  const std::string& message() const { return message_; }
  int exit_code() const { return static_cast<int>(code_); }

 private:
  ExitCode code_;
  std::string message_;
};

// Text for --help epilogues and the README: one line per exit code.
const char* exit_codes_help();

}  // namespace k3
