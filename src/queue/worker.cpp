// worker.cpp — the consumer-group protocol: XAUTOCLAIM of stale entries, XREADGROUP of new
// ones, XPENDING delivery counts, XCLAIM to keep the lease of a job still being evaluated,
// results on the attempt's stream, XACK last (a worker that dies before it leaves the job to
// be reclaimed; one that dies after leaves a result, so a redo is only a duplicate write).
#include "queue/worker.h"

#include <deque>
#include <thread>
#include <vector>

#include "core/file.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/parallel.h"
#include "core/sha256.h"
#include "tasks/suite.h"

namespace kevin::queue {
namespace {

using Clock = std::chrono::steady_clock;

// [[id, [field, value, ...]], ...] → each entry's id and its "job" field ("" when absent).
std::vector<std::pair<std::string, std::string>> entries_of(const RedisReply& entries) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const RedisReply& e : entries.elements) {
    if (e.elements.size() < 2) continue;
    std::string job;
    const RedisReply& fields = e.elements[1];
    for (size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
      if (fields.elements[i].str == "job") job = fields.elements[i + 1].str;
    }
    out.emplace_back(e.elements[0].str, job);
  }
  return out;
}

// Jobs finished per minute between the oldest and newest sample (0 before two samples).
double per_minute(const std::deque<std::pair<Clock::time_point, uint64_t>>& samples) {
  if (samples.size() < 2) return 0;
  const double minutes =
      std::chrono::duration<double>(samples.back().first - samples.front().first).count() / 60;
  return minutes > 0 ? static_cast<double>(samples.back().second - samples.front().second) / minutes
                     : 0;
}

}  // namespace

Worker::Worker(env::Evaluator* evaluator, WorkerOptions options)
    : evaluator_(evaluator), options_(std::move(options)) {
  keys_.prefix = options_.address.prefix;
}

Status Worker::run(const std::atomic<bool>& stop) {
  stop_ = &stop;
  KEVIN_ASSIGN_OR_RETURN(auto probe, RedisConnection::connect(options_.address));
  KEVIN_RETURN_IF_ERROR(ensure_groups(*probe));
  std::error_code ec;
  std::filesystem::create_directories(options_.task_dir, ec);
  KEVIN_LOG(info) << "worker " << options_.name << ": taking jobs from "
                  << keys_.jobs(options_.model) << " and "
                  << keys_.jobs(any_model(evaluator_->backend())) << " on "
                  << options_.address.url() << " (" << options_.jobs << " at once)";
  // Workers: the job takers, then the lease renewer and the heartbeat.
  const size_t takers = static_cast<size_t>(std::max(options_.jobs, 1));
  run_workers(takers + 2, [&](size_t w) {
    if (w < takers) {
      serve(stop);
    } else if (w == takers) {
      renew_leases(stop);
    } else {
      beat(stop);
    }
  });
  KEVIN_LOG(info) << "worker " << options_.name << ": stopped after " << finished_.load()
                  << " jobs";
  return Status::ok();
}

Status Worker::ensure_groups(RedisConnection& c) {
  for (const std::string& model : {options_.model, any_model(evaluator_->backend())}) {
    auto r = c.command({"XGROUP", "CREATE", keys_.jobs(model), kGroup, "0", "MKSTREAM"});
    if (!r.is_ok() && r.status().message().find("BUSYGROUP") == std::string::npos)
      return r.status();
  }
  return Status::ok();
}

Result<RedisReply> Worker::persist(RedisConnection& c, const std::vector<std::string>& args,
                                   const std::atomic<bool>& stop,
                                   std::chrono::milliseconds read_timeout) {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    Result<RedisReply> r = c.command(args, read_timeout);
    const bool lost_group = !r.is_ok() && r.status().message().find("NOGROUP") != std::string::npos;
    if (r.is_ok() || (r.status().code() != StatusCode::kUnavailable && !lost_group) || stop.load())
      return r;
    if (!lost_group) {
      KEVIN_LOG(warn) << "worker " << options_.name << ": " << r.status().message()
                      << "; reconnecting in " << backoff.count() << " ms";
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, options_.reconnect_backoff_max);
      if (!c.reconnect().is_ok()) continue;
    }
    (void)ensure_groups(c);  // a Redis that lost its data (no AOF) lost the groups too
  }
}

void Worker::serve(const std::atomic<bool>& stop) {
  std::unique_ptr<RedisConnection> c;
  while (!stop.load()) {
    if (!c) {
      auto connected = RedisConnection::connect(options_.address);
      if (!connected.is_ok()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      c = std::move(connected).value();
    }
    auto taken = next(*c);
    if (!taken.is_ok()) {
      KEVIN_LOG(warn) << "worker " << options_.name << ": " << taken.status().message();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    for (const Taken& t : *taken) {  // taken from the group: processed even when stopping
      if (Status s = process(*c, t.stream, t.id, t.job_text); !s.is_ok()) {
        KEVIN_LOG(warn) << "worker " << options_.name << ": job " << t.id << ": " << s.message();
      }
    }
  }
}

Result<std::vector<Worker::Taken>> Worker::next(RedisConnection& c) {
  const std::string lease = std::to_string(options_.lease.count());
  const std::vector<std::string> streams = {keys_.jobs(options_.model),
                                            keys_.jobs(any_model(evaluator_->backend()))};
  for (const std::string& stream : streams) {
    // XAUTOCLAIM looks at a bounded number of pending entries per call: follow its cursor.
    std::string cursor = "0-0";
    for (int page = 0; page < 1000; ++page) {
      KEVIN_ASSIGN_OR_RETURN(
          RedisReply r,
          persist(c, {"XAUTOCLAIM", stream, kGroup, options_.name, lease, cursor, "COUNT", "1"},
                  *stop_));
      if (r.elements.size() < 2) break;
      for (auto& [id, job] : entries_of(r.elements[1])) {
        KEVIN_LOG(info) << "worker " << options_.name << ": reclaimed job " << id
                        << " idle beyond its lease";
        return std::vector<Taken>{{stream, id, job}};
      }
      cursor = r.elements[0].str;
      if (cursor == "0-0") break;
    }
  }
  KEVIN_ASSIGN_OR_RETURN(
      RedisReply r, persist(c,
                            {"XREADGROUP", "GROUP", kGroup, options_.name, "COUNT", "1", "BLOCK",
                             "1000", "STREAMS", streams[0], streams[1], ">", ">"},
                            *stop_, std::chrono::seconds(10)));
  std::vector<Taken> taken;
  for (const RedisReply& stream :
       r.elements) {  // [[key, entries], ...]: up to one entry per stream
    if (stream.elements.size() < 2) continue;
    for (auto& [id, job] : entries_of(stream.elements[1]))
      taken.push_back({stream.elements[0].str, id, job});
  }
  return taken;
}

Status Worker::process(RedisConnection& c, const std::string& stream, const std::string& id,
                       const std::string& job_text) {
  auto parsed = parse_json(job_text);
  Result<Job> job = parsed.is_ok() ? job_from_json(*parsed) : Result<Job>(parsed.status());
  if (!job.is_ok()) {  // nobody can be answered: drop it
    KEVIN_RETURN_IF_ERROR(persist(c, {"XACK", stream, kGroup, id}, *stop_).status());
    return invalid_argument("malformed job dropped: " + job.status().message());
  }
  KEVIN_ASSIGN_OR_RETURN(RedisReply pending,
                         persist(c, {"XPENDING", stream, kGroup, id, id, "1"}, *stop_));
  int64_t deliveries = 1;
  if (!pending.elements.empty() && pending.elements[0].elements.size() >= 4)
    deliveries = pending.elements[0].elements[3].integer;
  if (deliveries > options_.max_deliveries) {
    const std::string model = stream.substr(stream.rfind(':') + 1);
    const std::string why = "delivered " + std::to_string(deliveries) +
                            " times without a result (each worker that took it died)";
    KEVIN_RETURN_IF_ERROR(persist(c,
                                  {"XADD", keys_.dead(model), "*", "job", job_text, "error", why,
                                   "deliveries", std::to_string(deliveries)},
                                  *stop_)
                              .status());
    JobResult dead;
    dead.status = JobResult::Status::kDeadLetter;
    dead.error = why;
    dead.worker = options_.name;
    KEVIN_RETURN_IF_ERROR(publish(c, *job, dead));
    KEVIN_LOG(warn) << "worker " << options_.name << ": job " << id << " for " << job->task_id
                    << " dead-lettered: " << why;
    return persist(c, {"XACK", stream, kGroup, id}, *stop_).status();
  }
  {
    MutexLock lock(mu_);
    held_.insert({stream, id});
  }
  ++in_flight_;
  const JobResult result = handle(*job);
  --in_flight_;
  {
    MutexLock lock(mu_);
    held_.erase({stream, id});
  }
  KEVIN_RETURN_IF_ERROR(publish(c, *job, result));
  KEVIN_RETURN_IF_ERROR(persist(c, {"XACK", stream, kGroup, id}, *stop_).status());
  ++finished_;
  return Status::ok();
}

JobResult Worker::handle(const Job& job) {
  JobResult out;
  out.worker = options_.name;
  const std::filesystem::path path =
      options_.task_dir / (sha256_hex(job.task_source).substr(0, 24) + ".py");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (Status s = write_file_atomic(path, job.task_source); !s.is_ok()) {
      out.status = JobResult::Status::kHarnessError;
      out.error = s.message();
      return out;
    }
  }
  const tasks::TaskInfo task{job.task_id, "queued", tasks::task_family(job.task_source), path};
  if (job.kind == Job::Kind::kProblem) {
    auto problem = evaluator_->problem(task);
    if (problem.is_ok()) {
      out.problem = *problem;
    } else {
      out.status = JobResult::Status::kHarnessError;
      out.error = problem.status().message();
    }
    return out;
  }
  if (!job.judging.empty() && !options_.judging.empty() && job.judging != options_.judging) {
    // Never a verdict under other rules than the producer asked for (a wrong tolerance turns
    // a wrong answer into a reward).
    out.status = JobResult::Status::kHarnessError;
    out.error = "worker " + options_.name + " judges with " + options_.judging +
                ", the job asks for " + job.judging +
                ": start the workers with the producer's judging flags";
    return out;
  }
  auto eval = evaluator_->evaluate_as(task, job.candidate, *engine::format_from_name(job.format));
  if (eval.is_ok()) {
    out.eval = *eval;
  } else {
    out.status = JobResult::Status::kHarnessError;
    out.error = eval.status().message();
  }
  return out;
}

Status Worker::publish(RedisConnection& c, const Job& job, const JobResult& result) {
  if (result.status != JobResult::Status::kOk) {
    // A failure is not kept as the answer to this work: the claim goes first, so a producer
    // told of the failure that asks again queues the work anew.
    KEVIN_ASSIGN_OR_RETURN(RedisReply holder, persist(c, {"GET", keys_.claim(job.id)}, *stop_));
    if (!holder.is_nil() && holder.str == job.attempt) {
      KEVIN_RETURN_IF_ERROR(persist(c, {"DEL", keys_.claim(job.id)}, *stop_).status());
    }
  }
  const std::string done = keys_.done(job.id, job.attempt);
  // MAXLEN 1: a job redone after a reclaim overwrites, so readers see one result.
  KEVIN_RETURN_IF_ERROR(
      persist(c, {"XADD", done, "MAXLEN", "1", "*", "result", dump_json(to_json(result))}, *stop_)
          .status());
  return persist(c, {"EXPIRE", done, std::to_string(options_.result_ttl.count())}, *stop_).status();
}

void Worker::renew_leases(const std::atomic<bool>& stop) {
  std::unique_ptr<RedisConnection> c;
  const auto every = std::max(options_.lease / 3, std::chrono::milliseconds(100));
  auto last = Clock::now();
  while (!stop.load() || in_flight_.load() > 0) {
    std::this_thread::sleep_for(std::min(every, std::chrono::milliseconds(500)));
    if (Clock::now() - last < every) continue;
    last = Clock::now();
    std::set<std::pair<std::string, std::string>> held;
    {
      MutexLock lock(mu_);
      held = held_;
    }
    if (held.empty()) continue;
    if (!c) {
      auto connected = RedisConnection::connect(options_.address);
      if (!connected.is_ok()) continue;
      c = std::move(connected).value();
    }
    for (const auto& [stream, id] : held) {
      // Resets the entry's idle time, so no other worker reclaims a job still being judged.
      if (!c->command({"XCLAIM", stream, kGroup, options_.name, "0", id, "JUSTID"}).is_ok())
        (void)c->reconnect();
    }
  }
}

void Worker::beat(const std::atomic<bool>& stop) {
  std::unique_ptr<RedisConnection> c;
  const auto start = std::chrono::system_clock::now();
  // (time, finished) of the last minute's heartbeats: the throughput shown is a recent one.
  std::deque<std::pair<Clock::time_point, uint64_t>> recent;
  while (!stop.load()) {
    recent.emplace_back(Clock::now(), finished_.load());
    while (recent.size() > 2 && recent.front().first < Clock::now() - std::chrono::seconds(60))
      recent.pop_front();
    if (!c) {
      auto connected = RedisConnection::connect(options_.address);
      if (connected.is_ok()) c = std::move(connected).value();
    }
    if (c) {
      const Json state = {
          {"name", options_.name},
          {"model", options_.model},
          {"device", evaluator_->device_name()},
          {"backend", evaluator_->backend()},
          {"jobs", options_.jobs},
          {"in_flight", in_flight_.load()},
          {"finished", finished_.load()},
          {"gpus", options_.gpus},
          {"per_minute", per_minute(recent)},
          {"started",
           std::chrono::duration_cast<std::chrono::seconds>(start.time_since_epoch()).count()}};
      const std::string ttl = std::to_string(3 * options_.heartbeat.count());
      if (!c->command({"SET", keys_.worker(options_.name), dump_json(state), "EX", ttl}).is_ok())
        c.reset();
    }
    for (int i = 0; i < 10 * options_.heartbeat.count() && !stop.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (c) (void)c->command({"DEL", keys_.worker(options_.name)});
}

}  // namespace kevin::queue
