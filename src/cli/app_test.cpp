// app_test.cpp — the command line's contract: help, version, one-line errors, exit codes.
#include "cli/app.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kevin::cli {
namespace {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run(std::vector<const char*> args) {
  args.insert(args.begin(), "kevin");
  std::ostringstream out, err;
  const int code = run_cli(static_cast<int>(args.size()), args.data(), out, err);
  return {code, out.str(), err.str()};
}

size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (c == '\n');
  return n;
}

TEST(Cli, HelpListsEveryJob) {
  Outcome r = run({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* job :
       {"eval", "run", "train", "serve", "generate", "worker", "tasks", "report"}) {
    EXPECT_NE(r.out.find(job), std::string::npos) << job;
  }
}

TEST(Cli, HelpShowsEveryOptionsDefault) {
  Outcome r = run({"eval", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* expected :
       {"--seeds INT:INT in [1 - 64]=5", "--tolerance TEXT=default", "--timeout FLOAT:POSITIVE=20",
        "--timed-calls INT:INT in [1 - 10000]=100", "--backend TEXT:{auto,cuda,cpu}=auto"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
}

TEST(Cli, EveryCommandThatJudgesOffersTheSameEngineFlags) {
  std::vector<const char*> commands = {"eval", "run"};
#if defined(KEVIN_HAVE_SERVER)
  commands.push_back("serve");
#endif
#if defined(KEVIN_HAVE_QUEUE)
  commands.push_back("worker");
#endif
  for (const char* command : commands) {
    Outcome r = run({command, "--help"});
    EXPECT_EQ(r.code, kExitOk) << command;
    for (const char* flag :
         {"--backend TEXT:{auto,cuda,cpu}=auto", "--devices TEXT=all", "--jobs INT:NONNEGATIVE=0",
          "--reference-workers INT:INT in [1 - 64]=4", "--seeds INT:INT in [1 - 64]=5",
          "--tolerance TEXT=default", "--timeout FLOAT:POSITIVE=20",
          "--timed-calls INT:INT in [1 - 10000]=100", "--timing-ci FLOAT:FLOAT in [0 - 0.5]=0",
          "--format TEXT:{kevin,kernelbench,auto}", "--python TEXT", "--cache-dir TEXT",
          "--no-sandbox", "--allow-degenerate-tasks"}) {
      EXPECT_NE(r.out.find(flag), std::string::npos) << command << " lacks " << flag;
    }
  }
}

TEST(Cli, EveryCommandsHelpEndsWithExamplesOfItself) {
  std::vector<std::string> commands = {"eval", "run", "tasks", "report", "generate"};
#if defined(KEVIN_HAVE_TRAIN)
  commands.push_back("train");
#endif
#if defined(KEVIN_HAVE_SERVER)
  commands.push_back("serve");
#endif
#if defined(KEVIN_HAVE_QUEUE)
  commands.insert(commands.end(), {"worker", "workers"});
#endif
  for (const auto& command : commands) {
    Outcome r = run({command.c_str(), "--help"});
    EXPECT_EQ(r.code, kExitOk) << command;
    const size_t examples = r.out.find("Examples:\n");
    ASSERT_NE(examples, std::string::npos) << command << "\n" << r.out;
    size_t shown = 0;
    for (size_t at = r.out.find("\n  kevin " + command + " ", examples); at != std::string::npos;
         at = r.out.find("\n  kevin " + command + " ", at + 1)) {
      ++shown;
    }
    EXPECT_GE(shown, 2u) << command << "\n" << r.out;
  }
}

TEST(Cli, EveryCommandGivesAStatusTheSameExitCode) {
  EXPECT_EQ(exit_code_of(Status::ok()), kExitOk);
  for (const Status& usage : {invalid_argument("x"), not_found("x"), already_exists("x"),
                              Status(StatusCode::kUnimplemented, "x")}) {
    EXPECT_EQ(exit_code_of(usage), kExitUsage) << usage.to_string();
  }
  for (const Status& failure :
       {failed_precondition("x"), unavailable("x"), internal_error("x"), deadline_exceeded("x")}) {
    EXPECT_EQ(exit_code_of(failure), kExitFailure) << failure.to_string();
  }
  std::ostringstream err;
  EXPECT_EQ(report_failure(err, "worker", not_found("no such queue")), kExitUsage);
  EXPECT_EQ(err.str(), "kevin worker: no such queue\n");
}

TEST(Cli, VersionPrintsName) {
  Outcome r = run({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out.rfind("kevin ", 0), 0u);
}

TEST(Cli, UnknownSubcommandIsOneLineUsageError) {
  Outcome r = run({"frobnicate"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("kevin: error:"), std::string::npos);
}

TEST(Cli, MisspeltCommandsAndFlagsGetASuggestion) {
  Outcome command = run({"evl", "--task", "t.py"});
  EXPECT_EQ(command.code, kExitUsage);
  EXPECT_NE(command.err.find("unknown command 'evl' (did you mean 'eval'?)"), std::string::npos)
      << command.err;
  Outcome flag = run({"tasks", "list", "--jsn"});
  EXPECT_EQ(flag.code, kExitUsage);
  EXPECT_EQ(line_count(flag.err), 1u) << flag.err;
  EXPECT_NE(flag.err.find("(did you mean '--json'?)"), std::string::npos) << flag.err;
  Outcome parent_flag = run({"tasks", "list", "--taks", "x"});
  EXPECT_NE(parent_flag.err.find("(did you mean '--tasks'?)"), std::string::npos)
      << parent_flag.err;
  Outcome far = run({"zzzzzzzz"});
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos)
      << "no suggestion when nothing is near\n"
      << far.err;
}

TEST(Cli, BadGlobalFlagIsUsageError) {
  Outcome r = run({"--no-such-flag", "eval"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
  Outcome bad_level = run({"--log-level", "loud", "train"});
  EXPECT_EQ(bad_level.code, kExitUsage);
}

TEST(Cli, NoSubcommandIsUsageError) {
  Outcome r = run({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(line_count(r.err), 1u) << r.err;
}

TEST(Cli, WorkerNeedsARedisQueueUrl) {
#if defined(KEVIN_HAVE_QUEUE)
  const Outcome missing = run({"worker"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_NE(missing.err.find("--queue"), std::string::npos) << missing.err;
  const Outcome wrong = run({"worker", "--queue", "http://127.0.0.1:6379", "--backend", "cpu"});
  EXPECT_EQ(wrong.code, kExitUsage);
  EXPECT_NE(wrong.err.find("redis://"), std::string::npos) << wrong.err;
  EXPECT_EQ(line_count(wrong.err), 1u) << wrong.err;
#else
  const Outcome r = run({"worker", "--queue", "redis://x"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_NE(r.err.find("without hiredis"), std::string::npos) << r.err;
#endif
}

TEST(Cli, ServeRefusesAnOpenHostWithoutATokenAndUnknownTasks) {
#if defined(KEVIN_HAVE_SERVER)
  const Outcome open = run({"serve", "--host", "0.0.0.0", "--backend", "cpu"});
  EXPECT_EQ(open.code, kExitUsage);
  EXPECT_EQ(line_count(open.err), 1u) << open.err;
  EXPECT_NE(open.err.find("--token-file"), std::string::npos) << open.err;
  const std::string blank = ::testing::TempDir() + "/kevin-blank-token";
  std::ofstream(blank) << " \n";
  const Outcome empty_token = run({"serve", "--token-file", blank.c_str(), "--backend", "cpu"});
  EXPECT_EQ(empty_token.code, kExitUsage);
  EXPECT_NE(empty_token.err.find("empty"), std::string::npos) << empty_token.err;
  const Outcome no_tasks = run({"serve", "--tasks", "/nonexistent/suite", "--backend", "cpu"});
  EXPECT_EQ(no_tasks.code, kExitUsage);
  EXPECT_EQ(line_count(no_tasks.err), 1u) << no_tasks.err;
#else
  const Outcome r = run({"serve"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_NE(r.err.find("without Boost"), std::string::npos) << r.err;
#endif
}

TEST(Cli, GenerateAnswersAPromptAndRefusesBadInputInOneLine) {
  const std::string script = ::testing::TempDir() + "/kevin-generate-script.jsonl";
  std::ofstream(script) << R"({"response": "the answer", "reasoning": "a thought"})"
                        << "\n";
  const std::string policy = "scripted:" + script;
  const Outcome answered =
      run({"generate", "--policy", policy.c_str(), "--prompt", "hi", "--show-reasoning"});
  EXPECT_EQ(answered.code, kExitOk) << answered.err;
  EXPECT_EQ(answered.out, "<think>\na thought\n</think>\nthe answer\n");
  const Outcome no_prompt = run({"generate", "--policy", policy.c_str()});
  EXPECT_EQ(no_prompt.code, kExitUsage);
  EXPECT_NE(no_prompt.err.find("--prompt"), std::string::npos) << no_prompt.err;
  const Outcome missing =
      run({"generate", "--policy", "local:/nonexistent/model", "--prompt", "x"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_EQ(line_count(missing.err), 1u) << missing.err;
  const Outcome bad_kind = run({"generate", "--policy", "model.bin", "--prompt", "x"});
  EXPECT_EQ(bad_kind.code, kExitUsage);
  EXPECT_NE(bad_kind.err.find("scripted:FILE or local:MODEL_DIR"), std::string::npos);
#if defined(KEVIN_HAVE_SERVER)
  const Outcome open =
      run({"generate", "--policy", policy.c_str(), "--serve", "--host", "0.0.0.0"});
  EXPECT_EQ(open.code, kExitUsage);
  EXPECT_NE(open.err.find("--token-file"), std::string::npos) << open.err;
  EXPECT_EQ(open.err.find("loading"), std::string::npos) << "refused before the model loads";
#endif
}

TEST(Cli, TrainNeedsItsConfig) {
#if defined(KEVIN_HAVE_TRAIN)
  const Outcome r = run({"train"});
  EXPECT_EQ(r.code, kExitUsage) << "--config is required";
  const Outcome missing = run({"train", "--config", "/nonexistent/train.json"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_EQ(line_count(missing.err), 1u) << missing.err;
#else
  const Outcome missing = run({"train", "--config", "x.json"});
  EXPECT_EQ(missing.code, kExitFailure);
  EXPECT_NE(missing.err.find("built without libtorch"), std::string::npos) << missing.err;
#endif
}

}  // namespace
}  // namespace kevin::cli
