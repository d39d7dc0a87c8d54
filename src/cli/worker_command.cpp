// worker_command.cpp — `kevin worker` (judge jobs from a Redis queue on this machine's engine
// until SIGINT/SIGTERM) and `kevin workers` (who is serving a queue, and how deep it is).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <atomic>
#include <iomanip>
#include <ostream>

#include "cli/app.h"
#include "cli/engine_flags.h"
#include "cli/interrupt.h"
#include "cli/paths.h"
#include "cli/run_setup.h"
#include "core/parallel.h"
#include "env/engine_evaluator.h"
#include "queue/remote_evaluator.h"
#include "queue/worker.h"

namespace kevin::cli {
namespace fs = std::filesystem;

namespace {

struct WorkerArgs {
  std::string queue, name;
  EngineFlags engine;
  int max_deliveries = 3;
  double lease_s = 120;
  bool fake_engine = false;
};

std::string default_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + std::to_string(::getpid());
}

int work(const WorkerArgs& a, std::ostream& out, std::ostream& err) {
  const std::atomic<bool>* stop = watch_interrupts("kevin worker", "finishing the jobs in hand");
  auto fail = [&](const Status& s) { return report_failure(err, "worker", s); };
  auto address = queue::parse_redis_url(a.queue);
  if (!address.is_ok()) return fail(address.status());
  const Json given = a.fake_engine ? Json{{"fake", true}} : a.engine.settings();
  auto engine = resolve_engine_json(given);
  if (!engine.is_ok()) return fail(engine.status());
  auto evaluator = make_evaluator(*engine);
  if (!evaluator.is_ok()) return fail(evaluator.status());
  queue::WorkerOptions o;
  o.address = *address;
  o.name = a.name.empty() ? default_name() : a.name;
  o.model = queue::model_key((*evaluator)->device_name());
  o.jobs = a.engine.jobs > 0 ? a.engine.jobs : static_cast<int>(hardware_threads());
  o.lease = std::chrono::milliseconds(static_cast<int64_t>(a.lease_s * 1000));
  o.max_deliveries = a.max_deliveries;
  if (auto* local = dynamic_cast<env::EngineEvaluator*>(evaluator->get()))
    o.gpus = local->devices();
  auto judging = judging_of(*engine);
  if (!judging.is_ok()) return fail(judging.status());
  o.judging = *judging;
  o.task_dir = fs::path(a.fake_engine ? cache_dir(a.engine.cache).string()
                                      : (*engine)["cache_dir"].get<std::string>()) /
               "queued-tasks";
  out << "kevin worker " << o.name << ": " << (*evaluator)->backend() << " on "
      << (*evaluator)->device_name() << ", taking jobs from " << o.address.url() << " (model "
      << o.model << ", " << o.jobs << " at once)" << std::endl;
  queue::Worker worker(evaluator->get(), o);
  const Status ran = worker.run(*stop);
  if (!ran.is_ok()) return fail(ran);
  out << "kevin worker " << o.name << ": stopped after " << worker.finished() << " jobs"
      << std::endl;
  return kExitOk;
}

// "0,1" for the CUDA ordinals of a heartbeat, "-" for none (the CPU backend).
std::string gpu_list(const Json& gpus) {
  std::string list;
  for (const Json& g : gpus) {
    if (g.is_number_integer()) list += (list.empty() ? "" : ",") + std::to_string(g.get<int>());
  }
  return list.empty() ? "-" : list;
}

int list_workers(const std::string& url, std::ostream& out, std::ostream& err) {
  auto address = queue::parse_redis_url(url);
  if (!address.is_ok()) {
    err << "kevin workers: " << address.status().message() << "\n";
    return kExitUsage;
  }
  auto c = queue::RedisConnection::connect(*address);
  if (!c.is_ok()) {
    err << "kevin workers: " << c.status().message() << "\n";
    return kExitFailure;
  }
  const queue::Keys keys{address->prefix};
  auto beats = queue::live_heartbeats(**c, keys);
  auto streams = queue::scan_keys(**c, address->prefix + ":jobs:*");
  if (!beats.is_ok() || !streams.is_ok()) {
    err << "kevin workers: " << (beats.is_ok() ? streams.status() : beats.status()).message()
        << "\n";
    return kExitFailure;
  }
  out << std::left << std::setw(28) << "worker" << std::setw(22) << "device" << std::setw(10)
      << "gpus" << std::setw(6) << "jobs" << std::setw(11) << "in flight" << std::setw(10)
      << "finished"
      << "per min\n";
  for (const Json& beat : *beats) {
    out << std::left << std::setw(28) << beat.value("name", "?") << std::setw(22)
        << beat.value("device", "?") << std::setw(10) << gpu_list(beat.value("gpus", Json::array()))
        << std::setw(6) << beat.value("jobs", 0) << std::setw(11) << beat.value("in_flight", 0)
        << std::setw(10) << beat.value("finished", 0) << std::fixed << std::setprecision(1)
        << beat.value("per_minute", 0.0) << "\n";
  }
  out << "\n"
      << std::left << std::setw(40) << "stream" << std::setw(10) << "length" << std::setw(10)
      << "waiting"
      << "pending\n";
  for (const std::string& stream : *streams) {
    auto length = (*c)->command({"XLEN", stream});
    auto groups = (*c)->command({"XINFO", "GROUPS", stream});
    int64_t lag = 0, pending = 0;
    if (groups.is_ok()) {
      for (const auto& g : groups->elements) {
        for (size_t i = 0; i + 1 < g.elements.size(); i += 2) {
          if (g.elements[i].str == "pending") pending = g.elements[i + 1].integer;
          if (g.elements[i].str == "lag") lag = g.elements[i + 1].integer;
        }
      }
    }
    out << std::left << std::setw(40) << stream << std::setw(10)
        << (length.is_ok() ? length->integer : 0) << std::setw(10) << lag << pending << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_worker_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<WorkerArgs>();
  CLI::App* sub = app.add_subcommand(
      "worker",
      "judge evaluation jobs from a Redis queue on this machine's engine (docs/distributed.md)");
  sub->add_option("--queue", a->queue, "redis://[:PASSWORD@]HOST[:PORT][/PREFIX]")->required();
  sub->add_option("--name", a->name, "consumer name, unique per worker (default HOST/PID)");
  sub->add_option("--lease", a->lease_s,
                  "seconds a job may sit idle before another worker takes it")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  sub->add_option("--max-deliveries", a->max_deliveries, "deliveries before a job is dead-lettered")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  a->engine.format = "auto";
  add_engine_flags(sub, &a->engine,
                   "job formats judged (each job in its producer's): auto = kevin's ABI, and "
                   "KernelBench answers when this Python has PyTorch's extension headers; "
                   "kernelbench = both, the headers required; kevin = the ABI only");
  // Tests only: verdicts scripted by `// fake:` lines (env/fake_evaluator.h), no engine.
  sub->add_flag("--fake-engine", a->fake_engine, "")->group("");
  sub->footer(
      "Examples:\n  kevin worker --queue redis://10.0.0.2:6379\n  kevin worker --queue "
      "redis://:$REDIS_PASSWORD@queue:6379/lab --devices 0,1 --jobs 16");
  sub->callback([a, &action] {
    action = [a](std::ostream& out, std::ostream& err) { return work(*a, out, err); };
  });

  auto url = std::make_shared<std::string>();
  CLI::App* list = app.add_subcommand(
      "workers", "list the workers serving a Redis queue and the depth of its streams");
  list->footer(
      "Examples:\n  kevin workers --queue redis://10.0.0.2:6379\n  kevin workers --queue "
      "redis://:$REDIS_PASSWORD@queue:6379/lab");
  list->add_option("--queue", *url, "redis://[:PASSWORD@]HOST[:PORT][/PREFIX]")->required();
  list->callback([url, &action] {
    action = [url](std::ostream& out, std::ostream& err) { return list_workers(*url, out, err); };
  });
}

}  // namespace kevin::cli
