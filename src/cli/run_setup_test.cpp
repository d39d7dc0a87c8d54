// run_setup_test.cpp — the engine settings (--devices values, the "devices"/"device" JSON keys and
// their errors, a queue's backend by its model or its live workers) and the model check of a new
// run against a scripted OpenAI-compatible server.
#include "cli/run_setup.h"

#include <gtest/gtest.h>

#include "cli/engine_flags.h"
#include "fake_http_server.h"
#if defined(KEVIN_HAVE_QUEUE)
#include "queue/job.h"
#include "queue/local_redis.h"
#endif

namespace kevin::cli {
namespace {

TEST(CpuSizeVerdictTest, SaysAWordFromTheNoticeSizeAndRefusesPastTheFullSize) {
  using Kind = CpuSizeVerdict::Kind;
  const uint64_t mib = uint64_t{1} << 20;
  // Small, or reduced for the CPU: nothing to say.
  EXPECT_EQ(cpu_size_verdict("t.py", 64 * mib, false, 5, false).kind, Kind::kQuiet);
  EXPECT_EQ(cpu_size_verdict("t.py", 1024 * mib, true, 5, false).kind, Kind::kQuiet);
  // 192 MiB a call (a level-1 task at GPU sizes): runs, but the user is told what it costs.
  const CpuSizeVerdict notice = cpu_size_verdict("t.py", 192 * mib, false, 5, false);
  EXPECT_EQ(notice.kind, Kind::kNotice);
  EXPECT_NE(notice.text.find("t.py has no reduced CPU sizes"), std::string::npos) << notice.text;
  EXPECT_NE(notice.text.find("one call moves 0.19 GiB"), std::string::npos) << notice.text;
  // Past the full size: refused without --full-size, a warning with it.
  const CpuSizeVerdict refused = cpu_size_verdict("t.py", 300 * mib, false, 5, false);
  EXPECT_EQ(refused.kind, Kind::kRefusal);
  EXPECT_NE(refused.text.find("pass --full-size"), std::string::npos) << refused.text;
  EXPECT_EQ(cpu_size_verdict("t.py", 300 * mib, false, 5, true).kind, Kind::kWarning);
}

TEST(ParseDevicesTest, AllIsEveryVisibleGpu) {
  auto all = parse_devices("all");
  ASSERT_TRUE(all.is_ok());
  EXPECT_TRUE(all->empty());
}

TEST(ParseDevicesTest, ListsOrdinals) {
  auto d = parse_devices("0,2, 3");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(*d, (std::vector<int>{0, 2, 3}));
}

TEST(ParseDevicesTest, RejectsWhatIsNotAnOrdinal) {
  for (const char* bad : {"gpu0", "1.5", "-1", "0,,x"}) {
    auto d = parse_devices(bad);
    ASSERT_FALSE(d.is_ok()) << '"' << bad << "\" was accepted";
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find("\"" + std::string(bad) + "\" is not \"all\" or a list"),
              std::string::npos)
        << d.status().to_string();
  }
  for (const char* empty : {"", ","}) {
    auto d = parse_devices(empty);
    ASSERT_FALSE(d.is_ok()) << '"' << empty << "\" was accepted";
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find("devices: empty list"), std::string::npos)
        << d.status().to_string();
  }
}

TEST(ResolveEngineJsonTest, DefaultsToEveryGpu) {
  auto e = resolve_engine_json(Json::object());
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_EQ((*e)["devices"], "all");
}

TEST(ResolveEngineJsonTest, AcceptsAnOrdinalAListOrTheOlderDeviceKey) {
  auto list = resolve_engine_json({{"devices", {0, 1}}});
  ASSERT_TRUE(list.is_ok()) << list.status().message();
  EXPECT_EQ((*list)["devices"], Json({0, 1}));
  auto one = resolve_engine_json({{"device", 3}});
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  EXPECT_EQ((*one)["devices"], 3);
  EXPECT_TRUE(resolve_engine_json({{"devices", "1,2"}}).is_ok());
}

TEST(ResolveEngineJsonTest, RejectsBadDeviceSettings) {
  struct Case {
    Json given;
    std::string why;  // the part of the message that names this mistake
  };
  const std::vector<Case> cases = {
      {{{"devices", "some"}}, "\"some\" is not \"all\" or a list of GPU ordinals"},
      {{{"devices", Json::array()}}, "expected \"all\", a GPU ordinal or a list of them"},
      {{{"devices", {0, -1}}}, "list entries must be GPU ordinals"},
      {{{"device", 0}, {"devices", "all"}}, "give \"devices\" or \"device\", not both"},
      {{{"queue_worker_wait_s", 0}}, "queue_worker_wait_s must be a positive number of seconds"},
      {{{"baseline", "jit"}}, "engine baseline must be eager or compile (got \"jit\")"},
  };
  for (const Case& c : cases) {
    auto e = resolve_engine_json(c.given);
    ASSERT_FALSE(e.is_ok()) << c.given.dump() << " was accepted";
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << c.given.dump();
    EXPECT_NE(e.status().message().find(c.why), std::string::npos) << e.status().to_string();
  }
}

TEST(EngineFlags, EverySettingReachesTheEnginesOptions) {
  EngineFlags f;
  f.backend = "cpu";
  f.devices = "0";
  f.seeds = 7;
  f.tolerance = "kevin";
  f.jobs = 3;
  f.reference_workers = 2;
  f.call_timeout_s = 9;
  f.max_timed_calls = 40;
  f.timing_ci = 0.03;
  f.no_sandbox = true;
  f.allow_degenerate = true;
  f.format = "auto";
  f.baseline = "compile";
  auto resolved = resolve_engine_json(f.settings());
  ASSERT_TRUE(resolved.is_ok()) << resolved.status().to_string();
  auto o = engine_options(*resolved);
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->backend, engine::Backend::kCpu);
  EXPECT_EQ(o->devices, std::vector<int>{0});
  EXPECT_EQ(o->seeds, 7);
  EXPECT_EQ(o->tolerance, "kevin");
  EXPECT_EQ(o->jobs, 3);
  EXPECT_EQ(o->reference_workers, 2);
  EXPECT_DOUBLE_EQ(o->call_timeout_s, 9);
  EXPECT_EQ(o->max_timed_calls, 40);
  EXPECT_DOUBLE_EQ(o->timing_ci, 0.03);
  EXPECT_EQ(o->baseline, engine::BaselineKind::kCompile);
  EXPECT_FALSE(o->sandbox);
  EXPECT_TRUE(o->allow_degenerate_tasks);
  EXPECT_EQ(o->format, "auto");
  EXPECT_FALSE(o->fresh_seeds);
  EXPECT_EQ(o->baseline_ttl, std::chrono::seconds(6 * 3600));
  Json fresh = *resolved;
  fresh["fresh_seeds"] = true;
  fresh["fresh_baseline"] = true;
  auto fresh_options = engine_options(fresh);
  ASSERT_TRUE(fresh_options.is_ok());
  EXPECT_TRUE(fresh_options->fresh_seeds);
  EXPECT_EQ(fresh_options->baseline_ttl, std::chrono::seconds(0));
  Json bad = *resolved;
  bad["max_timed_calls"] = 0;
  EXPECT_EQ(engine_options(bad).status().code(), StatusCode::kInvalidArgument);
  QueueFlags q;
  q.queue = "redis://h";
  EXPECT_EQ(q.with_queue(f.settings())["queue"], "redis://h");
}

TEST(EngineJson, AQueueChoosesTheBackendByItsModelAndRefusesMismatches) {
  auto cuda =
      resolve_engine_json({{"queue", "redis://127.0.0.1:6379"}, {"queue_model", "NVIDIA H200"}});
  ASSERT_TRUE(cuda.is_ok()) << cuda.status().to_string();
  EXPECT_EQ((*cuda)["backend"], "cuda") << "workers judge: this machine's GPUs do not decide";
  EXPECT_EQ((*cuda)["queue_worker_wait_s"], kQueueWorkerWaitS);
  auto cpu = resolve_engine_json({{"queue", "redis://127.0.0.1:6379"}, {"queue_model", "CPU"}});
  ASSERT_TRUE(cpu.is_ok());
  EXPECT_EQ((*cpu)["backend"], "cpu");
  EXPECT_EQ(resolve_engine_json({{"queue_model", "cpu"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(resolve_engine_json(
                {{"queue", "redis://h"}, {"backend", "cpu"}, {"queue_model", "NVIDIA H200"}})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      resolve_engine_json({{"queue", "redis://h"}, {"backend", "cuda"}, {"queue_model", "cpu"}})
          .status()
          .code(),
      StatusCode::kInvalidArgument);
}

#if defined(KEVIN_HAVE_QUEUE)
TEST(EngineJson, AQueueGivenNoBackendFollowsTheLiveWorkers) {
  auto redis = queue::LocalRedis::start();
  if (redis.status().code() == StatusCode::kNotFound) GTEST_SKIP() << redis.status().message();
  ASSERT_TRUE(redis.is_ok()) << redis.status().to_string();
  const queue::RedisAddress& address = (*redis)->address();
  const Json queue = {{"queue", address.url()}};
  auto none = resolve_engine_json(queue);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_EQ((*none)["backend"], "cuda") << "no live worker: the default";
  auto c = queue::RedisConnection::connect(address);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const queue::Keys keys{address.prefix};
  // Heartbeats as `kevin worker` writes them (docs/distributed.md).
  const auto beat = [&](const std::string& name, const std::string& backend,
                        const std::string& device) {
    const Json state = {{"name", name},
                        {"backend", backend},
                        {"model", queue::model_key(device)},
                        {"device", device}};
    ASSERT_TRUE((*c)->command({"SET", keys.worker(name), state.dump(), "EX", "60"}).is_ok());
  };
  beat("w0", "cpu", "CPU");
  auto cpu = resolve_engine_json(queue);
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  EXPECT_EQ((*cpu)["backend"], "cpu") << "only CPU workers are alive: judge on them";
  auto forced = resolve_engine_json({{"queue", address.url()}, {"backend", "cuda"}});
  EXPECT_EQ((*forced)["backend"], "cuda") << "a given backend is kept";
  beat("g0", "cuda", "NVIDIA H200");
  auto gpu = resolve_engine_json(queue);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  EXPECT_EQ((*gpu)["backend"], "cuda") << "a GPU worker is alive";
  auto away = resolve_engine_json({{"queue", "redis://127.0.0.1:1/x"}});
  EXPECT_EQ(away.status().code(), StatusCode::kUnavailable) << away.status().to_string();
}
#endif

#if defined(KEVIN_HAVE_CURL)
// A server that lists `models` at /models (and answers 404 to everything else).
std::unique_ptr<testing::FakeHttpServer> model_server(const std::vector<std::string>& models,
                                                      int status = 200) {
  return std::make_unique<testing::FakeHttpServer>([models,
                                                    status](const testing::RecordedRequest& r) {
    if (r.method != "GET" || r.path != "/v1/models" || status != 200)
      return testing::FakeReply{status == 200 ? 404 : status, "{}", 0, false};
    Json data = Json::array();
    for (const auto& m : models) data.push_back({{"id", m}, {"object", "model"}});
    return testing::FakeReply{200, dump_json(Json{{"object", "list"}, {"data", data}}), 0, false};
  });
}

TEST(CheckServedModelTest, TheOnlyServedModelIsTheDefault) {
  auto server = model_server({"Qwen/Qwen2.5-Coder-7B-Instruct"});
  auto model = check_served_model(server->base_url() + "/v1", "", "KEVIN_TEST_NO_KEY");
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_EQ(*model, "Qwen/Qwen2.5-Coder-7B-Instruct");
  EXPECT_EQ(*check_served_model(server->base_url() + "/v1/", "Qwen/Qwen2.5-Coder-7B-Instruct", ""),
            "Qwen/Qwen2.5-Coder-7B-Instruct");
}

TEST(CheckServedModelTest, AModelTheServerDoesNotServeIsRefusedNamingTheServedOnes) {
  auto server = model_server({"a-model", "b-model"});
  auto wrong = check_served_model(server->base_url() + "/v1", "c-model", "");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      wrong.status().message().find("does not serve model 'c-model'; it serves a-model, b-model"),
      std::string::npos)
      << wrong.status().to_string();
  auto none = check_served_model(server->base_url() + "/v1", "", "");
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("choose one with --model"), std::string::npos)
      << none.status().to_string();
}

TEST(CheckServedModelTest, AnUnreachableServerIsUnavailableAndAnUnlistingOneIsBelieved) {
  auto down =
      check_served_model("http://127.0.0.1:9/v1", "m", "");  // discard port: nothing listens
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(
      down.status().message().find("cannot reach the model server at http://127.0.0.1:9/v1/models"),
      std::string::npos)
      << down.status().to_string();
  auto unlisting = model_server({}, 404);
  EXPECT_EQ(*check_served_model(unlisting->base_url() + "/v1", "m", ""), "m");
  EXPECT_EQ(check_served_model(unlisting->base_url() + "/v1", "", "").status().code(),
            StatusCode::kInvalidArgument);
  auto failing = model_server({}, 503);
  EXPECT_EQ(check_served_model(failing->base_url() + "/v1", "m", "").status().code(),
            StatusCode::kUnavailable);
}
#endif

}  // namespace
}  // namespace kevin::cli
