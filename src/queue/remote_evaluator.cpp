// remote_evaluator.cpp — claim (SET NX) → XADD → XREAD BLOCK on the attempt's result stream.
// A producer that finds the job claimed by another waits on that claim's attempt instead.
// While it waits it re-reads the workers' heartbeats: a stream no live worker takes fails soon.
#include "queue/remote_evaluator.h"

#include <algorithm>
#include <random>
#include <sstream>
#include <thread>

#include "core/file.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/sha256.h"

namespace kevin::queue {
namespace {

using Clock = std::chrono::steady_clock;

std::string new_attempt() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(rng()));
  return id;
}

// The first entry's field "result" of an XREAD reply, if any.
std::optional<std::string> first_result(const RedisReply& reply) {
  if (reply.kind != RedisReply::Kind::kArray || reply.elements.empty()) return std::nullopt;
  const RedisReply& stream = reply.elements[0];  // [key, entries]
  if (stream.elements.size() < 2 || stream.elements[1].elements.empty()) return std::nullopt;
  const RedisReply& fields = stream.elements[1].elements[0].elements[1];  // [id, [f, v, ...]]
  for (size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
    if (fields.elements[i].str == "result") return fields.elements[i + 1].str;
  }
  return std::nullopt;
}

// "60 s", "1.5 s": a wait as the messages state it.
std::string seconds_text(std::chrono::milliseconds wait) {
  std::ostringstream o;
  o << static_cast<double>(wait.count()) / 1000 << " s";
  return o.str();
}

// How often served() checks the heartbeats again: a few times within the worker wait.
std::chrono::milliseconds refresh_every(std::chrono::milliseconds worker_wait) {
  return std::clamp(worker_wait / 4, std::chrono::milliseconds(100),
                    std::chrono::milliseconds(5000));
}

}  // namespace

Result<std::vector<Json>> live_heartbeats(RedisConnection& c, const Keys& keys) {
  KEVIN_ASSIGN_OR_RETURN(std::vector<std::string> names, scan_keys(c, keys.worker_pattern()));
  std::sort(names.begin(), names.end());
  std::vector<Json> beats;
  for (const std::string& name : names) {
    KEVIN_ASSIGN_OR_RETURN(RedisReply value, c.command({"GET", name}));
    if (value.is_nil()) continue;  // expired between the scan and the read
    auto beat = parse_json(value.str);
    if (beat.is_ok() && beat->is_object()) beats.push_back(std::move(*beat));
  }
  return beats;
}

Result<std::vector<WorkerState>> live_workers(RedisConnection& c, const Keys& keys) {
  KEVIN_ASSIGN_OR_RETURN(std::vector<Json> beats, live_heartbeats(c, keys));
  std::vector<WorkerState> live;
  for (const Json& beat : beats) {
    if (auto w = worker_state_from_json(beat); w.is_ok()) live.push_back(std::move(*w));
  }
  std::sort(live.begin(), live.end(),
            [](const WorkerState& a, const WorkerState& b) { return a.name < b.name; });
  return live;
}

BackendChoice choose_backend(const std::vector<WorkerState>& live) {
  const size_t cuda = static_cast<size_t>(std::count_if(
      live.begin(), live.end(), [](const WorkerState& w) { return w.backend == "cuda"; }));
  const std::string workers = std::to_string(live.size()) + " live worker" +
                              (live.size() == 1 ? "" : "s") + " (" + describe_workers(live) + ")";
  if (live.empty()) return {"cuda", "no live worker to follow, so the default"};
  if (cuda > 0) return {"cuda", workers + ", " + std::to_string(cuda) + " on CUDA"};
  return {"cpu", workers + ", none on CUDA (--backend cuda to wait for GPU workers instead)"};
}

Result<std::unique_ptr<RemoteEvaluator>> RemoteEvaluator::create(RemoteOptions options) {
  std::unique_ptr<RemoteEvaluator> e(new RemoteEvaluator(std::move(options)));
  e->keys_.prefix = e->options_.address.prefix;
  KEVIN_ASSIGN_OR_RETURN(auto c, RedisConnection::connect(e->options_.address));
  KEVIN_RETURN_IF_ERROR(c->command({"PING"}).status());
  KEVIN_ASSIGN_OR_RETURN(std::vector<WorkerState> live, live_workers(*c, e->keys_));
  e->remember_takers(live);
  const std::string stream = e->options_.stream_model();
  const auto serving =
      std::find_if(live.begin(), live.end(), [&](const WorkerState& w) { return w.takes(stream); });
  if (serving == live.end()) {
    KEVIN_LOG(warn) << "queue: " << e->unserved(live) << "; a job waits "
                    << seconds_text(e->options_.worker_wait) << " for one, then fails";
  } else {
    // Prompts name the device the workers judge on ("NVIDIA H200"), known before any result.
    MutexLock lock(e->mu_);
    e->device_name_ = serving->device;
  }
  e->give_back(std::move(c));
  return e;
}

std::string RemoteEvaluator::device_name() const {
  MutexLock lock(mu_);
  if (!device_name_.empty()) return device_name_;
  return options_.model.empty() ? (options_.backend == "cpu" ? "CPU" : "remote GPU")
                                : options_.model;
}

Result<std::string> RemoteEvaluator::problem(const tasks::TaskInfo& task) {
  KEVIN_ASSIGN_OR_RETURN(std::string source, read_file(task.path));
  const std::string key = sha256_hex(source);
  {
    MutexLock lock(mu_);
    if (auto it = problems_.find(key); it != problems_.end()) return it->second;
  }
  Job job;
  job.kind = Job::Kind::kProblem;
  job.task_id = task.id;
  job.task_source = source;
  KEVIN_ASSIGN_OR_RETURN(JobResult r, run(std::move(job)));
  MutexLock lock(mu_);
  problems_[key] = r.problem;
  return r.problem;
}

Result<engine::EvalResult> RemoteEvaluator::evaluate(const tasks::TaskInfo& task,
                                                     const std::string& source) {
  Job job;
  job.task_id = task.id;
  KEVIN_ASSIGN_OR_RETURN(job.task_source, read_file(task.path));
  job.candidate = source;
  job.judging = options_.judging;
  job.format = options_.format == "auto" ? engine::format_name(engine::detect_format(source))
                                         : options_.format;
  KEVIN_ASSIGN_OR_RETURN(JobResult r, run(std::move(job)));
  if (!r.eval)
    return internal_error("worker " + r.worker + " answered an evaluation without a result");
  MutexLock lock(mu_);
  if (device_name_.empty()) device_name_ = r.eval->device_name;
  return *r.eval;
}

Result<JobResult> RemoteEvaluator::run(Job job) {
  job.id = job_id(job.kind, options_.stream_model(), job.task_source, job.candidate, job.judging,
                  job.format);
  KEVIN_ASSIGN_OR_RETURN(auto c, take());
  const std::string ttl = std::to_string(options_.result_ttl.count());
  // Claim and queue in one step (a script runs atomically), so a producer dying between the
  // two cannot leave a claim without a job; a claim held by another producer is waited on.
  static constexpr const char* kClaimAndQueue =
      "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then "
      "redis.call('XADD', KEYS[2], '*', 'job', ARGV[3]) return ARGV[1] end "
      "return redis.call('GET', KEYS[1])";
  std::string attempt;
  while (attempt.empty()) {
    job.attempt = new_attempt();
    KEVIN_ASSIGN_OR_RETURN(RedisReply holder,
                           persist(*c, {"EVAL", kClaimAndQueue, "2", keys_.claim(job.id),
                                        keys_.jobs(options_.stream_model()), job.attempt, ttl,
                                        dump_json(to_json(job))}));
    if (!holder.is_nil()) attempt = holder.str;  // nil: the other claim ended just now; try again
  }
  const std::string done = keys_.done(job.id, attempt);
  const std::string stream = options_.stream_model();
  const auto deadline = Clock::now() + options_.wait_limit;
  auto served_at = Clock::now();  // the last time a live worker took the job's stream
  while (Clock::now() < deadline) {
    KEVIN_ASSIGN_OR_RETURN(
        RedisReply reply,
        persist(*c, {"XREAD", "COUNT", "1", "BLOCK", "2000", "STREAMS", done, "0"},
                std::chrono::seconds(10)));
    const auto text = first_result(reply);
    if (!text) {
      // While Redis is away nobody is known not to take it: only a wait seen whole counts.
      auto taken = served(*c);
      if (!taken.is_ok() || *taken) {
        served_at = Clock::now();
      } else if (Clock::now() - served_at >= options_.worker_wait) {
        // Read afresh: the message names the workers there are now.
        auto live = live_workers(*c, keys_);
        if (live.is_ok()) remember_takers(*live);
        if (live.is_ok() && std::none_of(live->begin(), live->end(),
                                         [&](const WorkerState& w) { return w.takes(stream); })) {
          return failed_precondition("job " + job.id.substr(0, 12) + " for " + job.task_id +
                                     " waited " + seconds_text(options_.worker_wait) + ": " +
                                     unserved(*live));
        }
        served_at = Clock::now();  // one has just come (or Redis is away)
      }
      continue;
    }
    give_back(std::move(c));
    KEVIN_ASSIGN_OR_RETURN(Json j, parse_json(*text));
    KEVIN_ASSIGN_OR_RETURN(JobResult r, job_result_from_json(j));
    if (r.status == JobResult::Status::kHarnessError)
      return internal_error("worker " + r.worker + ": " + r.error);
    if (r.status == JobResult::Status::kDeadLetter) {
      return internal_error("job " + job.id.substr(0, 12) + " for " + job.task_id +
                            " was dead-lettered: " + r.error);
    }
    return r;
  }
  return deadline_exceeded("no worker answered job " + job.id.substr(0, 12) + " for " +
                           job.task_id + " in " + std::to_string(options_.wait_limit.count()) +
                           " s (are workers running on " + keys_.jobs(options_.stream_model()) +
                           "?)");
}

Result<bool> RemoteEvaluator::served(RedisConnection& c) {
  std::vector<std::string> takers;
  {
    MutexLock lock(mu_);
    if (checked_at_ && Clock::now() - *checked_at_ < refresh_every(options_.worker_wait))
      return !takers_.empty();
    takers = takers_;
  }
  if (!takers.empty()) {
    std::vector<std::string> args = {"EXISTS"};
    for (const std::string& name : takers) args.push_back(keys_.worker(name));
    KEVIN_ASSIGN_OR_RETURN(RedisReply alive, c.command(args));
    if (alive.integer > 0) {
      MutexLock lock(mu_);
      checked_at_ = Clock::now();
      return true;
    }
  }
  KEVIN_ASSIGN_OR_RETURN(std::vector<WorkerState> live, live_workers(c, keys_));
  remember_takers(live);
  MutexLock lock(mu_);
  return !takers_.empty();
}

void RemoteEvaluator::remember_takers(const std::vector<WorkerState>& live) {
  const std::string stream = options_.stream_model();
  std::vector<std::string> takers;
  for (const WorkerState& w : live) {
    if (w.takes(stream)) takers.push_back(w.name);
  }
  MutexLock lock(mu_);
  takers_ = std::move(takers);
  checked_at_ = Clock::now();
}

std::string RemoteEvaluator::unserved(const std::vector<WorkerState>& live) const {
  const std::string stream = options_.stream_model();
  std::string out = "no live worker takes " + keys_.jobs(stream) +
                    " (live workers: " + describe_workers(live) +
                    "); start one that does (kevin worker --queue " + options_.address.url();
  if (options_.model.empty() || options_.model == "cpu") {
    out += " --backend " + options_.backend +
           (options_.backend == "cuda" ? " on a machine with a GPU)" : ")");
  } else {
    out += " on a machine whose GPUs are " + options_.model + ")";
  }
  for (const WorkerState& w : live) {
    if (!options_.model.empty() && w.model != options_.model) {
      return out + " or judge on a live worker's device with --queue-model \"" + w.device + "\"";
    }
    if (options_.model.empty() && w.backend != options_.backend) {
      return out + " or judge on the live workers with --backend " + w.backend;
    }
  }
  return out;
}

Result<std::unique_ptr<RedisConnection>> RemoteEvaluator::take() {
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return RedisConnection::connect(options_.address);
}

void RemoteEvaluator::give_back(std::unique_ptr<RedisConnection> c) {
  MutexLock lock(mu_);
  idle_.push_back(std::move(c));
}

Result<RedisReply> RemoteEvaluator::persist(RedisConnection& c,
                                            const std::vector<std::string>& args,
                                            std::chrono::milliseconds read_timeout) {
  auto backoff = std::chrono::milliseconds(100);
  const auto give_up = Clock::now() + options_.wait_limit;
  while (true) {
    Result<RedisReply> r = c.command(args, read_timeout);
    if (r.is_ok() || r.status().code() != StatusCode::kUnavailable || Clock::now() > give_up)
      return r;
    KEVIN_LOG(warn) << "queue: " << r.status().message() << "; reconnecting in " << backoff.count()
                    << " ms";
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, options_.reconnect_backoff_max);
    (void)c.reconnect();
  }
}

}  // namespace kevin::queue
