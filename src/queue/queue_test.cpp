// queue_test.cpp — job and URL codecs, and the queue against a real redis-server on a
// loopback port (started and stopped here; skipped when the binary is missing): many
// producers and workers, deduplication, harness failures, a poison job dead-lettered, and the
// live workers deciding a producer's backend and failing a job none of them takes.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <type_traits>

#include "core/file.h"
#include "env/fake_evaluator.h"
#include "queue/local_redis.h"
#include "queue/remote_evaluator.h"
#include "queue/worker.h"
#include "sys/tempdir.h"

namespace kevin::queue {
namespace {
namespace fs = std::filesystem;

TEST(RedisUrl, ParsesHostPortPasswordAndPrefix) {
  auto a = parse_redis_url("redis://:s3cret@10.0.0.5:6380/lab");
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->host, "10.0.0.5");
  EXPECT_EQ(a->port, 6380);
  EXPECT_EQ(a->password, "s3cret");
  EXPECT_EQ(a->prefix, "lab");
  EXPECT_EQ(a->url(), "redis://10.0.0.5:6380/lab") << "the password is never printed";
  auto plain = parse_redis_url("redis://localhost");
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ(plain->port, 6379);
  EXPECT_EQ(plain->prefix, "kevin");
  const std::vector<std::pair<std::string, std::string>> bad_urls = {
      {"http://x", "must start with redis://"}, {"redis://", "has no host"},
      {"redis://h:0", "has a bad port"},        {"redis://h:99999", "has a bad port"},
      {"redis://h:12x", "has a bad port"},      {"redis://h/a b", "prefix must be a plain name"}};
  for (const auto& [bad, why] : bad_urls) {
    auto r = parse_redis_url(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("queue URL " + why + ": " + bad), std::string::npos)
        << r.status().to_string();
  }
}

TEST(JobCodec, RoundTripsJobsResultsAndModels) {
  EXPECT_EQ(model_key("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(model_key("CPU"), "cpu");
  EXPECT_EQ(model_key("  "), "unknown");
  EXPECT_EQ(any_model("cuda"), "any-cuda");
  Job job{Job::Kind::kEvaluate, "id1", "at1", "level1/x", "import torch\n", "int x;", ""};
  auto back = job_from_json(to_json(job));
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->candidate, "int x;");
  EXPECT_EQ(back->kind, Job::Kind::kEvaluate);
  EXPECT_NE(job_id(Job::Kind::kEvaluate, "cpu", "ab", "c"),
            job_id(Job::Kind::kEvaluate, "cpu", "a", "bc"));
  EXPECT_NE(job_id(Job::Kind::kEvaluate, "cpu", "a", "b"),
            job_id(Job::Kind::kEvaluate, "nvidia-h200", "a", "b"));
  job.judging = judging_key(5, "kevin", 20, false);
  EXPECT_EQ(job.judging, "seeds=5 tolerance=kevin timeout_s=20 degenerate=refuse");
  EXPECT_EQ(job_from_json(to_json(job))->judging, job.judging);
  EXPECT_NE(job_id(Job::Kind::kEvaluate, "cpu", "a", "b", judging_key(5, "kevin", 20, false)),
            job_id(Job::Kind::kEvaluate, "cpu", "a", "b", judging_key(5, "default", 20, false)))
      << "work judged under other rules is other work";
  EXPECT_EQ(judging_key(5, "kevin", 20, false, "eager"), job.judging)
      << "an eager baseline keeps the key older workers compare with";
  EXPECT_EQ(judging_key(5, "kevin", 20, false, "compile"),
            "seeds=5 tolerance=kevin timeout_s=20 degenerate=refuse baseline=compile");
  engine::EvalResult e;
  e.verdict = VerdictKind::kCorrect;
  e.speedup = 2.5;
  e.candidate_ms = 0.4;
  e.baseline_ms = 1.0;
  e.timing = engine::TimingStats{0.4, 0.3, 0.5, 0.41, 0.01, 12, 0};
  e.harness_overhead_ms = 0.6;
  e.unaccounted_ms = 0.01;
  e.sandbox_enforced = {"netns"};
  JobResult r;
  r.eval = e;
  r.worker = "w1";
  auto rr = job_result_from_json(to_json(r));
  ASSERT_TRUE(rr.is_ok()) << rr.status().to_string();
  ASSERT_TRUE(rr->eval.has_value());
  EXPECT_EQ(engine::to_json(*rr->eval), engine::to_json(e))
      << "an evaluation survives the trip unchanged";
  EXPECT_EQ(job.format, "kevin");
  job.format = "kernelbench";
  EXPECT_EQ(job_from_json(to_json(job))->format, "kernelbench");
  Json old_producer = to_json(job);
  old_producer.erase("format");
  EXPECT_EQ(job_from_json(old_producer)->format, "kevin")
      << "jobs of producers before formats are kevin's ABI";
  Json unknown = to_json(job);
  unknown["format"] = "triton";
  auto triton = job_from_json(unknown);
  EXPECT_EQ(triton.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(triton.status().message().find("unknown candidate format \"triton\""),
            std::string::npos)
      << triton.status().to_string();
  EXPECT_EQ(job_id(Job::Kind::kEvaluate, "cpu", "a", "b", "j"),
            job_id(Job::Kind::kEvaluate, "cpu", "a", "b", "j", "kevin"));
  EXPECT_NE(job_id(Job::Kind::kEvaluate, "cpu", "a", "b", "j"),
            job_id(Job::Kind::kEvaluate, "cpu", "a", "b", "j", "kernelbench"))
      << "the same text judged in another format is other work";
  auto no_id = job_from_json(Json{{"kind", "evaluate"}});
  EXPECT_EQ(no_id.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_id.status().message().find("missing field \"id\""), std::string::npos)
      << no_id.status().to_string();
  auto maybe = job_result_from_json(Json{{"status", "maybe"}});
  EXPECT_EQ(maybe.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(maybe.status().message().find("unknown result status \"maybe\""), std::string::npos)
      << maybe.status().to_string();
}

TEST(LiveWorkers, HeartbeatsDecideTheBackendOfAProducerGivenNone) {
  auto cpu = worker_state_from_json(
      Json{{"name", "w0"}, {"backend", "cpu"}, {"model", "cpu"}, {"device", "CPU"}, {"jobs", 4}});
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  EXPECT_TRUE(cpu->takes("any-cpu"));
  EXPECT_TRUE(cpu->takes("cpu"));
  EXPECT_FALSE(cpu->takes("any-cuda")) << "a CUDA candidate never reaches a CPU worker";
  const WorkerState h200{"g1", "cuda", "nvidia-h200", "NVIDIA H200"};
  EXPECT_TRUE(h200.takes("nvidia-h200"));
  EXPECT_TRUE(h200.takes("any-cuda"));
  EXPECT_FALSE(h200.takes("nvidia-h100"));
  EXPECT_EQ(worker_state_from_json(Json{{"name", "w"}}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(worker_state_from_json(Json::array()).status().code(), StatusCode::kInvalidArgument);

  const BackendChoice none = choose_backend({});
  EXPECT_EQ(none.backend, "cuda") << "no live worker: today's default";
  EXPECT_NE(none.why.find("no live worker"), std::string::npos) << none.why;
  const BackendChoice cpus = choose_backend({*cpu, {"w1", "cpu", "cpu", "CPU"}});
  EXPECT_EQ(cpus.backend, "cpu") << "only CPU workers are alive: judge on them";
  EXPECT_NE(cpus.why.find("2 live workers (w0 (cpu, CPU), w1 (cpu, CPU))"), std::string::npos)
      << cpus.why;
  const BackendChoice mixed = choose_backend({*cpu, h200});
  EXPECT_EQ(mixed.backend, "cuda") << "a GPU worker is alive: candidates are CUDA";
  EXPECT_NE(mixed.why.find("1 on CUDA"), std::string::npos) << mixed.why;
  EXPECT_EQ(describe_workers({}), "none");
}

// read() (a Result of a list) every 20 ms, for at most 2 s, until the list holds `count`
// entries (workers write their first heartbeat as they start); the last list read.
template <typename Read>
auto poll_until(size_t count, Read read) {
  std::decay_t<decltype(*read())> got;
  for (int i = 0; i < 100 && got.size() < count; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto now = read();
    EXPECT_TRUE(now.is_ok()) << now.status().to_string();
    if (!now.is_ok()) break;
    got = *now;
  }
  return got;
}

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto redis = LocalRedis::start();
    if (redis.status().code() == StatusCode::kNotFound) GTEST_SKIP() << redis.status().message();
    ASSERT_TRUE(redis.is_ok()) << redis.status().to_string();
    redis_ = std::move(redis).value();
    tasks_ = std::move(sys::TempDir::create("kevin-queue-tasks-")).value();
    for (int i = 0; i < 3; ++i) {
      tasks::TaskInfo t{"t/task" + std::to_string(i), "t", "unknown",
                        tasks_.path() / ("task" + std::to_string(i) + ".py")};
      ASSERT_TRUE(write_file_atomic(t.path, "# task " + std::to_string(i) + "\nclass Model: pass\n")
                      .is_ok());
      task_list_.push_back(t);
    }
    RemoteOptions o;
    o.address = redis_->address();
    o.model = "cpu";
    o.backend = "cpu";
    o.wait_limit = std::chrono::seconds(60);
    auto remote = RemoteEvaluator::create(o);
    ASSERT_TRUE(remote.is_ok()) << remote.status().to_string();
    remote_ = std::move(remote).value();
  }
  void TearDown() override {
    stop_ = true;
    for (auto& t : workers_) t.join();
  }
  void start_workers(int n, std::chrono::milliseconds lease = std::chrono::milliseconds(60000),
                     const std::string& judging = "") {
    for (int i = 0; i < n; ++i) {
      WorkerOptions o;
      o.judging = judging;
      o.address = redis_->address();
      o.name = "w" + std::to_string(i);
      o.model = "cpu";
      o.jobs = 2;
      o.lease = lease;
      o.task_dir = tasks_.path() / "received";
      workers_.emplace_back([this, o] { EXPECT_TRUE(Worker(&evaluator_, o).run(stop_).is_ok()); });
    }
  }

  std::unique_ptr<LocalRedis> redis_;
  sys::TempDir tasks_;
  std::vector<tasks::TaskInfo> task_list_;
  env::FakeEvaluator evaluator_{"cpu", "Fake CPU"};
  std::unique_ptr<RemoteEvaluator> remote_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

TEST_F(QueueTest, ManyProducersAndWorkersGetExactlyOneResultPerJob) {
  start_workers(3);
  constexpr size_t kJobs = 60;
  std::vector<std::optional<Result<engine::EvalResult>>> results(kJobs);
  std::vector<std::thread> producers;
  for (size_t p = 0; p < 6; ++p) {
    producers.emplace_back([&, p] {
      for (size_t i = p; i < kJobs; i += 6) {
        const std::string source = "// fake: correct speedup=" + std::to_string(1 + i) +
                                   " delay_ms=20\n// job " + std::to_string(i);
        results[i] = remote_->evaluate(task_list_[i % 3], source);
      }
    });
  }
  for (auto& t : producers) t.join();
  for (size_t i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(results[i] && results[i]->is_ok())
        << i << ": " << (results[i] ? results[i]->status().to_string() : "none");
    EXPECT_DOUBLE_EQ(*(*results[i])->speedup, static_cast<double>(1 + i))
        << "each producer got its own job's result";
  }
  EXPECT_EQ(evaluator_.calls(), static_cast<int>(kJobs)) << "every job evaluated exactly once";
}

TEST_F(QueueTest, IdenticalWorkInFlightIsEvaluatedOnce) {
  start_workers(2);
  std::vector<std::thread> producers;
  std::atomic<int> correct{0};
  for (int p = 0; p < 5; ++p) {
    producers.emplace_back([&] {
      auto r = remote_->evaluate(task_list_[0], "// fake: correct delay_ms=300\n");
      if (r.is_ok() && r->correct()) ++correct;
    });
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(correct.load(), 5);
  EXPECT_EQ(evaluator_.calls(), 1);
  auto problem = remote_->problem(task_list_[1]);
  ASSERT_TRUE(problem.is_ok()) << problem.status().to_string();
  EXPECT_NE(problem->find("# task 1"), std::string::npos)
      << "the worker built it from the task source it was sent";
}

TEST_F(QueueTest, AHarnessFailureIsAnErrorAndTheWorkCanBeQueuedAgain) {
  start_workers(1);
  auto failed = remote_->evaluate(task_list_[0], "// fake: harness_error\n");
  ASSERT_FALSE(failed.is_ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInternal);
  EXPECT_NE(failed.status().message().find("fake harness failure"), std::string::npos)
      << failed.status().to_string();
  auto again = remote_->evaluate(task_list_[0], "// fake: harness_error\n");
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInternal);
  EXPECT_NE(again.status().message().find("fake harness failure"), std::string::npos)
      << again.status().to_string();
  EXPECT_EQ(evaluator_.calls(), 2) << "the failure was not kept as the answer";
}

TEST_F(QueueTest, AWorkerRefusesAJobAskingForOtherJudgingSettings) {
  start_workers(1, std::chrono::milliseconds(60000), judging_key(5, "default", 20, false));
  RemoteOptions o;
  o.address = redis_->address();
  o.model = "cpu";
  o.backend = "cpu";
  o.judging = judging_key(5, "kevin", 20, false);
  auto loose = RemoteEvaluator::create(o);
  ASSERT_TRUE(loose.is_ok()) << loose.status().to_string();
  auto refused = (*loose)->evaluate(task_list_[0], "// fake: correct\n");
  ASSERT_FALSE(refused.is_ok())
      << "a verdict under the worker's tolerance would not be the one asked for";
  EXPECT_NE(refused.status().message().find("the job asks for seeds=5 tolerance=kevin"),
            std::string::npos)
      << refused.status().to_string();
  EXPECT_EQ(evaluator_.calls(), 0);
  o.judging = judging_key(5, "default", 20, false);
  auto same = RemoteEvaluator::create(o);
  ASSERT_TRUE(same.is_ok());
  auto judged = (*same)->evaluate(task_list_[0], "// fake: correct\n");
  ASSERT_TRUE(judged.is_ok()) << judged.status().to_string();
  EXPECT_TRUE(judged->correct());
  EXPECT_EQ(evaluator_.calls(), 1);
}

TEST_F(QueueTest, WorkersJudgeEachJobInTheFormatItsProducerResolved) {
  start_workers(1);
  RemoteOptions o;
  o.address = redis_->address();
  o.model = "cpu";
  o.backend = "cpu";
  o.format = "auto";
  auto producer = RemoteEvaluator::create(o);
  ASSERT_TRUE(producer.is_ok()) << producer.status().to_string();
  EXPECT_TRUE((*producer)->judges_kernelbench());
  const std::string model_new = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n";
  auto kb = (*producer)->evaluate(task_list_[0], model_new);
  ASSERT_TRUE(kb.is_ok()) << kb.status().to_string();
  EXPECT_EQ(evaluator_.kernelbench_calls(), 1)
      << "auto: a ModelNew answer goes out as KernelBench's format";
  auto abi =
      (*producer)->evaluate(task_list_[0], "// fake: correct\nextern \"C\" int kevin_forward();\n");
  ASSERT_TRUE(abi.is_ok()) << abi.status().to_string();
  EXPECT_EQ(evaluator_.kernelbench_calls(), 1) << "a C++ source stays kevin's ABI";
  auto kevin_only =
      remote_->evaluate(task_list_[0], model_new);  // the fixture's producer: format kevin
  ASSERT_TRUE(kevin_only.is_ok()) << kevin_only.status().to_string();
  EXPECT_EQ(evaluator_.kernelbench_calls(), 1)
      << "a kevin-only producer's jobs are judged as kevin's ABI";
  EXPECT_EQ(evaluator_.calls(), 3) << "the same text in two formats is two jobs";
}

TEST_F(QueueTest, AProducerGivenNoBackendFollowsTheLiveCpuWorkers) {
  start_workers(2);
  auto c = RedisConnection::connect(redis_->address());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const auto live = poll_until(2, [&] { return live_workers(**c, Keys{"test"}); });
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].name, "w0");
  EXPECT_EQ(live[0].device, "Fake CPU");
  RemoteOptions o;
  o.address = redis_->address();
  o.backend = choose_backend(live).backend;
  EXPECT_EQ(o.backend, "cpu");
  auto producer = RemoteEvaluator::create(o);
  ASSERT_TRUE(producer.is_ok()) << producer.status().to_string();
  EXPECT_EQ((*producer)->device_name(), "Fake CPU") << "named by a live worker's heartbeat";
  auto judged = (*producer)->evaluate(task_list_[0], "// fake: correct\n");
  ASSERT_TRUE(judged.is_ok()) << judged.status().to_string();
  EXPECT_TRUE(judged->correct());
  EXPECT_EQ(evaluator_.calls(), 1);
}

TEST_F(QueueTest, LiveHeartbeatsAreTheWorkersJsonInKeyOrderSkippingOtherValues) {
  start_workers(2);
  auto c = RedisConnection::connect(redis_->address());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  // A key under the workers' pattern that is not a heartbeat (what `kevin workers` must skip).
  ASSERT_TRUE((*c)->command({"SET", Keys{"test"}.worker("w1-junk"), "not json"}).is_ok());
  const auto beats = poll_until(2, [&] { return live_heartbeats(**c, Keys{"test"}); });
  ASSERT_EQ(beats.size(), 2u);
  EXPECT_EQ(beats[0].value("name", ""), "w0");
  EXPECT_EQ(beats[1].value("name", ""), "w1");
  EXPECT_TRUE(beats[0].contains("in_flight")) << beats[0].dump();
}

TEST_F(QueueTest, AJobNoLiveWorkerTakesFailsAfterTheWorkerWaitNamingTheWorkers) {
  start_workers(1);  // a CPU worker: it never takes CUDA jobs
  RemoteOptions o;
  o.address = redis_->address();
  o.backend = "cuda";
  o.wait_limit = std::chrono::seconds(30);
  o.worker_wait = std::chrono::milliseconds(1000);
  auto producer = RemoteEvaluator::create(o);
  ASSERT_TRUE(producer.is_ok()) << producer.status().to_string();
  const auto start = std::chrono::steady_clock::now();
  auto r = (*producer)->evaluate(task_list_[0], "// fake: correct\n");
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.is_ok()) << "no CUDA worker is alive";
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().to_string();
  EXPECT_LT(waited, std::chrono::seconds(10)) << "the worker wait, not the 30 s wait limit";
  EXPECT_GE(waited, std::chrono::milliseconds(1000));
  for (const std::string& said :
       {std::string("waited 1 s"), std::string("no live worker takes test:jobs:any-cuda"),
        std::string("live workers: w0 (cpu, Fake CPU)"),
        "kevin worker --queue " + redis_->address().url() + " --backend cuda",
        std::string("--backend cpu")}) {
    EXPECT_NE(r.status().message().find(said), std::string::npos)
        << said << " in: " << r.status().message();
  }
  EXPECT_EQ(evaluator_.calls(), 0);
}

TEST_F(QueueTest, ASlowJobOfALiveWorkerOutlastsTheWorkerWait) {
  start_workers(1);
  RemoteOptions o;
  o.address = redis_->address();
  o.backend = "cpu";
  o.worker_wait = std::chrono::milliseconds(500);
  auto producer = RemoteEvaluator::create(o);
  ASSERT_TRUE(producer.is_ok()) << producer.status().to_string();
  auto r = (*producer)->evaluate(task_list_[1], "// fake: correct delay_ms=3000\n");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->correct()) << "a live worker judging it is waited for up to the wait limit";
}

TEST_F(QueueTest, AJobThatKeepsLosingItsWorkersIsDeadLettered) {
  // Three workers that took the job and died: deliveries counted by Redis, no acknowledgement.
  std::thread producer([&] {
    auto r = remote_->evaluate(task_list_[2], "// fake: correct\n// poison\n");
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("dead-lettered"), std::string::npos)
        << r.status().to_string();
  });
  auto c = RedisConnection::connect(redis_->address());
  ASSERT_TRUE(c.is_ok());
  Keys keys{"test"};
  (void)(*c)->command({"XGROUP", "CREATE", keys.jobs("cpu"), kGroup, "0", "MKSTREAM"});
  std::string id;
  for (int i = 0; i < 100 && id.empty(); ++i) {
    auto r = (*c)->command({"XREADGROUP", "GROUP", kGroup, "ghost0", "COUNT", "1", "BLOCK", "100",
                            "STREAMS", keys.jobs("cpu"), ">"});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    if (!r->elements.empty()) id = r->elements[0].elements[1].elements[0].elements[0].str;
  }
  ASSERT_FALSE(id.empty());
  for (const char* ghost : {"ghost1", "ghost2"})
    ASSERT_TRUE((*c)->command({"XCLAIM", keys.jobs("cpu"), kGroup, ghost, "0", id}).is_ok());
  start_workers(1, std::chrono::milliseconds(200));  // reclaims it: the fourth delivery
  producer.join();
  auto dead = (*c)->command({"XLEN", keys.dead("cpu")});
  ASSERT_TRUE(dead.is_ok());
  EXPECT_EQ(dead->integer, 1);
  EXPECT_EQ(evaluator_.calls(), 0) << "a poison job is not run again";
}

}  // namespace
}  // namespace kevin::queue
