// A reply streamed as server-sent events, whichever API's events they are:
// the one content provider /v1/chat/completions, /v1/completions and
// /v1/messages hand to httplib. Each call writes, in order, the reply's
// opening events (the first call only), a progress comment while the prompt
// is evaluated (serve/prompt_progress.h's prefill_note: clients skip
// comment lines, the chat page shows them), the events of the ids made
// since, and then either the failure's events (a job failed: the headers are
// sent, so the error is an event) or, once every job is done, the closing
// events. A client that goes away cancels the jobs (their slots free at the
// next pass), as does a stream httplib ends unsuccessfully.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

namespace k3::serve {

class Job;

// What differs between the APIs: their events and how many jobs make a reply.
class StreamedReply {
 public:
  virtual ~StreamedReply() = default;
  virtual std::vector<std::string> start() = 0;
  // The events of the ids made since the last call; waits a short while for some.
  virtual std::vector<std::string> take() = 0;
  // The job whose prompt evaluation the progress comments report.
  virtual const Job& lead() const = 0;
  virtual bool finished() const = 0;
  // The first failed job (nullptr when none failed).
  virtual const Job* failed() const = 0;
  virtual std::vector<std::string> failure(const Job& job) = 0;
  virtual std::vector<std::string> close() = 0;
  virtual void cancel() = 0;
};

// Streams `reply` as the body of `res` (text/event-stream, no-cache).
void stream_reply(httplib::Response& res, std::shared_ptr<StreamedReply> reply);

}  // namespace k3::serve
