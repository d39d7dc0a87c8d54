// server_test.cpp — the service, OpenEnv messages, KernelGYM requests and routes, on the
// fake evaluator (no sockets, no engine): every verdict path a client sees and every bad
// input each protocol must answer with its own error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/file.h"
#include "env/fake_evaluator.h"
#include "server/body_budget.h"
#include "server/openenv.h"
#include "server/routes.h"
#include "sys/tempdir.h"

namespace kevin::server {
namespace {
namespace fs = std::filesystem;

const fs::path kTasks = fs::path(KEVIN_SOURCE_DIR) / "tests/fixtures/tasks";

std::vector<tasks::TaskInfo> served_tasks() {
  auto found = tasks::discover_tasks(kTasks);
  EXPECT_TRUE(found.is_ok()) << found.status().to_string();
  return found.is_ok() ? *found : std::vector<tasks::TaskInfo>{};
}

// A model reply whose fenced kernel carries the fake evaluator's directive.
std::string reply(const std::string& directive) {
  return "Here is my kernel.\n```cpp\n// fake: " + directive + "\nint x;\n```\nFaster now.";
}

Json frame(const WsReply& r) {
  auto j = parse_json(r.text);
  EXPECT_TRUE(j.is_ok()) << r.text;
  return j.is_ok() ? *j : Json();
}

std::string error_code(const WsReply& r) { return frame(r)["data"].value("code", ""); }

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest() : evaluator_("cpu", "Fake CPU") { make_service(4); }
  void make_service(int max_sessions, bool accept_reference_code = false) {
    ServiceOptions o;
    o.max_sessions = max_sessions;
    o.accept_reference_code = accept_reference_code;
    o.max_turns = 3;
    o.default_turns = 2;
    o.adhoc_dir = scratch_.path() / "adhoc";
    service_ = std::make_unique<EnvService>(&evaluator_, served_tasks(), o);
  }
  OpenEnvConnection connect() {
    auto s = service_->open_session();
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    return OpenEnvConnection(std::move(s).value());
  }
  static std::string step(const std::string& directive) {
    return dump_json({{"type", "step"}, {"data", {{"code", reply(directive)}}}});
  }

  sys::TempDir scratch_ = std::move(sys::TempDir::create("kevin-server-test-")).value();
  env::FakeEvaluator evaluator_;
  std::unique_ptr<EnvService> service_;
};

TEST_F(ServiceTest, AnEpisodeGoesFromWrongToCorrectWithTheKernelScoreAsReward) {
  OpenEnvConnection c = connect();
  const Json reset = frame(c.handle(
      R"({"type":"reset","data":{"problem_id":"vector_add","seed":3,"episode_id":"e1"}})"));
  ASSERT_EQ(reset["type"], "observation") << reset.dump();
  EXPECT_EQ(reset["data"]["reward"], nullptr);
  EXPECT_FALSE(reset["data"]["done"].get<bool>());
  const Json& first = reset["data"]["observation"];
  EXPECT_EQ(first["problem_id"], "tasks/vector_add");
  EXPECT_EQ(first["max_turns"], 2) << "the server's default episode length";
  EXPECT_NE(first["problem_description"].get<std::string>().find("vector_add"), std::string::npos);
  EXPECT_NE(first["reference_code"].get<std::string>().find("class Model"), std::string::npos);
  ASSERT_TRUE(first["prompt"].is_array());

  const Json wrong = frame(c.handle(step("wrong_answer")));
  EXPECT_EQ(wrong["data"]["observation"]["verdict"], "wrong_answer");
  EXPECT_EQ(wrong["data"]["reward"], 0.0);
  EXPECT_FALSE(wrong["data"]["done"].get<bool>());
  EXPECT_EQ(wrong["data"]["observation"]["correctness_pass"], false);
  EXPECT_NE(wrong["data"]["observation"]["prompt"].dump().find("Fake evaluation verdict"),
            std::string::npos)
      << "the next prompt carries the feedback of the turn";

  const Json right = frame(c.handle(step("correct speedup=2.5")));
  EXPECT_EQ(right["data"]["observation"]["verdict"], "correct");
  EXPECT_DOUBLE_EQ(right["data"]["reward"].get<double>(), 0.3 + 2.5);
  EXPECT_DOUBLE_EQ(right["data"]["observation"]["speedup"].get<double>(), 2.5);
  EXPECT_TRUE(right["data"]["done"].get<bool>()) << "the second of two turns ends the episode";
  EXPECT_EQ(right["data"]["observation"]["prompt"], nullptr);

  const Json state = frame(c.handle(R"({"type":"state"})"));
  EXPECT_EQ(state["type"], "state");
  EXPECT_EQ(state["data"]["episode_id"], "e1");
  EXPECT_EQ(state["data"]["step_count"], 2);
  EXPECT_EQ(state["data"]["verdicts"], Json::array({"wrong_answer", "correct"}));
  EXPECT_EQ(evaluator_.calls(), 2);
}

TEST_F(ServiceTest, AReplyWithoutCodeIsAParseErrorTurnNotAnError) {
  OpenEnvConnection c = connect();
  frame(c.handle(R"({"type":"reset","data":{"problem_id":"vector_add"}})"));
  const Json turn = frame(c.handle(R"({"type":"step","data":{"code":"I could not write it."}})"));
  ASSERT_EQ(turn["type"], "observation") << turn.dump();
  EXPECT_EQ(turn["data"]["observation"]["verdict"], "parse_error");
  EXPECT_EQ(turn["data"]["reward"], 0.0);
  EXPECT_EQ(evaluator_.calls(), 0);
}

TEST_F(ServiceTest, AReplyThatIsABareSourceIsTheKernel) {
  OpenEnvConnection c = connect();
  frame(c.handle(R"({"type":"reset","data":{"problem_id":"vector_add"}})"));
  const std::string bare =
      "// fake: correct speedup=2\nextern \"C\" int kevin_forward(const kevin_args*) { return 0; "
      "}\n";
  const Json turn = frame(c.handle(dump_json({{"type", "step"}, {"data", {{"code", bare}}}})));
  EXPECT_EQ(turn["data"]["observation"]["verdict"], "correct")
      << "a client stripped the fences of a one-block reply";
}

TEST_F(ServiceTest, EveryBadMessageGetsItsOpenEnvErrorAndTheSessionGoesOn) {
  OpenEnvConnection c = connect();
  EXPECT_EQ(error_code(c.handle("{not json")), kInvalidJson);
  EXPECT_EQ(error_code(c.handle("[1,2]")), kUnknownType);
  EXPECT_EQ(error_code(c.handle(R"({"data":{}})")), kUnknownType);
  EXPECT_EQ(error_code(c.handle(R"({"type":"dance"})")), kUnknownType);
  const Json extra = frame(c.handle(R"({"type":"state","extra":1})"));
  EXPECT_EQ(extra["data"]["code"], kValidationError);
  EXPECT_TRUE(extra["data"]["errors"].is_array());
  const WsReply early = c.handle(step("correct"));
  EXPECT_EQ(error_code(early), kExecutionError);
  EXPECT_NE(frame(early)["data"]["message"].get<std::string>().find("reset"), std::string::npos);
  EXPECT_EQ(error_code(c.handle(R"({"type":"reset","data":{"problem_id":"no_such_task"}})")),
            kExecutionError);
  EXPECT_EQ(error_code(c.handle(R"({"type":"reset","data":{"max_turns":99}})")), kValidationError);
  EXPECT_EQ(error_code(c.handle(R"({"type":"reset","data":{"seed":-1}})")), kValidationError);
  EXPECT_EQ(error_code(c.handle(R"({"type":"reset","data":{"temperature":1}})")), kValidationError);
  ASSERT_EQ(frame(c.handle(
                R"({"type":"reset","data":{"problem_id":"vector_add","max_turns":1}})"))["type"],
            "observation");
  EXPECT_EQ(error_code(c.handle(R"({"type":"step","data":{}})")), kValidationError);
  EXPECT_EQ(error_code(c.handle(R"({"type":"step","data":{"code":7}})")), kValidationError);
  EXPECT_EQ(error_code(c.handle(R"({"type":"step","data":{"code":"x","tools":[]}})")),
            kValidationError);
  ASSERT_EQ(frame(c.handle(step("correct")))["data"]["done"], true);
  const WsReply after = c.handle(step("correct"));
  EXPECT_EQ(error_code(after), kExecutionError);
  EXPECT_NE(frame(after)["data"]["message"].get<std::string>().find("done"), std::string::npos);
  EXPECT_EQ(evaluator_.calls(), 1);
  EXPECT_TRUE(c.handle(R"({"type":"close"})").close);
}

TEST_F(ServiceTest, DeeplyNestedOrHugeFramesAreRefusedBeforeBeingBuilt) {
  OpenEnvConnection c = connect();
  EXPECT_EQ(error_code(c.handle(std::string(100, '[') + std::string(100, ']'))), kInvalidJson);
  const std::string huge =
      R"({"type":"step","data":{"code":")" + std::string(9u << 20, 'a') + "\"}}";
  EXPECT_EQ(error_code(c.handle(huge)), kInvalidJson);
}

TEST_F(ServiceTest, AHarnessFailureIsAnExecutionErrorAndTheStepCanBeRetried) {
  OpenEnvConnection c = connect();
  frame(c.handle(R"({"type":"reset","data":{"problem_id":"vector_add"}})"));
  EXPECT_EQ(error_code(c.handle(step("harness_error"))), kExecutionError);
  const Json retried = frame(c.handle(step("correct")));
  EXPECT_EQ(retried["data"]["observation"]["turn"], 1) << "the failed step recorded no turn";
  EXPECT_NE(service_->metrics().prometheus(0, 0).find("verdict=\"harness_error\"} 1"),
            std::string::npos);
}

TEST_F(ServiceTest, SessionsBeyondTheLimitAreRefusedUntilOneCloses) {
  make_service(2);
  auto a = service_->open_session();
  auto b = service_->open_session();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  auto c = service_->open_session();
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  a->reset();
  EXPECT_TRUE(service_->open_session().is_ok());
  EXPECT_NE(service_->metrics().prometheus(0, 0).find("kevin_sessions_refused_total 1"),
            std::string::npos);
}

TEST_F(ServiceTest, TaskNamesCannotReachFilesOutsideTheServedSet) {
  EXPECT_TRUE(service_->find_task("tasks/vector_add").is_ok());
  EXPECT_TRUE(service_->find_task("vector_add").is_ok());
  const std::vector<std::string> outside = {
      "../../etc/passwd",          "/etc/passwd",   (kTasks / "vector_add.py").string(),
      "tasks/../tasks/vector_add", "vector_add.py", ""};
  for (const std::string& name : outside) {
    auto t = service_->find_task(name);
    ASSERT_FALSE(t.is_ok()) << name;
    EXPECT_EQ(t.status().code(), StatusCode::kNotFound) << name;
    EXPECT_NE(t.status().message().find("no served task \"" + name + "\""), std::string::npos)
        << t.status().to_string();
  }
}

TEST_F(ServiceTest, ResetWithoutAProblemPicksByTheSeed) {
  OpenEnvConnection c = connect();
  const auto& all = service_->tasks();
  const Json r = frame(c.handle(R"({"type":"reset","data":{"seed":9}})"));
  EXPECT_EQ(r["data"]["observation"]["problem_id"], all[9 % all.size()].id);
}

TEST_F(ServiceTest, AStoppingServiceRefusesNewWorkWithASessionError) {
  OpenEnvConnection c = connect();
  frame(c.handle(R"({"type":"reset","data":{"problem_id":"vector_add"}})"));
  service_->begin_shutdown();
  const WsReply r = c.handle(step("correct"));
  EXPECT_EQ(error_code(r), kSessionError);
  EXPECT_TRUE(r.close);
  auto refused = service_->open_session();
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("the server is stopping"), std::string::npos)
      << refused.status().to_string();
}

// --- stateless OpenEnv HTTP routes ---------------------------------------------------------

TEST_F(ServiceTest, StatelessHttpResetAndStepUseAFreshSessionEach) {
  const HttpReply reset = http_reset(*service_, R"({"problem_id":"row_softmax"})");
  ASSERT_EQ(reset.status, 200u) << reset.body;
  EXPECT_EQ(parse_json(reset.body)->at("observation")["problem_id"], "tasks/row_softmax");
  EXPECT_EQ(http_reset(*service_, "").status, 200u) << "an empty body is a reset without arguments";
  const HttpReply step = http_step(
      *service_,
      dump_json(
          {{"action", {{"code", reply("correct speedup=3")}, {"problem_id", "vector_add"}}}}));
  ASSERT_EQ(step.status, 200u) << step.body;
  const Json j = *parse_json(step.body);
  EXPECT_DOUBLE_EQ(j["reward"].get<double>(), 3.3);
  EXPECT_TRUE(j["done"].get<bool>());
  EXPECT_EQ(service_->metrics().active_sessions(), 0)
      << "the sessions were closed after each request";
  EXPECT_EQ(http_step(*service_, R"({"action":{"code":"x"}})").status, 422u) << "no problem_id";
  EXPECT_EQ(http_step(*service_, R"({"action":{"kode":"x"},"problem_id":"vector_add"})").status,
            422u);
  EXPECT_EQ(http_step(*service_, R"({"problem_id":"vector_add"})").status, 422u);
  EXPECT_EQ(http_step(*service_, "nope").status, 422u);
  EXPECT_EQ(http_reset(*service_, R"({"problem_id":"nope"})").status, 422u);
}

// --- KernelGYM REST -------------------------------------------------------------------------

class GymTest : public ServiceTest {
 protected:
  GymTest() : gym_(service_.get()) {}
  static std::string request(const std::string& id, const std::string& directive,
                             Json extra = Json::object()) {
    Json r = {{"task_id", id},
              {"problem_id", "vector_add"},
              {"kernel_code", "// fake: " + directive + "\nint x;\n"}};
    r.update(extra);
    return dump_json(r);
  }
  static Json body(const HttpReply& r) { return *parse_json(r.body); }
  static std::string header(const HttpReply& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }
  KernelGymApi gym_;
};

TEST_F(GymTest, AnEvaluationHasKernelGymsFieldsAndIsIdempotentByTaskId) {
  const HttpReply first = gym_.evaluate(request("job-1", "correct speedup=4"));
  ASSERT_EQ(first.status, 200u) << first.body;
  const Json r = body(first);
  for (const char* field :
       {"task_id", "status", "compiled", "correctness", "decoy_kernel", "reference_runtime",
        "kernel_runtime", "speedup", "metadata", "error_message", "error_code", "submitted_at",
        "completed_at", "processing_time"}) {
    EXPECT_TRUE(r.contains(field)) << field;
  }
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["correctness"].get<bool>());
  EXPECT_DOUBLE_EQ(r["speedup"].get<double>(), 4);
  EXPECT_EQ(r["error_code"], nullptr);
  const Json again = body(gym_.evaluate(request("job-1", "wrong_answer")));
  EXPECT_EQ(again, r) << "the stored result, not a new evaluation";
  EXPECT_EQ(evaluator_.calls(), 1);
  const Json refreshed =
      body(gym_.evaluate(request("job-1", "wrong_answer", {{"force_refresh", true}})));
  EXPECT_FALSE(refreshed["correctness"].get<bool>());
  EXPECT_EQ(refreshed["error_code"], "CORRECTNESS_ERROR");
  EXPECT_EQ(evaluator_.calls(), 2);
  EXPECT_EQ(body(gym_.status("job-1"))["status"], "completed");
  EXPECT_EQ(body(gym_.results("job-1")), refreshed);
  EXPECT_EQ(gym_.status("job-2").status, 404u);
  EXPECT_EQ(gym_.results("job-2").status, 404u);
}

TEST_F(GymTest, ASecondRequestForATaskIdInFlightWaitsForTheFirstResult) {
  HttpReply first, second;
  std::thread a([&] { first = gym_.evaluate(request("dup", "correct speedup=2 delay_ms=300")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread b([&] { second = gym_.evaluate(request("dup", "wrong_answer")); });
  a.join();
  b.join();
  EXPECT_EQ(evaluator_.calls(), 1);
  EXPECT_EQ(first.body, second.body);
  EXPECT_TRUE(body(second)["correctness"].get<bool>());
}

TEST_F(GymTest, VerdictsMapOntoKernelGymsErrorCodesAndTheDecoyFlag) {
  const std::pair<const char*, const char*> cases[] = {{"compile_error", "COMPILATION_ERROR"},
                                                       {"runtime_error", "RUNTIME_ERROR"},
                                                       {"timeout", "TIMEOUT_ERROR"},
                                                       {"wrong_answer", "CORRECTNESS_ERROR"},
                                                       {"rejected", "VALIDATION_ERROR"}};
  for (const auto& [verdict, code] : cases) {
    const Json r = body(gym_.evaluate(request(std::string("v-") + verdict, verdict)));
    EXPECT_EQ(r["status"], "completed") << verdict;
    EXPECT_EQ(r["error_code"], code) << verdict;
    EXPECT_EQ(r["decoy_kernel"].get<bool>(), std::string(verdict) == "rejected") << verdict;
    EXPECT_EQ(r["compiled"].get<bool>(),
              std::string(verdict) != "compile_error" && std::string(verdict) != "rejected");
    EXPECT_EQ(r["speedup"], nullptr) << verdict;
  }
}

TEST_F(GymTest, BadRequestsAre400WithTheValidationCode) {
  for (const std::string& bad :
       {std::string("not json"), std::string(R"({"kernel_code":"x","problem_id":"vector_add"})"),
        std::string(R"({"task_id":"a","problem_id":"vector_add"})"),
        std::string(R"({"task_id":"a","kernel_code":"x"})"),
        request("a", "correct", {{"num_perf_trials", 0}}),
        request("a", "correct", {{"timeout", 5}}), request("a", "correct", {{"backend", "triton"}}),
        request("a", "correct", {{"force_refresh", "yes"}}),
        request("a", "correct", {{"problem_id", "../../etc/passwd"}}),
        dump_json({{"task_id", "a"},
                   {"problem_id", "vector_add"},
                   {"kernel_code", "class ModelNew(nn.Module):\n    pass\n"}})}) {
    const HttpReply r = gym_.evaluate(bad);
    EXPECT_EQ(r.status, 400u) << bad << " -> " << r.body;
    EXPECT_EQ(header(r, "X-Error-Code"), "VALIDATION_ERROR") << bad;
  }
  EXPECT_EQ(evaluator_.calls(), 0);
  EXPECT_EQ(gym_.status("a").status, 404u) << "a refused request leaves no record";
}

TEST_F(GymTest, AHarnessFailureIs500AndIsNotReplayed) {
  const HttpReply failed = gym_.evaluate(request("h", "harness_error"));
  EXPECT_EQ(failed.status, 500u);
  EXPECT_EQ(header(failed, "X-Error-Code"), "SYSTEM_ERROR");
  EXPECT_EQ(body(failed)["status"], "failed");
  EXPECT_EQ(body(gym_.evaluate(request("h", "correct"))).at("correctness"), true)
      << "retried, not replayed";
}

TEST_F(GymTest, AReferenceSourceIsRefusedUnlessTheOperatorTrustsClients) {
  const std::string reference = *read_file(kTasks / "vector_add.py");
  const HttpReply refused = gym_.evaluate(dump_json({{"task_id", "ref-0"},
                                                     {"reference_code", reference},
                                                     {"kernel_code", "// fake: correct\n"}}));
  EXPECT_EQ(refused.status, 400u);
  EXPECT_NE(refused.body.find("--accept-reference-code"), std::string::npos) << refused.body;
  EXPECT_EQ(evaluator_.calls(), 0);
  EXPECT_FALSE(fs::exists(scratch_.path() / "adhoc")) << "nothing of the source was written";
}

TEST_F(GymTest, AReferenceSourceBecomesAContentAddressedTask) {
  make_service(4, /*accept_reference_code=*/true);
  KernelGymApi gym(service_.get());
  const std::string reference = *read_file(kTasks / "vector_add.py");
  const Json r = body(gym.evaluate(dump_json({{"task_id", "ref-1"},
                                              {"reference_code", reference},
                                              {"kernel_code", "// fake: correct\n"}})));
  EXPECT_EQ(r["status"], "completed");
  const auto files =
      std::distance(fs::directory_iterator(scratch_.path() / "adhoc"), fs::directory_iterator());
  EXPECT_EQ(files, 1);
  gym.evaluate(dump_json({{"task_id", "ref-2"},
                          {"reference_code", reference},
                          {"kernel_code", "// fake: correct\n"}}));
  EXPECT_EQ(
      std::distance(fs::directory_iterator(scratch_.path() / "adhoc"), fs::directory_iterator()), 1)
      << "the same source is the same task";
}

TEST_F(GymTest, ABatchRunsItsEvaluationsConcurrently) {
  Json tasks = Json::array();
  for (int i = 0; i < 8; ++i) {
    tasks.push_back(*parse_json(request(
        "b" + std::to_string(i), i == 7 ? "compile_error delay_ms=300" : "correct delay_ms=300")));
  }
  tasks.push_back({{"task_id", "b-bad"}});
  const auto start = std::chrono::steady_clock::now();
  const HttpReply r = gym_.evaluate_batch(dump_json({{"batch_id", "B"}, {"tasks", tasks}}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.status, 200u) << r.body;
  const Json j = body(r);
  EXPECT_EQ(j["batch_id"], "B");
  EXPECT_EQ(j["total_tasks"], 9);
  EXPECT_EQ(j["completed_tasks"], 8);
  EXPECT_EQ(j["failed_tasks"], 1);
  EXPECT_EQ(j["batch_status"], "partial");
  EXPECT_EQ(j["results"][7]["error_code"], "COMPILATION_ERROR")
      << "results keep the order of the tasks";
  EXPECT_LT(seconds, 8 * 0.3 / 2) << "eight 0.3 s evaluations one after another would take 2.4 s";
}

// --- routes ---------------------------------------------------------------------------------

TEST(BearerTest, OnlyTheExactTokenAfterBearerAuthorizes) {
  EXPECT_TRUE(bearer_authorized("", ""));
  EXPECT_TRUE(bearer_authorized("Basic anything", "")) << "no token set: every request passes";
  EXPECT_FALSE(bearer_authorized("", "s3cret"));
  EXPECT_FALSE(bearer_authorized("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(bearer_authorized("Bearer s3cret!", "s3cret"));
  EXPECT_FALSE(bearer_authorized("Basic s3cret", "s3cret"));
  EXPECT_TRUE(bearer_authorized("Bearer s3cret", "s3cret"));
}

TEST_F(GymTest, RoutesDispatchAndRefuseWhatTheyDoNotServe) {
  EnvRoutes routes(service_.get(), &gym_);
  const ServerLoad idle;
  auto get = [&](const char* target) { return routes.handle("GET", target, "", idle); };
  EXPECT_TRUE(routes.open_path("/health"));
  EXPECT_FALSE(routes.open_path("/metadata"));

  EXPECT_EQ(parse_json(get("/health").body)->at("status"), "healthy");
  const Json meta = *parse_json(get("/metadata").body);
  EXPECT_EQ(meta["name"], "kevin");
  EXPECT_EQ(meta["tasks"].size(), service_->tasks().size());
  const Json schema = *parse_json(get("/schema?x=1").body);
  EXPECT_EQ(schema["action"]["title"], "KernelAction");
  EXPECT_EQ(schema["action"]["required"], Json::array({"code"}))
      << "one required field: verifiers sends raw replies";
  EXPECT_EQ(parse_json(get("/state").body)->at("step_count"), 0);
  EXPECT_EQ(get("/nowhere").status, 404u);
  EXPECT_EQ(get("/evaluate").status, 405u);
  EXPECT_EQ(routes.handle("POST", "/health", "", idle).status, 405u);
  const HttpReply metrics = get("/metrics");
  EXPECT_EQ(metrics.content_type.rfind("text/plain", 0), 0u);
  EXPECT_NE(metrics.body.find("# TYPE kevin_evaluation_seconds histogram"), std::string::npos);
  const ServerLoad busy{3, 600};
  EXPECT_NE(routes.handle("GET", "/metrics", "", busy)
                .body.find("\nkevin_request_body_bytes_reserved 600\n"),
            std::string::npos);
  EXPECT_EQ(
      parse_json(routes.handle("GET", "/health", "", busy).body)->at("queue_status")["queued"], 3);
  EXPECT_EQ(routes.handle("POST", "/evaluate", request("r1", "correct"), idle).status, 200u);
  EXPECT_EQ(parse_json(get("/status/r1").body)->at("status"), "completed");
  EXPECT_EQ(request_path("/status/a%2Fb?q=1"), "/status/a/b");
  EXPECT_TRUE(routes.quick("GET", "/metrics"));
  EXPECT_FALSE(routes.quick("POST", "/evaluate"));
  for (const char* path : {"/reset", "/step", "/evaluate", "/evaluate/batch"}) {
    EXPECT_TRUE(routes.takes_body("POST", path)) << path;
    EXPECT_FALSE(routes.takes_body("GET", path)) << path;
  }
  EXPECT_FALSE(routes.takes_body("POST", "/health")) << "open without the token: no body read";
  EXPECT_FALSE(routes.takes_body("POST", "/nowhere"));
}

TEST_F(ServiceTest, ASocketBeyondTheSessionLimitIsRefusedWithTheCounts) {
  make_service(1);
  KernelGymApi gym(service_.get());
  EnvRoutes routes(service_.get(), &gym);
  SocketOpening first = routes.open_socket();
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<SocketConversation>>(first));
  SocketOpening second = routes.open_socket();
  ASSERT_TRUE(std::holds_alternative<SocketReply>(second));
  const SocketReply& refused = std::get<SocketReply>(second);
  EXPECT_TRUE(refused.close);
  const Json data = parse_json(refused.text)->at("data");
  EXPECT_EQ(data["code"], "CAPACITY_REACHED");
  EXPECT_EQ(data["max_sessions"], 1);
  EXPECT_EQ(data["active_sessions"], 1);
}

// --- the request-body budget ----------------------------------------------------------------

TEST(BodyBudgetTest, ReservationsTakeAndGiveBackExactly) {
  BodyBudget budget(100);
  BodyReservation a(&budget), b(&budget);
  EXPECT_TRUE(a.resize(60));
  EXPECT_FALSE(b.resize(41)) << "41 of the 40 bytes left";
  EXPECT_EQ(b.bytes(), 0u) << "a refused resize takes nothing";
  EXPECT_TRUE(b.resize(40));
  EXPECT_EQ(budget.used(), 100u);
  EXPECT_TRUE(a.resize(10));
  EXPECT_EQ(budget.used(), 50u) << "shrinking gives the surplus back";
  {
    BodyReservation moved(std::move(b));
    EXPECT_EQ(moved.bytes(), 40u);
    EXPECT_EQ(b.bytes(), 0u) << "a moved-from reservation holds nothing";
    EXPECT_EQ(budget.used(), 50u) << "a move neither takes nor gives back";
    EXPECT_TRUE(b.resize(50)) << "and may be resized again";
    EXPECT_EQ(budget.used(), 100u);
  }
  EXPECT_EQ(budget.used(), 60u) << "destroying a reservation gives its bytes back";
  EXPECT_EQ(budget.capacity(), 100u);
}

TEST(BodyBudgetTest, ConcurrentReservationsNeverPassTheCapacityAndAllComeBack) {
  constexpr size_t kCapacity = 1000;
  BodyBudget budget(kCapacity);
  BodyReservation held(&budget);
  ASSERT_TRUE(held.resize(750));  // the threads fight over 250 bytes, wanting up to 299 each
  std::atomic<size_t> most{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      BodyReservation r(&budget);
      for (size_t i = 0; i < 20000; ++i) {
        if (!r.resize((t * 37 + i * 13) % 300)) ++refused;
        size_t seen = budget.used(), before = most.load();
        while (seen > before && !most.compare_exchange_weak(before, seen)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), kCapacity);
  EXPECT_GT(refused.load(), 0);
  EXPECT_EQ(budget.used(), 750u) << "every thread's reservation was given back";
}

}  // namespace
}  // namespace kevin::server
