// long_wait.cpp — the process's list of long waits and the duration files beside cached work.
#include "core/long_wait.h"

#include <charconv>
#include <map>

#include "core/file.h"
#include "core/mutex.h"

namespace kevin {
namespace {

struct Entry {
  std::string what;
  std::chrono::steady_clock::time_point start;
  std::optional<std::chrono::seconds> last_time;
};

struct Registry {
  Mutex mu;
  uint64_t next_id GUARDED_BY(mu) = 0;
  std::map<uint64_t, Entry> waits GUARDED_BY(mu);  // by id: registration order
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: waits may end during exit
  return *r;
}

}  // namespace

std::vector<WaitInfo> current_waits() {
  Registry& r = registry();
  const auto now = std::chrono::steady_clock::now();
  std::vector<WaitInfo> out;
  MutexLock lock(r.mu);
  for (const auto& [id, e] : r.waits) {
    out.push_back(
        {e.what, std::chrono::duration_cast<std::chrono::seconds>(now - e.start), e.last_time});
  }
  return out;
}

std::optional<std::chrono::seconds> recorded_duration(const std::filesystem::path& file) {
  auto text = read_file(file, 64);
  if (!text.is_ok()) return std::nullopt;
  long long s = -1;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, s);
  if (ec != std::errc() || s < 0 || (ptr != end && *ptr != '\n')) return std::nullopt;
  return std::chrono::seconds(s);
}

Status record_duration(const std::filesystem::path& file, std::chrono::seconds d) {
  return write_file_atomic(file, std::to_string(d.count()) + "\n");
}

LongWait::LongWait(std::string what, std::filesystem::path duration_file)
    : duration_file_(std::move(duration_file)), last_time_(recorded_duration(duration_file_)) {
  Registry& r = registry();
  MutexLock lock(r.mu);
  id_ = r.next_id++;
  r.waits.emplace(id_, Entry{std::move(what), start_, last_time_});
}

LongWait::~LongWait() {
  Registry& r = registry();
  MutexLock lock(r.mu);
  r.waits.erase(id_);
}

Status LongWait::finish() const {
  return record_duration(duration_file_, std::chrono::round<std::chrono::seconds>(
                                             std::chrono::steady_clock::now() - start_));
}

}  // namespace kevin
