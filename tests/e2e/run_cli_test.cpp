// run_cli_test.cpp — `kevin run` end to end on the CPU backend against a fake
// OpenAI-compatible server on loopback (real HTTP): 2 tasks x 3 trajectories x 3 turns whose
// scripted answers give every verdict a model can earn, every field of trajectories.jsonl and
// the metrics checked; then a real run killed mid-way and finished with --resume.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/file.h"
#include "rollout/run_store.h"
#include "fake_http_server.h"
#include "sys/tempdir.h"
#include "kevin_cli.h"

namespace kevin::e2e {
namespace {
namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  auto text = read_file(source_dir() / "tests/fixtures/kernels/cpu" / name);
  return text.is_ok() ? *text : "";
}

// The kinds of answer the fake model gives.
std::string kernel_text(const std::string& kind, const std::string& good) {
  if (kind == "fast") return good;
  if (kind == "slow") {
    std::string slow = good;
    const std::string head = "extern \"C\" int kevin_forward(";
    slow.replace(slow.find(head), head.size(), "static int inner_forward(");
    return slow + "\nextern \"C\" int kevin_forward(const kevin_args* args) {\n  int rc = 0;\n"
                  "  for (int i = 0; i < 300; ++i) rc |= inner_forward(args);\n  return rc;\n}\n";
  }
  if (kind == "compile_error") return "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* args) { return missing_name; }\n";
  if (kind == "runtime_error") return "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* args) { return args ? 3 : 4; }\n";
  // wrong_answer: a constant output
  return "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* args) {\n"
         "  kevin_tensor& out = args->outputs[0];\n  int64_t n = 1;\n"
         "  for (int32_t d = 0; d < out.ndim; ++d) n *= out.shape[d];\n"
         "  for (int64_t i = 0; i < n; ++i) static_cast<float*>(out.data)[i] = 0.25f;\n  return 0;\n}\n";
}

// chain → answer kind per turn ("parse" = no code block). A parse error only ever opens a
// chain (turn 0) or ends one, so later turns can tell the chains apart by their summaries.
const std::map<std::string, std::vector<std::vector<std::string>>> kChains = {
    {"vector_add", {{"compile_error", "wrong_answer", "fast"}, {"runtime_error", "slow", "fast"}, {"fast", "fast", "parse"}}},
    {"row_softmax", {{"parse", "fast", "slow"}, {"wrong_answer", "wrong_answer", "compile_error"}, {"fast", "runtime_error", "fast"}}}};

std::string expected_verdict(const std::string& kind) {
  if (kind == "parse") return "parse_error";
  if (kind == "fast" || kind == "slow") return "correct";
  return kind;
}

// A fake chat-completions model following kChains.
class FakeModel {
 public:
  testing::FakeReply answer(const testing::RecordedRequest& req) {
    if (req.method == "GET" && req.path == "/v1/models") {  // a new run checks the server first
      return {200, R"({"object": "list", "data": [{"id": "fake-kevin", "object": "model"}]})", 0, false};
    }
    auto body = parse_json(req.body);
    if (!body.is_ok()) return {400, "{\"error\": \"bad json\"}"};
    const std::string prompt = (*body)["messages"].back()["content"];
    const std::string task = prompt.find("vector_add") != std::string::npos ? "vector_add" : "row_softmax";
    int turn = 0;
    for (size_t at = prompt.find("### Attempt "); at != std::string::npos; at = prompt.find("### Attempt ", at + 1)) ++turn;
    const int chain = chain_of(task, prompt, turn);
    const std::string kind = kChains.at(task)[static_cast<size_t>(chain)][static_cast<size_t>(turn)];
    std::string content;
    if (kind == "parse") {
      content = "I ran out of ideas and wrote no code.";
    } else {
      const std::string good = fixture(task == "vector_add" ? "good_vector_add.cpp" : "good_row_softmax.cpp");
      content = "Here is my kernel.\n```cpp\n" + kernel_text(kind, good) + "```\nchain " + std::to_string(chain) + ": " + kind;
    }
    const Json reply = {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", content},
                                                                {"reasoning_content", "thinking about " + task}}},
                                                  {"finish_reason", "stop"}}})},
                        {"usage", {{"prompt_tokens", 1000 + turn}, {"completion_tokens", 200}}}};
    return {200, dump_json(reply), delay_ms};
  }
  int delay_ms = 0;

 private:
  int chain_of(const std::string& task, const std::string& prompt, int turn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (turn == 0) return next_[task]++ % 3;
    for (int c = 0; c < 3; ++c) {
      if (prompt.find("chain " + std::to_string(c) + ":") != std::string::npos) return c;
    }
    for (int c = 0; c < 3; ++c) {
      if (kChains.at(task)[static_cast<size_t>(c)][0] == "parse") return c;
    }
    return 0;
  }
  std::mutex mu_;
  std::map<std::string, int> next_;
};

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("run-e2e-");
    ASSERT_TRUE(dir.is_ok());
    dir_.emplace(std::move(dir).value());
    server_.emplace([this](const testing::RecordedRequest& r) { return model_.answer(r); });
  }
  std::vector<std::string> run_args(const fs::path& out) {
    const fs::path tasks = source_dir() / "tests/fixtures/tasks";
    return {"--log-level", "warn", "run", "--tasks", (tasks / "vector_add.py").string() + "," + (tasks / "row_softmax.py").string(),
            "--trajectories", "3", "--turns", "3", "--llm", server_->base_url() + "/v1", "--model", "fake-kevin",
            "--backend", "cpu", "--out", out.string(), "--cache-dir", (fs::path(KEVIN_BUILD_DIR) / "e2e-cache").string(),
            "--parallel", "6"};
  }

  std::optional<sys::TempDir> dir_;
  FakeModel model_;
  std::optional<testing::FakeHttpServer> server_;
};

TEST_F(RunCli, EveryVerdictEveryFieldAndTheMetrics) {
  const fs::path out = dir_->path() / "run";
  const KevinRun r = run_kevin(run_args(out));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("run complete: 18 turns"), std::string::npos) << r.output;
  ASSERT_FALSE(server_->requests().empty());
  EXPECT_EQ(server_->requests().front().path, "/v1/models") << "the server's models are checked before the run starts";
  for (const char* f : {"config.json", "run.db", "trajectories.jsonl", "metrics.json", "best/tasks/vector_add.cpp",
                        "best/tasks/row_softmax.cpp"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  auto text = read_file(out / "trajectories.jsonl");
  ASSERT_TRUE(text.is_ok());
  auto records = parse_json_lines(*text);
  ASSERT_TRUE(records.is_ok());
  ASSERT_EQ(records->size(), 18u);

  // Per task: the multiset of verdict sequences over trajectories equals the script's.
  std::map<std::string, std::map<int, std::vector<std::string>>> sequences;
  std::map<std::string, double> fastest, slowest;
  int cached = 0;
  for (const Json& rec : *records) {
    for (const char* field : {"task", "trajectory", "turn", "allocation", "parent", "prompt", "response", "reasoning_chars",
                              "code", "summary", "verdict", "reason", "feedback", "correct", "speedup", "candidate_ms",
                              "baseline_ms", "compile_ms", "eval_ms", "generation_ms", "finish_reason", "score", "return",
                              "advantage", "prompt_tokens", "completion_tokens", "cached_eval"}) {
      EXPECT_TRUE(rec.contains(field)) << field;
    }
    const std::string task = rec["task"].get<std::string>().substr(6);  // "tasks/vector_add"
    const int turn = rec["turn"];
    sequences[task][rec["trajectory"].get<int>()].push_back(rec["verdict"]);
    EXPECT_EQ(rec["allocation"], "3x3");
    EXPECT_TRUE(rec["parent"].is_null());
    EXPECT_EQ(rec["prompt_tokens"], 1000 + turn);
    EXPECT_EQ(rec["completion_tokens"], 200);
    EXPECT_EQ(rec["finish_reason"], "stop");
    EXPECT_EQ(rec["reasoning_chars"].get<size_t>(), ("thinking about " + task).size());
    const Json& prompt = rec["prompt"];
    ASSERT_EQ(prompt.size(), 2u);
    EXPECT_EQ(prompt[0]["role"], "system");
    const std::string user = prompt[1]["content"];
    EXPECT_EQ(user.find("thinking about"), std::string::npos) << "no chain of thought is carried";
    EXPECT_EQ(user.find("### Attempt " + std::to_string(turn)) != std::string::npos, turn > 0);
    EXPECT_GE(rec["eval_ms"].get<double>(), 0);
    EXPECT_GE(rec["generation_ms"].get<double>(), 0);
    cached += rec["cached_eval"].get<bool>() ? 1 : 0;
    const std::string verdict = rec["verdict"];
    const bool correct = verdict == "correct";
    EXPECT_EQ(rec["correct"].get<bool>(), correct);
    if (verdict == "parse_error") {
      EXPECT_EQ(rec["code"], "");
      EXPECT_NE(rec["feedback"].get<std::string>().find("could not be evaluated"), std::string::npos);
    } else {
      EXPECT_NE(rec["code"].get<std::string>().find("kevin_forward"), std::string::npos);
      EXPECT_NE(rec["summary"].get<std::string>().find("chain "), std::string::npos);
    }
    const std::map<std::string, std::string> feedback_mentions = {
        {"compile_error", "missing_name"}, {"runtime_error", "returned 3"}, {"wrong_answer", "incorrect"}};
    if (auto it = feedback_mentions.find(verdict); it != feedback_mentions.end()) {
      EXPECT_NE(rec["feedback"].get<std::string>().find(it->second), std::string::npos) << verdict;
    }
    if (correct) {
      const double s = rec["speedup"];
      EXPECT_GT(s, 0);
      EXPECT_NEAR(rec["score"].get<double>(), 0.3 + s, 1e-9);
      EXPECT_GT(rec["baseline_ms"].get<double>(), 0);
      EXPECT_NEAR(rec["baseline_ms"].get<double>() / rec["candidate_ms"].get<double>(), s, 1e-6 * s);
      const bool slow = rec["summary"].get<std::string>().find("slow") != std::string::npos;
      auto& bound = slow ? slowest[task] : fastest[task];
      bound = slow ? std::max(bound, s) : (bound == 0 ? s : std::min(bound, s));
    } else {
      EXPECT_TRUE(rec["speedup"].is_null());
      EXPECT_EQ(rec["score"], 0.0);
    }
  }
  for (const auto& [task, chains] : kChains) {
    std::multiset<std::vector<std::string>> want, got;
    for (const auto& chain : chains) {
      std::vector<std::string> v;
      for (const auto& kind : chain) v.push_back(expected_verdict(kind));
      want.insert(v);
    }
    for (const auto& [id, seq] : sequences[task]) got.insert(seq);
    EXPECT_EQ(got, want) << task;
    EXPECT_GT(fastest[task], slowest[task]) << task << ": the 300x repeated kernel must be the slower one";
  }
  // Identical kernels are judged once: vector_add's fast kernel appears 4 times (3 reuses),
  // row_softmax's 3 times (2 reuses), row_softmax's wrong answer twice in one chain (1 reuse).
  EXPECT_EQ(cached, 6);

  auto metrics_text = read_file(out / "metrics.json");
  ASSERT_TRUE(metrics_text.is_ok());
  auto metrics = parse_json(*metrics_text);
  ASSERT_TRUE(metrics.is_ok());
  const Json& group = (*metrics)["groups"][0];
  EXPECT_EQ(group["allocation"], "3x3");
  EXPECT_NEAR(group["overall"]["correct"]["best"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(group["overall"]["correct"]["avg"].get<double>(), (1.0 + 2.0 / 3.0) / 2, 1e-12);
  EXPECT_EQ(group["counts"]["turns"], 18);
  EXPECT_EQ(group["counts"]["verdicts"]["parse_error"], 2);
  EXPECT_EQ(group["counts"]["verdicts"]["compile_error"], 2);
  EXPECT_EQ(group["counts"]["verdicts"]["runtime_error"], 2);
  EXPECT_EQ(group["counts"]["verdicts"]["wrong_answer"], 3);
  EXPECT_EQ(group["counts"]["verdicts"]["correct"], 9);
  for (const Json& t : group["tasks"]) {
    const std::string task = t["task"].get<std::string>().substr(6);
    // best@3 speedup is the fastest correct kernel of the task.
    double best = 0;
    for (const Json& rec : *records) {
      if (rec["task"] == t["task"] && rec["correct"].get<bool>()) best = std::max(best, rec["speedup"].get<double>());
    }
    EXPECT_NEAR(t["speedup"]["best"].get<double>(), best, 1e-9) << task;
    EXPECT_NEAR(t["correct"]["avg"].get<double>(), task == "vector_add" ? 1.0 : 2.0 / 3.0, 1e-12);
  }
  // kevin report renders the run.
  const KevinRun report = run_kevin({"report", out.string()});
  EXPECT_EQ(report.code, 0) << report.output;
  EXPECT_TRUE(fs::exists(out / "report.html"));
}

TEST_F(RunCli, KilledRunResumesWithoutRedoingTurns) {
  const fs::path out = dir_->path() / "run";
  model_.delay_ms = 150;  // slow enough to kill the run part-way
  auto args = run_args(out);
  args.insert(args.begin(), kevin_binary().string());
  sys::SpawnOptions spawn_options;
  spawn_options.argv = args;
  for (char** e = environ; *e != nullptr; ++e) spawn_options.env.emplace_back(*e);
  auto child = sys::spawn(spawn_options);
  ASSERT_TRUE(child.is_ok());
  // Wait until some turns are stored, then kill it hard.
  size_t stored = 0;
  for (int i = 0; i < 600 && stored < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(out / "run.db")) continue;
    if (auto store = rollout::RunStore::open(out / "run.db"); store.is_ok()) stored = store->turn_count().value_or(0);
  }
  child->kill_and_reap();
  auto store = rollout::RunStore::open(out / "run.db");
  ASSERT_TRUE(store.is_ok());
  stored = *store->turn_count();
  ASSERT_GE(stored, 5u);
  ASSERT_LT(stored, 18u) << "the run finished before it could be killed";
  const size_t requests_before = server_->requests().size();

  const KevinRun again = run_kevin({"--log-level", "warn", "run", "--resume", out.string()});
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(*store->turn_count(), 18u);
  EXPECT_EQ(server_->requests().size() - requests_before, 18u - stored) << "only unfinished turns are generated again";
  auto text = read_file(out / "trajectories.jsonl");
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(parse_json_lines(*text)->size(), 18u);

  // A finished run cannot be started over by accident, and a bad resume target is a usage error.
  const KevinRun twice = run_kevin(run_args(out));
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.output.find("--resume"), std::string::npos);
  const KevinRun missing = run_kevin({"run", "--resume", (dir_->path() / "nothing").string()});
  EXPECT_EQ(missing.code, 2);
  const KevinRun mixed = run_kevin({"run", "--resume", out.string(), "--turns", "5"});
  EXPECT_EQ(mixed.code, 2);
  EXPECT_NE(mixed.output.find("drop --turns"), std::string::npos) << mixed.output;
}

TEST(RunCliUsage, MissingTasksOrPolicyAreUsageErrors) {
  EXPECT_EQ(run_kevin({"run"}).code, 2);
  const std::string task = (source_dir() / "tests/fixtures/tasks/vector_add.py").string();
  const KevinRun no_llm = run_kevin({"run", "--tasks", task, "--backend", "cpu"});
  EXPECT_EQ(no_llm.code, 2);
  EXPECT_NE(no_llm.output.find("--llm"), std::string::npos);
  EXPECT_EQ(run_kevin({"run", "--tasks", "no_such_task_anywhere", "--backend", "cpu", "--llm", "http://127.0.0.1:9/v1",
                       "--model", "m"}).code, 2);
  EXPECT_EQ(run_kevin({"run", "--tasks", task, "--budget", "12", "--allocations", "5x2", "--backend", "cpu", "--llm",
                       "http://127.0.0.1:9/v1", "--model", "m"}).code, 2);
}

}  // namespace
}  // namespace kevin::e2e
