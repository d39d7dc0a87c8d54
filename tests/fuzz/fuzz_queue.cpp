// fuzz_queue.cpp — fuzz target: what the queue reads from Redis (anyone who can write to the
// deployment's Redis can put text there): a job as a worker parses it, a result as a producer
// parses it, the evaluation inside it included.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json.h"
#include "queue/job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = kevin::parse_json(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!doc.is_ok()) return 0;
  if (auto job = kevin::queue::job_from_json(*doc); job.is_ok()) (void)kevin::queue::to_json(*job);
  if (auto result = kevin::queue::job_result_from_json(*doc); result.is_ok())
    (void)kevin::queue::to_json(*result);
  return 0;
}
