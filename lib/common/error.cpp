#include "common/error.h"

namespace k3 {

const char* exit_codes_help() {
  return "Exit codes:\n"
         "  0    success\n"
         "  1    internal error (a bug in k3)\n"
         "  2    usage error (bad flags or arguments)\n"
         "  3    invalid model: config, index, shard, dtype/shape or trunk mismatch\n"
         "  4    invalid input: token ids, text, or an input file\n"
         "  5    I/O error: a read or write failed (disk full, truncated file)\n"
         "  6    refused: the request needs more memory or disk than is available\n"
         "  7    network or authentication failure\n"
         "  8    verification failed\n"
         "  130  interrupted (finished work is kept)\n";
}

}  // namespace k3
