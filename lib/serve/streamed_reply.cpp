#include "serve/streamed_reply.h"

#include "serve/prompt_progress.h"
#include "serve/slot_scheduler.h"

namespace k3::serve {

void stream_reply(httplib::Response& res, std::shared_ptr<StreamedReply> reply) {
  struct Progress {
    bool began = false;
    int64_t prefill_sent = -1;  // the progress version the last progress comment said
  };
  auto progress = std::make_shared<Progress>();
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [reply, progress](size_t, httplib::DataSink& sink) {
        std::vector<std::string> out;
        if (!progress->began) {
          out = reply->start();
          progress->began = true;
        }
        std::vector<std::string> fresh = reply->take();
        if (std::string note = prefill_note(reply->lead(), progress->prefill_sent); !note.empty())
          out.push_back(std::move(note));
        for (std::string& e : fresh) out.push_back(std::move(e));
        const Job* failed = reply->failed();
        if (failed) {
          reply->cancel();
          for (std::string& e : reply->failure(*failed)) out.push_back(std::move(e));
        } else if (reply->finished()) {
          for (std::string& e : reply->close()) out.push_back(std::move(e));
        }
        for (const std::string& e : out)
          if (!sink.write(e.data(), e.size())) {  // the client is gone: its slots free at the next pass
            reply->cancel();
            return false;
          }
        if (failed || reply->finished()) sink.done();
        return true;
      },
      [reply](bool success) {
        if (!success) reply->cancel();
      });
}

}  // namespace k3::serve
