// train_cli_test.cpp — `kevin train --config` end to end: config errors are one-line usage
// errors (exit 2); a tiny scorable model trains for two steps against the fake engine, writes
// its log, checkpoints and export, resumes when given more steps, and `kevin report` renders
// the training folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "core/file.h"
#include "kevin_cli.h"
#include "sys/process.h"
#include "sys/tempdir.h"
#include "train/test_models.h"

namespace kevin::e2e {
namespace {
namespace fs = std::filesystem;

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-train-cli");
    ASSERT_TRUE(dir.is_ok());
    dir_ = std::make_unique<sys::TempDir>(std::move(dir).value());
  }
  fs::path path(const std::string& name) const { return dir_->path() / name; }
  fs::path write_config(const Json& config) const {
    const fs::path file = path("train.json");
    EXPECT_TRUE(write_file_atomic(file, dump_json(config, 1)).is_ok());
    return file;
  }
  Json tiny_config() const {
    return {{"model", path("model").string()},
            {"out", path("out").string()},
            {"tasks", (source_dir() / "tests/fixtures/tasks").string()},
            {"split", ""},
            {"steps", 2},
            {"tasks_per_step", 1},
            {"device", "cpu"},
            {"engine", {{"fake", true}}},
            {"rollout",
             {{"trajectories", 3},
              {"turns", 1},
              {"max_tokens", 8},
              {"temperature", 1.0},
              {"parallel", 1}}},
            {"optimizer", {{"lr", 0.01}}}};
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(TrainCli, BadConfigsAreOneLineUsageErrors) {
  const auto missing = run_kevin({"train", "--config", path("nope.json").string()});
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("cannot read the config"), std::string::npos) << missing.output;
  Json typo = tiny_config();
  typo["optimiser"] = {{"lr", 1}};
  const auto unknown = run_kevin({"train", "--config", write_config(typo).string()});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(
      unknown.output.find("unknown key \"optimiser\" in the config (did you mean \"optimizer\"?)"),
      std::string::npos)
      << unknown.output;
  Json no_tasks = tiny_config();
  no_tasks["tasks"] = "no_such_task";
  const auto none = run_kevin({"train", "--config", write_config(no_tasks).string()});
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("training tasks"), std::string::npos) << none.output;
  Json no_model = tiny_config();
  const auto model = run_kevin({"train", "--config", write_config(no_model).string()});
  EXPECT_EQ(model.code, 2) << "the model folder does not exist yet: " << model.output;
}

TEST_F(TrainCli, DryRunChecksTheModelFolderAndSizesTheRunWithoutTraining) {
  ASSERT_TRUE(train::write_scorable_model(path("model")).is_ok());
  Json config = tiny_config();
  config["lora"] = {{"rank", 4}};
  const auto dry = run_kevin({"train", "--config", write_config(config).string(), "--dry-run"});
  ASSERT_EQ(dry.code, 0) << dry.output;
  for (const char* part : {"(Qwen2, ", "tasks:   ", "1 tasks x 3x1", "memory:  per replica",
                           "LoRA rank 4", "nothing was trained"}) {
    EXPECT_NE(dry.output.find(part), std::string::npos) << part << " in: " << dry.output;
  }
  EXPECT_FALSE(fs::exists(path("out"))) << "a dry run writes nothing";

  // The printed config is complete and valid: it passes a dry run itself.
  const auto printed = run_kevin(
      {"--log-level", "off", "train", "--config", write_config(config).string(), "--print-config"});
  ASSERT_EQ(printed.code, 0) << printed.output;
  auto resolved = parse_json(printed.output);
  ASSERT_TRUE(resolved.is_ok()) << printed.output;
  EXPECT_EQ((*resolved)["optimizer"]["beta2"], 0.999) << "defaults are filled in";
  EXPECT_EQ((*resolved)["lora"]["rank"], 4);
  EXPECT_EQ(run_kevin({"train", "--config", write_config(*resolved).string(), "--dry-run"}).code,
            0);
}

TEST_F(TrainCli, DryRunNamesWhatIsWrongWithTheModelFolder) {
  const auto missing =
      run_kevin({"train", "--config", write_config(tiny_config()).string(), "--dry-run"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("model folder " + path("model").string() + " does not exist"),
            std::string::npos)
      << missing.output;
  ASSERT_TRUE(train::write_scorable_model(path("model")).is_ok());
  auto hf = parse_json(read_file(path("model") / "config.json").value());
  ASSERT_TRUE(hf.is_ok());
  (*hf)["model_type"] = "llama";
  (*hf)["architectures"] = {"LlamaForCausalLM"};
  ASSERT_TRUE(write_file_atomic(path("model") / "config.json", dump_json(*hf)).is_ok());
  for (const char* mode : {"--dry-run", ""}) {
    std::vector<std::string> args = {"train", "--config", write_config(tiny_config()).string()};
    if (*mode) args.push_back(mode);
    const auto llama = run_kevin(args);
    EXPECT_EQ(llama.code, 2) << mode << ": " << llama.output;
    EXPECT_NE(llama.output.find("model_type \"llama\" is not supported"), std::string::npos)
        << llama.output;
  }
}

TEST_F(TrainCli, CtrlCKeepsTheFinishedStepsInACheckpointAndExits130) {
  ASSERT_TRUE(train::write_scorable_model(path("model")).is_ok());
  Json config = tiny_config();
  config["steps"] = 200;
  config["checkpoint_every"] = 100;  // only the interrupt writes one before step 100
  const fs::path file = write_config(config);
  sys::SpawnOptions o;
  o.argv = {kevin_binary().string(), "train", "--config", file.string()};
  o.env = sys::current_environment();
  const int log_fd =
      ::open(path("train.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  o.fds = {{1, log_fd}, {2, log_fd}};
  auto kevin = sys::spawn(o);
  ::close(log_fd);
  ASSERT_TRUE(kevin.is_ok()) << kevin.status().to_string();
  const auto log = [&] { return read_file(path("train.log")).value_or(""); };
  for (int i = 0; i < 1200 && log().find("train step 1/200") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(log().find("train step 1/200"), std::string::npos) << log();
  ASSERT_EQ(::kill(kevin->pid(), SIGINT), 0);
  auto ended = kevin->wait(sys::Deadline::after(std::chrono::seconds(120)));
  ASSERT_TRUE(ended.is_ok()) << log();
  EXPECT_TRUE(ended->exited && ended->code == 130) << ended->describe() << "\n" << log();
  EXPECT_NE(log().find("resume with: kevin train --config " + file.string()), std::string::npos)
      << log();
  EXPECT_NE(log().find("are in the checkpoint"), std::string::npos) << log();
  // The checkpoint holds the finished steps: a second start resumes after them.
  bool checkpointed = false;
  for (const auto& entry : fs::directory_iterator(path("out") / "checkpoints")) {
    checkpointed |= fs::exists(entry.path() / "trainer_state.json");
  }
  EXPECT_TRUE(checkpointed) << "no checkpoint was written on the interrupt";
  const auto more = run_kevin({"train", "--config", file.string(), "--steps", "2"});
  EXPECT_EQ(more.code, 0) << more.output;
  EXPECT_NE(more.output.find("resuming"), std::string::npos) << more.output;
}

TEST_F(TrainCli, TrainsResumesAndReports) {
  ASSERT_TRUE(train::write_scorable_model(path("model")).is_ok());
  const fs::path config = write_config(tiny_config());
  const auto first = run_kevin({"train", "--config", config.string()});
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_NE(first.output.find("training complete: 2 steps"), std::string::npos) << first.output;
  // The start-up summary comes first, then the steps.
  const auto summary = first.output.find("memory:  per replica");
  EXPECT_NE(summary, std::string::npos) << first.output;
  EXPECT_LT(summary, first.output.find("train step 1/2")) << first.output;
  // Every key is saved with the value used, defaults included.
  auto resolved = read_file(path("out") / "train_config.resolved.json");
  ASSERT_TRUE(resolved.is_ok());
  const Json every_key = parse_json(*resolved).value();
  EXPECT_EQ(every_key["grpo"]["clip_high"], 0.28) << *resolved;
  EXPECT_EQ(every_key["grpo"]["logit_chunk_rows"], 2048) << *resolved;
  EXPECT_NE(first.output.find("train step 2/2"), std::string::npos);
  EXPECT_TRUE(fs::exists(path("out") / "export" / "merged" / "model.safetensors"));
  EXPECT_TRUE(fs::exists(path("out") / "checkpoints" / "step-000002" / "trainer_state.json"));
  const auto more = run_kevin({"train", "--config", config.string(), "--steps", "3"});
  ASSERT_EQ(more.code, 0) << more.output;
  EXPECT_NE(more.output.find("resuming"), std::string::npos) << more.output;
  EXPECT_NE(more.output.find("train step 3/3"), std::string::npos);
  EXPECT_EQ(more.output.find("train step 1/3"), std::string::npos) << "done steps are not redone";
  auto log = read_file(path("out") / "train_log.jsonl");
  ASSERT_TRUE(log.is_ok());
  EXPECT_EQ(parse_json_lines(*log).value().size(), 3u);
  const auto report = run_kevin({"report", path("out").string()});
  EXPECT_EQ(report.code, 0) << report.output;
  EXPECT_TRUE(fs::exists(path("out") / "report.html"));
}

}  // namespace
}  // namespace kevin::e2e
