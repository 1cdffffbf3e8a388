// One line on stderr per HTTP request (but a successful GET of /health or
// /metrics, a monitor's poll): method, path, status, and for a
// request that generated its prompt, cached and generated ids, the time to
// its first id and in all; those times also go to /metrics' histograms.
//
// httplib runs a request's pre-routing handler, its route, its streamed
// reply and its logger on one thread, so the request being answered is a
// record of that thread: begin() opens it as the request arrives, the
// generating routes attach their jobs (submit_job), end() writes it.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "serve/serve_metrics.h"

namespace k3::serve {

class Job;

namespace request_log {

void begin();
// A job the route on this thread submitted (several for a request asking for several replies).
void attach(std::shared_ptr<const Job> job);
// Writes the request's line to `out`, as "k3-serve: POST /v1/chat/completions
// 200 prompt=812 cached=640 generated=64 first_token=0.412s total=3.201s"
// (the ids and first_token only for a request that generated;
// "first_token=-" when no id came; the method and path with control bytes
// shown as '?'), observes the times in `metrics` and closes the record. A
// successful GET of /health or /metrics writes no line.
void end(const std::string& method, const std::string& path, int status, ServeMetrics& metrics,
         std::FILE* out = stderr);

}  // namespace request_log
}  // namespace k3::serve
