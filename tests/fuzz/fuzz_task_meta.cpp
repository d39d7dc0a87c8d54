// fuzz_task_meta.cpp — fuzz target: what kevin reads about a task: its source's KEVIN_FAMILY
// line (task files, server and queue clients' reference code), the reference worker's describe
// reply that becomes the argument list of a prompt, and a suite's splits.json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json.h"
#include "tasks/problem.h"
#include "tasks/suite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)kevin::tasks::task_family(text);
  auto doc = kevin::parse_json(text);
  if (!doc.is_ok()) return 0;
  if (auto args = kevin::tasks::argument_list_from_json(*doc); args.is_ok()) {
    (void)kevin::tasks::format_argument_list(*args);
    (void)kevin::tasks::to_json(*args);
  }
  if (auto splits = kevin::tasks::splits_from_json(*doc); splits.is_ok())
    (void)kevin::tasks::to_json(*splits);
  return 0;
}
