// reference_worker.cpp — interpreter discovery and the JSON-lines exchange with the worker.
#include "tasks/reference_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/log.h"

namespace kevin::tasks {
namespace fs = std::filesystem;

std::vector<std::string> python_candidates(const std::optional<std::string>& override_path) {
  std::vector<std::string> raw;
  if (override_path) return {*override_path};
  if (const char* env = std::getenv("KEVIN_PYTHON"); env != nullptr && *env) return {env};
  if (auto p = sys::find_program("python3")) raw.push_back(p->string());
  raw.push_back("/usr/bin/python3");
  raw.push_back("/usr/local/bin/python3");
  if (auto p = sys::find_program("python")) raw.push_back(p->string());
  std::vector<std::string> unique;
  std::vector<fs::path> seen;
  for (const auto& c : raw) {
    std::error_code ec;
    const fs::path real = fs::canonical(c, ec);
    if (ec) continue;
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
    seen.push_back(real);
    unique.push_back(c);
  }
  return unique;
}

namespace {

// How often a cancellable wait for the worker looks at its flag.
constexpr int kCancelPollMs = 100;

// Reads one line (without the newline) from fd, buffering extra bytes in *pending. Gives up at
// `deadline` (kDeadlineExceeded) or once `cancel` (optional) reads true (kCancelled).
Result<std::string> read_line(int fd, std::string* pending, sys::Deadline deadline,
                              const std::atomic<bool>* cancel = nullptr) {
  while (true) {
    const size_t nl = pending->find('\n');
    if (nl != std::string::npos) {
      std::string line = pending->substr(0, nl);
      pending->erase(0, nl + 1);
      return line;
    }
    if (cancel != nullptr && cancel->load()) return cancelled("the request was cancelled");
    pollfd p{fd, POLLIN, 0};
    int wait_ms = deadline.poll_timeout_ms();  // -1: no deadline
    if (cancel != nullptr) wait_ms = wait_ms < 0 ? kCancelPollMs : std::min(wait_ms, kCancelPollMs);
    const int r = ::poll(&p, 1, wait_ms);
    if (r == 0 && !deadline.expired()) continue;  // a look at `cancel`
    if (r == 0) return deadline_exceeded("the reference worker did not answer in time");
    if (r < 0) {
      if (errno == EINTR) continue;
      return io_error(std::string("poll: ") + std::strerror(errno));
    }
    char buf[65536];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return unavailable("the reference worker exited");
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(std::string("read: ") + std::strerror(errno));
    }
    pending->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Result<ReferenceWorker> ReferenceWorker::start(const WorkerOptions& options) {
  if (!fs::exists(options.script))
    return not_found("reference worker script missing: " + options.script.string());
  std::vector<std::string> failures;
  for (const auto& python : python_candidates(options.python_override)) {
    auto in = sys::make_pipe();
    auto out = sys::make_pipe();
    if (!in.is_ok() || !out.is_ok())
      return io_error("cannot create pipes for the reference worker");
    sys::SpawnOptions o;
    o.argv = {python, "-u", options.script.string()};
    o.env = sys::current_environment();
    o.env.push_back("PYTHONDONTWRITEBYTECODE=1");
    o.env.push_back("NCCL_NVLS_ENABLE=0");
    o.fds = {{0, in->read.get()}, {1, out->write.get()}, {2, STDERR_FILENO}};
    auto child = sys::spawn(o);
    if (!child.is_ok()) {
      failures.push_back(python + " (" + child.status().message() + ")");
      continue;
    }
    ReferenceWorker w;
    w.options_ = options;
    w.python_ = python;
    w.child_ = std::move(child).value();
    w.to_worker_ = std::move(in->write);
    w.from_worker_ = std::move(out->read);
    in->read.reset();
    out->write.reset();
    auto hello_line =
        read_line(w.from_worker_.get(), &w.pending_, sys::Deadline::after(options.start_timeout));
    auto hello = hello_line.is_ok() ? parse_json(*hello_line) : Result<Json>(hello_line.status());
    if (hello.is_ok() && hello->value("hello", false)) {
      w.torch_version_ = hello->value("torch_version", "");
      w.cuda_devices_ = hello->value("cuda_devices", std::vector<std::string>{});
      KEVIN_LOG(info) << "reference worker: " << python << " (torch " << w.torch_version_ << ")";
      return w;
    }
    std::string why =
        hello.is_ok() ? hello->value("error", "no greeting") : hello.status().message();
    failures.push_back(python + " (" + why + ")");
  }
  std::string tried;
  for (const auto& f : failures) tried += (tried.empty() ? "" : "; ") + f;
  return failed_precondition(
      "no Python interpreter with PyTorch was found (tried: " + tried +
      "). Install PyTorch, or name an interpreter with --python or KEVIN_PYTHON");
}

std::string ReferenceWorker::device_name(const std::string& backend, int ordinal) const {
  if (backend != "cuda") return "cpu";
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= cuda_devices_.size())
    return "cuda:" + std::to_string(ordinal);
  return cuda_devices_[static_cast<size_t>(ordinal)];
}

Result<Json> ReferenceWorker::exchange(const Json& request, std::chrono::seconds limit,
                                       const std::atomic<bool>* cancel, const Interim& interim) {
  // Any failure here leaves the channel out of step (a late reply would answer the next
  // request), so the worker is stopped; the provider starts a fresh one next time.
  const auto fail = [this](const Status& s) {
    child_.kill_and_reap();
    return s;
  };
  const auto send = [this](const Json& message, sys::Deadline deadline) {
    const std::string line = dump_json(message) + "\n";
    return sys::write_all(to_worker_.get(), line.data(), line.size(), deadline);
  };
  auto deadline = sys::Deadline::after(limit);
  if (Status s = send(request, deadline); !s.is_ok()) return fail(s);
  for (;;) {
    auto line = read_line(from_worker_.get(), &pending_, deadline, cancel);
    if (!line.is_ok()) return fail(line.status());
    auto doc = parse_json(*line);
    if (!doc.is_ok() || !doc->is_object())
      return fail(internal_error("the reference worker sent a malformed reply"));
    if (!doc->contains("interim")) return doc;
    if (!interim)
      return fail(internal_error("the reference worker sent an unexpected interim line"));
    if (Status s = interim(*doc); !s.is_ok()) return fail(s);
    // The wait in `interim` (for the device, say) is not the worker's time.
    deadline = sys::Deadline::after(limit);
    if (Status s = send(Json{{"go", true}}, deadline); !s.is_ok()) return fail(s);
  }
}

Result<Json> ReferenceWorker::call(const Json& request, const fs::path& task,
                                   std::chrono::seconds limit, const std::atomic<bool>* cancel,
                                   const Interim& interim) {
  auto reply = exchange(request, limit, cancel, interim);
  if (!reply.is_ok()) {
    if (reply.status().code() == StatusCode::kCancelled)
      return cancelled("task " + task.string() + ": cancelled; the reference worker was stopped");
    if (reply.status().code() != StatusCode::kDeadlineExceeded) return reply.status();
    // exchange() has killed the worker; the provider starts a new one for the next request.
    return deadline_exceeded(
        "task " + task.string() + ": get_inputs/forward did not finish within " +
        std::to_string(limit.count()) + " s; the reference worker was stopped");
  }
  if (!reply->value("ok", false)) {
    const std::string error = reply->value("error", "unknown error");
    if (reply->value("task_error", false))
      return invalid_argument("task " + task.string() + ": " + error);
    return internal_error("reference worker: " + error + "\n" + reply->value("traceback", ""));
  }
  return reply;
}

Result<Json> ReferenceWorker::describe(const fs::path& task, const std::string& backend) {
  return call({{"op", "describe"}, {"task", fs::absolute(task).string()}, {"backend", backend}},
              task, options_.describe_timeout);
}

Result<std::vector<std::string>> ReferenceWorker::check(const fs::path& task,
                                                        const std::string& backend) {
  const Json request = {
      {"op", "check"}, {"task", fs::absolute(task).string()}, {"backend", backend}};
  KEVIN_ASSIGN_OR_RETURN(Json reply, call(request, task, options_.check_timeout));
  return reply.value("flags", std::vector<std::string>{});
}

namespace {

// torch.compile came with PyTorch 2.0: a version string ("1.13.0", "2.11.0+cu130") whose
// major number is at least 2.
bool has_torch_compile(const std::string& version) {
  int major = 0;
  for (char c : version) {
    if (c < '0' || c > '9') break;
    major = major * 10 + (c - '0');
    if (major > 1000) break;
  }
  return major >= 2;
}

Json task_request_json(const char* op, const TaskRequest& r) {
  return {{"op", op},
          {"task", fs::absolute(r.task).string()},
          {"backend", r.backend},
          {"device", r.device},
          {"seeds", r.seeds},
          {"timing_seeds", r.timing_seeds},
          {"timing_bytes_budget", r.timing_bytes_budget},
          {"min_timing_sets", r.min_timing_sets}};
}

}  // namespace

Result<engine::ReferenceSet> ReferenceWorker::prepare(const PrepareRequest& r) {
  Json request = task_request_json("prepare", r);
  request["out"] = r.out_dir.string();
  KEVIN_RETURN_IF_ERROR(call(request, r.task, options_.prepare_timeout, r.cancel).status());
  return engine::load_reference(r.out_dir);
}

Result<engine::TimingStats> ReferenceWorker::baseline(const BaselineRequest& r) {
  if (r.kind == engine::BaselineKind::kCompile && !has_torch_compile(torch_version_)) {
    return failed_precondition("a torch.compile baseline needs PyTorch 2.0 or later; " + python_ +
                               " has " + torch_version_ +
                               " (pass --python with a newer one, or --baseline eager)");
  }
  Json request = task_request_json("baseline", r);
  request["mode"] = engine::baseline_kind_name(r.kind);
  request["timing"] = {
      {"budget_ms", r.budget_ms}, {"warmup", r.warmup}, {"min_calls", r.min_calls}};
  Interim built;
  if (r.sets_built) {
    request["wait_to_time"] = true;
    built = [&r](const Json&) { return r.sets_built(); };
  }
  KEVIN_ASSIGN_OR_RETURN(Json reply,
                         call(request, r.task, options_.baseline_timeout, r.cancel, built));
  if (!reply.contains("baseline"))
    return internal_error("reference worker: baseline reply without times");
  return engine::timing_stats_from_json(reply["baseline"]);
}

Result<engine::DevicePeaks> ReferenceWorker::peaks(const std::string& backend, int device) {
  const Json request = {{"op", "peaks"}, {"backend", backend}, {"device", device}};
  auto reply = exchange(request, options_.peaks_timeout);
  if (!reply.is_ok()) {
    if (reply.status().code() != StatusCode::kDeadlineExceeded) return reply.status();
    return deadline_exceeded("measuring the peak rates of " + device_name(backend, device) +
                             " took over " + std::to_string(options_.peaks_timeout.count()) +
                             " s; the reference worker was stopped");
  }
  if (!reply->value("ok", false))
    return internal_error("reference worker: peaks: " + reply->value("error", "unknown error"));
  return engine::device_peaks_from_json(*reply);
}

}  // namespace kevin::tasks
