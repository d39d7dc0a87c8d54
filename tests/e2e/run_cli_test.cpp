// run_cli_test.cpp — `kevin run` end to end on the CPU backend against a fake
// OpenAI-compatible server on loopback (real HTTP): 2 tasks x 3 trajectories x 3 turns whose
// scripted answers give every verdict a model can earn, every field of trajectories.jsonl and
// the metrics checked; then a real run killed mid-way and finished with --resume, and runs
// stopped with Ctrl-C (outputs written, exit 130, nothing left running).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "core/file.h"
#include "core/mutex.h"
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
    return slow +
           "\nextern \"C\" int kevin_forward(const kevin_args* args) {\n  int rc = 0;\n"
           "  for (int i = 0; i < 300; ++i) rc |= inner_forward(args);\n  return rc;\n}\n";
  }
  if (kind == "compile_error")
    return "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* args) { "
           "return missing_name; }\n";
  if (kind == "runtime_error")
    return "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* args) { "
           "return args ? 3 : 4; }\n";
  // wrong_answer: a constant output
  return "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* args) {\n"
         "  kevin_tensor& out = args->outputs[0];\n  int64_t n = 1;\n"
         "  for (int32_t d = 0; d < out.ndim; ++d) n *= out.shape[d];\n"
         "  for (int64_t i = 0; i < n; ++i) static_cast<float*>(out.data)[i] = 0.25f;\n  return "
         "0;\n}\n";
}

// chain → answer kind per turn ("parse" = no code block). A parse error only ever opens a
// chain (turn 0) or ends one, so later turns can tell the chains apart by their summaries.
const std::map<std::string, std::vector<std::vector<std::string>>> kChains = {
    {"vector_add",
     {{"compile_error", "wrong_answer", "fast"},
      {"runtime_error", "slow", "fast"},
      {"fast", "fast", "parse"}}},
    {"row_softmax",
     {{"parse", "fast", "slow"},
      {"wrong_answer", "wrong_answer", "compile_error"},
      {"fast", "runtime_error", "fast"}}}};

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
      return {200, R"({"object": "list", "data": [{"id": "fake-kevin", "object": "model"}]})", 0,
              false};
    }
    auto body = parse_json(req.body);
    if (!body.is_ok()) return {400, "{\"error\": \"bad json\"}"};
    const std::string prompt = (*body)["messages"].back()["content"];
    const std::string task =
        prompt.find("vector_add") != std::string::npos ? "vector_add" : "row_softmax";
    int turn = 0;
    for (size_t at = prompt.find("### Attempt "); at != std::string::npos;
         at = prompt.find("### Attempt ", at + 1))
      ++turn;
    const int chain = chain_of(task, prompt, turn);
    const std::string kind =
        kChains.at(task)[static_cast<size_t>(chain)][static_cast<size_t>(turn)];
    std::string content;
    if (hang) {
      content =
          "```cpp\n#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* "
          "args) {\n"
          "  for (volatile int spin = 0;; spin = spin + 1) {\n  }\n  return args ? 0 : "
          "1;\n}\n```\nspins";
    } else if (kind == "parse") {
      content = "I ran out of ideas and wrote no code.";
    } else {
      const std::string good =
          fixture(task == "vector_add" ? "good_vector_add.cpp" : "good_row_softmax.cpp");
      content = "Here is my kernel.\n```cpp\n" + kernel_text(kind, good) + "```\nchain " +
                std::to_string(chain) + ": " + kind;
    }
    const Json reply = {
        {"choices", Json::array({{{"message",
                                   {{"role", "assistant"},
                                    {"content", content},
                                    {"reasoning_content", "thinking about " + task}}},
                                  {"finish_reason", "stop"}}})},
        {"usage", {{"prompt_tokens", 1000 + turn}, {"completion_tokens", 200}}}};
    return {200, dump_json(reply), delay_ms};
  }
  int delay_ms = 0;
  std::atomic<bool> hang{false};  // every answer a kernel that never returns

 private:
  int chain_of(const std::string& task, const std::string& prompt, int turn) {
    MutexLock lock(mu_);
    if (turn == 0) return next_[task]++ % 3;
    for (int c = 0; c < 3; ++c) {
      if (prompt.find("chain " + std::to_string(c) + ":") != std::string::npos) return c;
    }
    for (int c = 0; c < 3; ++c) {
      if (kChains.at(task)[static_cast<size_t>(c)][0] == "parse") return c;
    }
    return 0;
  }
  Mutex mu_;
  std::map<std::string, int> next_ GUARDED_BY(mu_);
};

// Polls RUN_DIR/run.db for up to a minute until it holds `at_least` turns; returns the count seen.
size_t wait_for_stored_turns(const fs::path& run_dir, size_t at_least) {
  size_t stored = 0;
  for (int i = 0; i < 1200 && stored < at_least; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(run_dir / "run.db")) continue;
    if (auto store = rollout::RunStore::open(run_dir / "run.db"); store.is_ok())
      stored = store->turn_count().value_or(0);
  }
  return stored;
}

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
    return {"--log-level",
            "warn",
            "run",
            "--tasks",
            (tasks / "vector_add.py").string() + "," + (tasks / "row_softmax.py").string(),
            "--trajectories",
            "3",
            "--turns",
            "3",
            "--llm",
            server_->base_url() + "/v1",
            "--model",
            "fake-kevin",
            "--backend",
            "cpu",
            "--out",
            out.string(),
            "--cache-dir",
            (fs::path(KEVIN_BUILD_DIR) / "e2e-cache").string(),
            "--parallel",
            "6"};
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
  EXPECT_EQ(server_->requests().front().path, "/v1/models")
      << "the server's models are checked before the run starts";
  for (const char* f : {"config.json", "run.db", "trajectories.jsonl", "metrics.json",
                        "best/tasks/vector_add.cpp", "best/tasks/row_softmax.cpp"}) {
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
    for (const char* field : {"task",          "trajectory",
                              "turn",          "allocation",
                              "parent",        "prompt",
                              "response",      "reasoning_chars",
                              "code",          "summary",
                              "verdict",       "reason",
                              "feedback",      "correct",
                              "speedup",       "candidate_ms",
                              "baseline_ms",   "compile_ms",
                              "eval_ms",       "generation_ms",
                              "finish_reason", "score",
                              "return",        "advantage",
                              "prompt_tokens", "completion_tokens",
                              "cached_eval"}) {
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
      EXPECT_NE(rec["feedback"].get<std::string>().find("could not be evaluated"),
                std::string::npos);
    } else {
      EXPECT_NE(rec["code"].get<std::string>().find("kevin_forward"), std::string::npos);
      EXPECT_NE(rec["summary"].get<std::string>().find("chain "), std::string::npos);
    }
    const std::map<std::string, std::string> feedback_mentions = {{"compile_error", "missing_name"},
                                                                  {"runtime_error", "returned 3"},
                                                                  {"wrong_answer", "incorrect"}};
    if (auto it = feedback_mentions.find(verdict); it != feedback_mentions.end()) {
      EXPECT_NE(rec["feedback"].get<std::string>().find(it->second), std::string::npos) << verdict;
    }
    if (correct) {
      const double s = rec["speedup"];
      EXPECT_GT(s, 0);
      EXPECT_NEAR(rec["score"].get<double>(), 0.3 + s, 1e-9);
      EXPECT_GT(rec["baseline_ms"].get<double>(), 0);
      EXPECT_NEAR(rec["baseline_ms"].get<double>() / rec["candidate_ms"].get<double>(), s,
                  1e-6 * s);
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
    EXPECT_GT(fastest[task], slowest[task])
        << task << ": the 300x repeated kernel must be the slower one";
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
      if (rec["task"] == t["task"] && rec["correct"].get<bool>())
        best = std::max(best, rec["speedup"].get<double>());
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
  size_t stored = wait_for_stored_turns(out, 5);
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
  EXPECT_EQ(server_->requests().size() - requests_before, 18u - stored)
      << "only unfinished turns are generated again";
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

// Processes whose parent is this test process: with PR_SET_CHILD_SUBREAPER, whatever kevin
// leaves behind is re-parented here instead of to init. Zombies are reaped, not counted.
std::vector<pid_t> living_children() {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto stat = read_file(entry.path() / "stat");
    if (!stat.is_ok()) continue;
    const size_t close = stat->rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat->c_str() + close + 1, " %c %d", &state, &ppid) != 2 || ppid != ::getpid())
      continue;
    const pid_t pid = static_cast<pid_t>(std::stoi(name));
    if (state == 'Z') {
      ::waitpid(pid, nullptr, WNOHANG);
      continue;
    }
    out.push_back(pid);
  }
  return out;
}

// True when `pid` descends from `ancestor`.
bool descends_from(pid_t pid, pid_t ancestor) {
  for (int hops = 0; pid > 1 && hops < 16; ++hops) {
    auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (!stat.is_ok()) return false;
    const size_t close = stat->rfind(')');
    char state = 0;
    int ppid = 0;
    if (close == std::string::npos ||
        std::sscanf(stat->c_str() + close + 1, " %c %d", &state, &ppid) != 2)
      return false;
    if (ppid == ancestor) return true;
    pid = ppid;
  }
  return false;
}

// A kevin-runner started (directly or not) by `kevin`.
bool runner_of(pid_t kevin) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto comm = read_file(entry.path() / "comm");
    if (comm.is_ok() && comm->rfind("kevin-runner", 0) == 0 &&
        descends_from(static_cast<pid_t>(std::stoi(name)), kevin)) {
      return true;
    }
  }
  return false;
}

class InterruptedRun : public RunCli {
 protected:
  void SetUp() override {
    RunCli::SetUp();
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    log_ = dir_->path() / "kevin.log";
  }
  void TearDown() override { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }

  // Starts kevin run in the background at the default log level, its output going to log_.
  sys::Child start(const fs::path& out) {
    auto args = run_args(out);
    args.erase(args.begin(), args.begin() + 2);  // "--log-level warn": the progress lines are info
    return start_kevin(std::move(args));
  }
  // Starts kevin with `args` in the background, its output going to log_.
  sys::Child start_kevin(std::vector<std::string> args) {
    args.insert(args.begin(), kevin_binary().string());
    sys::SpawnOptions o;
    o.argv = args;
    for (char** e = environ; *e != nullptr; ++e) o.env.emplace_back(*e);
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    o.fds = {{1, fd}, {2, fd}};
    auto child = sys::spawn(o);
    ::close(fd);
    EXPECT_TRUE(child.is_ok());
    return child.is_ok() ? std::move(child).value() : sys::Child();
  }
  std::string log() const { return read_file(log_).value_or(""); }
  // Waits up to 5 s for everything kevin started to be gone.
  static std::vector<pid_t> leftovers() {
    std::vector<pid_t> left = living_children();
    for (int i = 0; i < 50 && !left.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      left = living_children();
    }
    return left;
  }

  // "1234 kevin-runner, 1240 python3" for a failure message.
  static std::string describe(const std::vector<pid_t>& pids) {
    std::string out;
    for (pid_t p : pids) {
      out += std::to_string(p) + " " +
             read_file("/proc/" + std::to_string(p) + "/cmdline").value_or("?") + "; ";
    }
    return out;
  }

  fs::path log_;
};

TEST_F(InterruptedRun, CtrlCKeepsStoredTurnsWritesOutputsAndExits130) {
  const fs::path out = dir_->path() / "run";
  model_.delay_ms = 1500;  // generations are in flight when the signal comes
  sys::Child kevin = start(out);
  ASSERT_TRUE(kevin.running());
  ASSERT_GE(wait_for_stored_turns(out, 3), 3u) << log();
  const auto signalled = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(kevin.pid(), SIGINT), 0);
  auto ended = kevin.wait(sys::Deadline::after(std::chrono::seconds(60)));
  ASSERT_TRUE(ended.is_ok()) << log();
  EXPECT_TRUE(ended->exited && ended->code == 130) << ended->describe() << "\n" << log();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(20))
      << "generations in progress must be abandoned, not waited for";
  auto store = rollout::RunStore::open(out / "run.db");
  ASSERT_TRUE(store.is_ok());
  const size_t kept = *store->turn_count();
  ASSERT_LT(kept, 18u) << "the run finished before the signal";
  const std::string text = log();
  EXPECT_NE(text.find("interrupted: " + std::to_string(kept) + " turns kept"), std::string::npos)
      << text;
  EXPECT_NE(text.find("resume with: kevin run --resume " + out.string()), std::string::npos)
      << text;
  EXPECT_NE(text.find("tasks (a correct kernel)"), std::string::npos)
      << "the summary is printed: " << text;
  // Without a terminal the progress is a log line with the totals, the rate and the ETA.
  EXPECT_NE(text.find("run: turns " + std::to_string(kept) + "/18 · tasks "), std::string::npos)
      << text;
  EXPECT_NE(text.find(" turns/min · "), std::string::npos) << text;
  auto lines = read_file(out / "trajectories.jsonl");
  ASSERT_TRUE(lines.is_ok());
  EXPECT_EQ(parse_json_lines(*lines)->size(), kept);
  EXPECT_TRUE(fs::exists(out / "metrics.json"));
  const auto left = leftovers();
  EXPECT_TRUE(left.empty()) << "a process kevin started outlived it: " << describe(left);

  const KevinRun report =
      run_kevin({"report", out.string(), "--out", (dir_->path() / "report.html").string()});
  EXPECT_EQ(report.code, 0) << report.output;
  // The interrupted run continues where it stopped.
  model_.delay_ms = 0;
  const KevinRun resumed = run_kevin({"--log-level", "warn", "run", "--resume", out.string()});
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_EQ(*store->turn_count(), 18u);
}

TEST_F(InterruptedRun, ASecondCtrlCExitsAtOnceAndNoRunnerOutlivesKevin) {
  const fs::path out = dir_->path() / "run";
  model_.hang = true;  // its evaluations never end by themselves
  sys::Child kevin = start(out);
  ASSERT_TRUE(kevin.running());
  bool judging = false;
  for (int i = 0; i < 1200 && !judging; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    judging = runner_of(kevin.pid());
  }
  ASSERT_TRUE(judging) << "no candidate runner started: " << log();
  ASSERT_EQ(::kill(kevin.pid(), SIGINT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto still = kevin.wait(sys::Deadline::after(std::chrono::milliseconds(1)));
  ASSERT_FALSE(still.is_ok()) << "the first Ctrl-C waits for the evaluations in progress: "
                              << log();
  ASSERT_EQ(still.status().code(), StatusCode::kDeadlineExceeded) << still.status().to_string();
  ASSERT_NE(still.status().message().find("child still running"), std::string::npos)
      << still.status().to_string();
  const auto signalled = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(kevin.pid(), SIGINT), 0);
  auto ended = kevin.wait(sys::Deadline::after(std::chrono::seconds(30)));
  ASSERT_TRUE(ended.is_ok()) << log();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(3));
  EXPECT_TRUE(ended->exited && ended->code == 130) << ended->describe();
  EXPECT_NE(log().find("kevin run: exiting now"), std::string::npos) << log();
  const auto left = leftovers();
  EXPECT_TRUE(left.empty()) << "a runner, compiler or reference worker outlived kevin: "
                            << describe(left);
}

// A task whose reference data takes seconds to prepare: each forward call sleeps 60 ms, as a
// large computation would take, and preparation calls it for every correctness and timing set
// (about a hundred on the CPU backend).
constexpr const char* kSlowReferenceTask = R"(# A task whose reference is slow on purpose.
import time
import torch
import torch.nn as nn

N = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        time.sleep(0.06)
        return x * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
)";

// InterruptedRun whose model holds back answers to slow_double until release_ is set.
class SlowReferenceRun : public InterruptedRun {
 protected:
  void TearDown() override {
    release_ = true;
    server_.reset();  // joins the handlers before release_ goes
    InterruptedRun::TearDown();
  }
  std::atomic<bool> release_{false};
};

TEST_F(SlowReferenceRun, CtrlCDuringReferencePreparationStopsAtOnceAndResumes) {
  // A suite of two tasks in a fresh cache: vector_add (quick to prepare) and slow_double.
  const fs::path suite = dir_->path() / "suite";
  const fs::path cache = dir_->path() / "cache";
  fs::create_directories(suite);
  ASSERT_TRUE(write_file_atomic(suite / "slow_double.py", kSlowReferenceTask).is_ok());
  fs::copy_file(source_dir() / "tests/fixtures/tasks/vector_add.py", suite / "vector_add.py");
  // vector_add gets a correct kernel at once; slow_double's answers (a kernel that does not
  // compile) wait until the test lets them go, so its preparation starts once vector_add's turns
  // are judged.
  server_.emplace([this, good = fixture("good_vector_add.cpp")](
                      const testing::RecordedRequest& req) -> testing::FakeReply {
    if (req.method == "GET")
      return {200, R"({"object": "list", "data": [{"id": "fake-kevin", "object": "model"}]})", 0,
              false};
    const std::string prompt = parse_json(req.body).value()["messages"].back()["content"];
    const bool slow = prompt.find("slow_double") != std::string::npos;
    for (int i = 0; slow && !release_.load() && i < 1200; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string code =
        slow ? "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* "
               "args) { return missing_name; }\n"
             : good;
    const Json reply = {
        {"choices",
         Json::array(
             {{{"message", {{"role", "assistant"}, {"content", "```cpp\n" + code + "```\nmine"}}},
               {"finish_reason", "stop"}}})},
        {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 10}}}};
    return {200, dump_json(reply), 0};
  });
  const fs::path out = dir_->path() / "run";
  sys::Child kevin =
      start_kevin({"run", "--tasks", suite.string(), "--trajectories", "2", "--turns", "2", "--llm",
                   server_->base_url() + "/v1", "--model", "fake-kevin", "--backend", "cpu",
                   "--out", out.string(), "--cache-dir", cache.string(), "--parallel", "4"});
  ASSERT_TRUE(kevin.running());
  ASSERT_EQ(wait_for_stored_turns(out, 4), 4u) << log();
  release_ = true;
  bool preparing = false;
  for (int i = 0; i < 1200 && !preparing; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    preparing = log().find("preparing reference data for slow_double.py") != std::string::npos;
  }
  ASSERT_TRUE(preparing) << log();

  const auto signalled = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(kevin.pid(), SIGINT), 0);  // once
  auto ended = kevin.wait(sys::Deadline::after(std::chrono::seconds(60)));
  ASSERT_TRUE(ended.is_ok()) << log();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(5))
      << "the preparation in progress is abandoned, not waited for: " << log();
  EXPECT_TRUE(ended->exited && ended->code == 130) << ended->describe() << "\n" << log();
  const std::string text = log();
  EXPECT_NE(text.find("interrupted: 4 turns kept"), std::string::npos) << text;
  EXPECT_EQ(text.find("evaluation failed"), std::string::npos)
      << "an abandoned preparation is no failure of the run: " << text;
  auto store = rollout::RunStore::open(out / "run.db");
  ASSERT_TRUE(store.is_ok());
  EXPECT_EQ(*store->turn_count(), 4u) << "slow_double's turns are not stored as verdicts";
  const auto left = leftovers();
  EXPECT_TRUE(left.empty()) << "the reference worker outlived kevin: " << describe(left);
  // Only vector_add's data was made; nothing of slow_double's is cached, not even its time.
  int sets = 0, timed = 0;
  for (const auto& key : fs::directory_iterator(cache / "reference")) {
    sets += fs::exists(key.path() / "current") ? 1 : 0;
    timed += fs::exists(key.path() / "prepare_seconds") ? 1 : 0;
  }
  EXPECT_EQ(sets, 1);
  EXPECT_EQ(timed, 1);

  const KevinRun report =
      run_kevin({"report", out.string(), "--out", (dir_->path() / "report.html").string()});
  EXPECT_EQ(report.code, 0) << report.output;
  const KevinRun resumed = run_kevin({"--log-level", "warn", "run", "--resume", out.string()});
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_EQ(*store->turn_count(), 8u);
  EXPECT_NE(resumed.output.find("run complete: 8 turns"), std::string::npos) << resumed.output;
}

TEST(RunCliUsage, MissingTasksOrPolicyAreUsageErrors) {
  EXPECT_EQ(run_kevin({"run"}).code, 2);
  const std::string task = (source_dir() / "tests/fixtures/tasks/vector_add.py").string();
  const KevinRun no_llm = run_kevin({"run", "--tasks", task, "--backend", "cpu"});
  EXPECT_EQ(no_llm.code, 2);
  EXPECT_NE(no_llm.output.find("--llm"), std::string::npos);
  EXPECT_EQ(run_kevin({"run", "--tasks", "no_such_task_anywhere", "--backend", "cpu", "--llm",
                       "http://127.0.0.1:9/v1", "--model", "m"})
                .code,
            2);
  EXPECT_EQ(run_kevin({"run", "--tasks", task, "--budget", "12", "--allocations", "5x2",
                       "--backend", "cpu", "--llm", "http://127.0.0.1:9/v1", "--model", "m"})
                .code,
            2);
}

}  // namespace
}  // namespace kevin::e2e

namespace kevin::e2e {
namespace {

// `kevin run --format kernelbench`: the model is asked for ModelNew in KernelBench's style, and
// the last ```python block of its answer is judged as a KernelBench answer.
TEST(RunCliKernelBench, PromptsForModelNewAndJudgesTheLastPythonBlock) {
  auto dir = sys::TempDir::create("run-kb-e2e-");
  ASSERT_TRUE(dir.is_ok());
  const std::string good =
      read_file(source_dir() / "tests/fixtures/kernelbench/good_relu.py").value();
  const std::string fallback =
      read_file(source_dir() / "tests/fixtures/kernelbench/try_except_fallback.py").value();
  Mutex mu;
  std::vector<std::string> prompts;
  testing::FakeHttpServer server([&](const testing::RecordedRequest& req) -> testing::FakeReply {
    if (req.method == "GET")
      return {200, R"({"object": "list", "data": [{"id": "m", "object": "model"}]})", 0, false};
    const std::string prompt = parse_json(req.body).value()["messages"].back()["content"];
    const bool first = prompt.find("### Attempt") == std::string::npos;
    {
      MutexLock lock(mu);
      prompts.push_back(prompt);
    }
    // An early sketch, then the answer: the last python block is the one judged.
    const std::string content =
        first ? "A sketch:\n```python\nprint('draft')\n```\nThe answer:\n```python\n" + good +
                    "```\nReLU in one C++ loop."
              : "```python\n" + fallback + "```\nwith a fallback";
    const Json reply = {
        {"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", content}}},
                                  {"finish_reason", "stop"}}})},
        {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 10}}}};
    return {200, dump_json(reply), 0};
  });
  const fs::path out = dir->path() / "run";
  const KevinRun r = run_kevin({"--log-level",
                                "warn",
                                "run",
                                "--tasks",
                                (source_dir() / "tasks/level1/026_relu.py").string(),
                                "--format",
                                "kernelbench",
                                "--trajectories",
                                "1",
                                "--turns",
                                "2",
                                "--llm",
                                server.base_url() + "/v1",
                                "--model",
                                "m",
                                "--backend",
                                "cpu",
                                "--out",
                                out.string(),
                                "--cache-dir",
                                (fs::path(KEVIN_BUILD_DIR) / "e2e-cache").string()});
  ASSERT_EQ(r.code, 0) << r.output;
  auto records = parse_json_lines(read_file(out / "trajectories.jsonl").value());
  ASSERT_TRUE(records.is_ok());
  ASSERT_EQ(records->size(), 2u);
  // The answer judged is the last block's: correct — or, on a loaded 2-core machine, refused by
  // the timing phase's clock check, whose bound a 0.46 ms CPU call leaves little room under
  // (the check itself is the judge's tests' subject, not this one's).
  const Json& first = (*records)[0];
  const bool refused_by_the_clock =
      first["verdict"] == "rejected" && first["reason"] == "off_stream_work";
  if (!refused_by_the_clock) {
    EXPECT_EQ(first["verdict"], "correct") << first["feedback"];
  }
  EXPECT_NE((*records)[0]["code"].get<std::string>().find("class ModelNew"), std::string::npos);
  EXPECT_EQ((*records)[0]["summary"], "ReLU in one C++ loop.");
  EXPECT_EQ((*records)[1]["verdict"], "rejected");
  EXPECT_EQ((*records)[1]["reason"], "try_except_fallback");
  ASSERT_EQ(prompts.size(), 2u);
  for (const auto& p : prompts) {
    EXPECT_NE(p.find("class ModelNew(nn.Module)"), std::string::npos) << p;
    EXPECT_NE(p.find("load_inline"), std::string::npos);
    EXPECT_EQ(p.find("kevin_forward"), std::string::npos)
        << "no word of kevin's ABI in a KernelBench prompt";
  }
  EXPECT_NE(prompts[1].find("```python\n"), std::string::npos)
      << "earlier attempts are shown as python";
}

}  // namespace
}  // namespace kevin::e2e
