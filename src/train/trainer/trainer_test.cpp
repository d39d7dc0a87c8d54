// trainer_test.cpp — `kevin train`'s loop end to end on the CPU: a tiny model whose vocabulary
// holds a code fence and a FakeEvaluator directive as single tokens (so random sampling
// writes scorable kernels), real multi-turn rollouts, GRPO updates, logs, checkpoints, exact
// resume, LoRA, the exports, and the config parser's errors.
#include "train/trainer/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/file.h"
#include "env/fake_evaluator.h"
#include "sys/tempdir.h"
#include "train/io/model_io.h"
#include "train/io/safetensors.h"
#include "train/test_models.h"

namespace kevin::train {
namespace {
namespace fs = std::filesystem;

Json base_config(const fs::path& model, const fs::path& out) {
  return {{"model", model.string()},
          {"out", out.string()},
          {"steps", 3},
          {"tasks_per_step", 2},
          {"seed", 5},
          {"device", "cpu"},
          // One turn keeps prompts (~800 tokens, test_models.h) short; StepsLogCheckpointAndExport
          // uses two.
          {"rollout",
           {{"trajectories", 4},
            {"turns", 1},
            {"max_tokens", 10},
            {"temperature", 1.0},
            {"parallel", 1}}},
          {"grpo", {{"micro_batch", 3}, {"grad_clip", 1.0}}},
          {"optimizer", {{"lr", 0.02}, {"warmup_steps", 2}}},
          {"not_okay_prefix", "```"}};
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-trainer-test");
    ASSERT_TRUE(dir.is_ok());
    dir_ = std::make_unique<sys::TempDir>(std::move(dir).value());
    ASSERT_TRUE(write_scorable_model(model_dir()).is_ok());
    auto found = tasks::discover_tasks(fs::path(KEVIN_SOURCE_DIR) / "tests" / "fixtures" / "tasks");
    ASSERT_TRUE(found.is_ok());
    tasks_ = *found;
  }
  fs::path model_dir() const { return dir_->path() / "model"; }
  fs::path out(const std::string& name) const { return dir_->path() / name; }

  // Trains with `config` to the end; returns the progress output.
  std::string train(const Json& config) {
    auto options = trainer_options_from_json(config);
    EXPECT_TRUE(options.is_ok()) << options.status().to_string();
    options->train_tasks = {tasks_[0], tasks_[1], tasks_[2]};
    options->holdout_tasks = {tasks_[4]};
    auto trainer = Trainer::create(*options, &evaluator_);
    EXPECT_TRUE(trainer.is_ok()) << trainer.status().to_string();
    if (!trainer.is_ok()) return "";
    std::ostringstream log;
    const Status done = (*trainer)->run(log);
    EXPECT_TRUE(done.is_ok()) << done.to_string();
    return log.str();
  }

  std::vector<Json> log_lines(const fs::path& run) const {
    auto text = read_file(run / "train_log.jsonl");
    EXPECT_TRUE(text.is_ok());
    return parse_json_lines(text.is_ok() ? *text : "").value_or(std::vector<Json>{});
  }

  std::unique_ptr<sys::TempDir> dir_;
  std::vector<tasks::TaskInfo> tasks_;
  env::FakeEvaluator evaluator_{"cpu", "Fake CPU"};
};

TEST_F(TrainerTest, StepsLogCheckpointAndExport) {
  Json config = base_config(model_dir(), out("run"));
  config["holdout_every"] = 2;
  config["rollout"]["turns"] = 2;
  const std::string progress = train(config);
  EXPECT_NE(progress.find("train step 3/3"), std::string::npos) << progress;
  const auto lines = log_lines(out("run"));
  ASSERT_EQ(lines.size(), 5u) << "3 train steps, holdout after steps 2 and 3";
  double reward = 0, grad = 0;
  for (const Json& l : lines) {
    for (const char* key : {"kind", "step", "turns", "reward_mean", "correct_rate",
                            "response_tokens_mean", "clip_ratio", "not_okay_ratio"}) {
      EXPECT_TRUE(l.contains(key)) << key << " in " << dump_json(l);
    }
    if (l["kind"] != "train") continue;
    EXPECT_EQ(l["turns"], 16) << "2 tasks x 4 trajectories x 2 turns";
    for (const char* key : {"loss", "grad_norm", "clip_fraction", "entropy", "kl", "lr", "samples",
                            "train_tokens", "train_tokens_per_s", "gen_tokens_per_s"}) {
      EXPECT_TRUE(l.contains(key)) << key;
    }
    reward += l["reward_mean"].get<double>();
    grad += l["grad_norm"].get<double>();
  }
  EXPECT_GT(reward, 0) << "fences and directives make some kernels correct";
  EXPECT_GT(grad, 0) << "varied rewards give non-zero advantages, so updates happen";
  // Warm-up: 2 optimizer steps per batch, 2 warm-up steps → step 1 ends at the full rate.
  EXPECT_DOUBLE_EQ(lines[0]["lr"].get<double>(), 0.02);
  // Steps are 1-based everywhere: the progress line, the log and the folders.
  EXPECT_TRUE(fs::exists(out("run") / "rollouts" / "step-000001" / "trajectories.jsonl"));
  EXPECT_FALSE(fs::exists(out("run") / "rollouts" / "step-000000"));
  EXPECT_EQ(lines[0]["step"], 1);
  EXPECT_TRUE(fs::exists(out("run") / "holdout" / "step-000002" / "run.db"));
  // keep_checkpoints = 2: the last two remain.
  EXPECT_FALSE(fs::exists(out("run") / "checkpoints" / "step-000001"));
  EXPECT_TRUE(fs::exists(out("run") / "checkpoints" / "step-000002" / "optimizer.pt"));
  EXPECT_TRUE(fs::exists(out("run") / "checkpoints" / "step-000003" / "trainable.safetensors"));
  // The merged export loads as a model, differs from the base, and carries the tokenizer.
  auto exported = load_qwen2_dir(out("run") / "export" / "merged");
  ASSERT_TRUE(exported.is_ok()) << exported.status().to_string();
  auto base = load_qwen2_dir(model_dir());
  ASSERT_TRUE(base.is_ok());
  const auto x = torch::tensor({{1, 2, 3, kFenceToken}}, torch::kLong);
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(torch::allclose((*exported)->forward(x), (*base)->forward(x), 1e-5, 1e-5));
  EXPECT_TRUE(fs::exists(out("run") / "export" / "merged" / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(out("run") / "export" / "lora")) << "full fine-tuning has no adapter";
}

// The trainable weights runs `a` and `b` checkpointed at step 2 are the same: bit for bit
// (`tolerance` 0), or within `tolerance` relative.
void expect_same_step2_trainables(const fs::path& a_run, const fs::path& b_run, double tolerance) {
  const auto checkpoint = [](const fs::path& run) {
    return SafetensorsFile::open(run / "checkpoints" / "step-000002" / "trainable.safetensors");
  };
  auto a = checkpoint(a_run);
  auto b = checkpoint(b_run);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_EQ(a->names(), b->names());
  for (const auto& name : a->names()) {
    const auto x = a->tensor(name).value(), y = b->tensor(name).value();
    EXPECT_TRUE(tolerance == 0 ? torch::equal(x, y)
                               : torch::allclose(x, y, tolerance, tolerance / 10))
        << name;
  }
}

// A run stopped after step 1 and resumed for step 2 equals one that ran straight through: one
// step on each side of the checkpoint is what the resume has to get exactly right.
TEST_F(TrainerTest, ResumeFromACheckpointEqualsAnUninterruptedRun) {
  Json straight = base_config(model_dir(), out("straight"));
  straight["steps"] = 2;
  train(straight);
  Json first = base_config(model_dir(), out("resumed"));
  first["steps"] = 1;
  train(first);
  first["steps"] = 2;
  train(first);
  expect_same_step2_trainables(out("straight"), out("resumed"), /*tolerance=*/0);
  const auto la = log_lines(out("straight")), lb = log_lines(out("resumed"));
  ASSERT_EQ(la.size(), 2u);
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) {
    for (const char* key : {"reward_mean", "loss", "grad_norm", "lr"})
      EXPECT_EQ(la[i][key], lb[i][key]) << key << " line " << i;
  }
}

TEST_F(TrainerTest, LoraTrainsAdaptersAndExportsAPeftFolder) {
  Json config = base_config(model_dir(), out("lora"));
  config["steps"] = 2;
  config["lora"] = {{"rank", 2}, {"alpha", 4}, {"targets", {"q_proj", "down_proj"}}};
  train(config);
  const fs::path adapter = out("lora") / "export" / "lora";
  auto peft = read_file(adapter / "adapter_config.json");
  ASSERT_TRUE(peft.is_ok());
  const Json pc = parse_json(*peft).value();
  EXPECT_EQ(pc["peft_type"], "LORA");
  EXPECT_EQ(pc["r"], 2);
  EXPECT_EQ(pc["target_modules"], Json({"q_proj", "down_proj"}));
  auto weights = SafetensorsFile::open(adapter / "adapter_model.safetensors");
  ASSERT_TRUE(weights.is_ok());
  EXPECT_EQ(weights->names().size(), 4u) << "1 layer x 2 targets x (A, B)";
  EXPECT_TRUE(weights->find("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight") !=
              nullptr);
  // Only adapted projections changed in the merged export (bf16, hence the tolerance).
  auto merged = load_safetensors_dir(out("lora") / "export" / "merged");
  auto base = load_safetensors_dir(model_dir());
  ASSERT_TRUE(merged.is_ok() && base.is_ok());
  int changed_adapted = 0;
  for (const auto& [name, tensor] : *base) {
    const bool adapted = name.find("q_proj.weight") != std::string::npos ||
                         name.find("down_proj.weight") != std::string::npos;
    const bool same = torch::allclose(merged->at(name).to(torch::kFloat32),
                                      tensor.to(torch::kFloat32), 1e-2, 1e-2);
    if (adapted) {
      changed_adapted += same ? 0 : 1;
    } else {
      EXPECT_TRUE(same) << name;
    }
  }
  EXPECT_GT(changed_adapted, 0);
}

// On the GPU: bf16 autocast sampling and updates with fp32 master weights, checkpoint, export.
TEST_F(TrainerTest, TrainsOnCudaInMixedPrecision) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Json config = base_config(model_dir(), out("cuda"));
  config["steps"] = 2;
  config["device"] = "cuda";
  config["rollout"]["parallel"] = 4;  // concurrent trajectories sampled as one batch
  train(config);
  const auto lines = log_lines(out("cuda"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_GT(lines[1]["gen_tokens_per_s"].get<double>(), 0);
  auto saved =
      SafetensorsFile::open(out("cuda") / "checkpoints" / "step-000002" / "trainable.safetensors");
  ASSERT_TRUE(saved.is_ok());
  EXPECT_EQ(saved->tensor("lm_head.weight")->scalar_type(), torch::kFloat32)
      << "master weights stay fp32";
  EXPECT_TRUE(load_qwen2_dir(out("cuda") / "export" / "merged").is_ok());
}

// On the GPU with LoRA: the frozen base streamed in bf16, fp32 adapters that change under
// checkpointing, the merged export made a shard at a time, and the PEFT adapter.
TEST_F(TrainerTest, TrainsLoraOnABf16BaseOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Json config = base_config(model_dir(), out("cuda-lora"));
  config["steps"] = 2;
  config["device"] = "cuda";
  config["lora"] = {{"rank", 4}};
  config["activation_checkpointing"] = true;
  config["rollout"]["parallel"] = 4;
  train(config);
  ASSERT_EQ(log_lines(out("cuda-lora")).size(), 2u);
  auto saved = SafetensorsFile::open(out("cuda-lora") / "checkpoints" / "step-000002" /
                                     "trainable.safetensors");
  ASSERT_TRUE(saved.is_ok());
  bool adapted = false;
  for (const std::string& name : saved->names()) {
    const auto t = saved->tensor(name).value();
    EXPECT_EQ(t.scalar_type(), torch::kFloat32) << name;
    if (name.find("lora_B") != std::string::npos) adapted |= t.abs().sum().item<double>() > 0;
  }
  EXPECT_TRUE(adapted) << "B starts at zero: only gradients make it move";
  EXPECT_TRUE(load_qwen2_dir(out("cuda-lora") / "export" / "merged").is_ok());
  EXPECT_TRUE(fs::exists(out("cuda-lora") / "export" / "lora" / "adapter_model.safetensors"));
}

// Data parallel on the CPU: two replicas sample and train (the checkpoint checks that they
// stayed identical), and the run resumes on one replica (the device count may change).
TEST_F(TrainerTest, ReplicasTrainTogetherAndResumeOnAnotherCount) {
  Json config = base_config(model_dir(), out("replicas"));
  config["steps"] = 2;
  config["cpu_replicas"] = 2;
  config["rollout"]["parallel"] = 4;  // batches on both replicas at once
  const std::string progress = train(config);
  EXPECT_NE(progress.find("train step 2/2"), std::string::npos) << progress;
  config["steps"] = 3;
  config["cpu_replicas"] = 1;
  train(config);
  const auto lines = log_lines(out("replicas"));
  ASSERT_EQ(lines.size(), 3u);
  double grad = 0;
  for (const Json& l : lines) grad += l["grad_norm"].get<double>();
  EXPECT_GT(grad, 0);
  EXPECT_TRUE(
      fs::exists(out("replicas") / "checkpoints" / "step-000003" / "trainable.safetensors"));
}

// optimizer.warmup_ratio: the warm-up spans a share of the run's optimizer steps, counted from
// the steps the run started with; a resume with more steps keeps it.
TEST_F(TrainerTest, WarmupRatioRampsOverTheStartingRunsOptimizerSteps) {
  Json config = base_config(model_dir(), out("ramp"));
  config["steps"] = 2;
  config["optimizer"] = {{"lr", 0.02}, {"warmup_ratio", 0.75}};  // ceil(0.75 × 2 × 2) = 3
  train(config);
  const auto ramp = log_lines(out("ramp"));
  ASSERT_EQ(ramp.size(), 2u);
  EXPECT_NEAR(ramp[0]["lr"].get<double>(), 0.02 * 2 / 3, 1e-12) << "optimizer step 2 of 3";
  EXPECT_DOUBLE_EQ(ramp[1]["lr"].get<double>(), 0.02);

  config["out"] = out("extended").string();
  config["steps"] = 1;  // ceil(0.75 × 1 × 2) = 2: step 1 ends the warm-up
  train(config);
  auto state = read_file(out("extended") / "checkpoints" / "step-000001" / "trainer_state.json");
  ASSERT_TRUE(state.is_ok());
  EXPECT_EQ(parse_json(*state).value()["warmup_steps"], 2);
  config["steps"] = 3;  // recomputed, ceil(0.75 × 3 × 2) = 5 would lower step 2's rate to 4/5
  train(config);
  const auto extended = log_lines(out("extended"));
  ASSERT_EQ(extended.size(), 3u);
  for (const Json& l : extended) EXPECT_DOUBLE_EQ(l["lr"].get<double>(), 0.02) << dump_json(l);
}

// rollout.max_tokens_schedule: the rollout of each step is cut at the limit in effect, which
// the log records.
TEST_F(TrainerTest, TheResponseLimitFollowsItsScheduleAndIsLogged) {
  Json config = base_config(model_dir(), out("schedule"));
  config["steps"] = 2;
  config["holdout_every"] = 2;
  config["rollout"]["max_tokens_schedule"] = {{{"step", 1}, {"max_tokens", 2}}};
  train(config);
  const auto lines = log_lines(out("schedule"));
  ASSERT_EQ(lines.size(), 3u) << "2 train steps, holdout after step 2";
  EXPECT_EQ(lines[0]["max_tokens"], 10);
  EXPECT_EQ(lines[1]["max_tokens"], 2) << "0-based step 1 is the log's step 2";
  EXPECT_LE(lines[1]["response_tokens_mean"].get<double>(), 2.0);
  EXPECT_EQ(lines[2]["kind"], "holdout");
  EXPECT_EQ(lines[2]["max_tokens"], 2);
  EXPECT_LE(lines[2]["response_tokens_mean"].get<double>(), 2.0);
}

// grpo.step_samples "split": the optimizer steps share the batch, each sample in one step;
// "whole_batch" runs every step over all of it.
TEST_F(TrainerTest, SplitStepsUseEachSampleOnce) {
  Json config = base_config(model_dir(), out("whole"));
  config["steps"] = 1;
  train(config);
  config["out"] = out("split").string();
  config["grpo"]["step_samples"] = "split";
  train(config);
  const auto whole = log_lines(out("whole")), split = log_lines(out("split"));
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_EQ(split.size(), 1u);
  // The first rollout comes from the same weights and seed: the same batch.
  EXPECT_EQ(whole[0]["reward_mean"], split[0]["reward_mean"]);
  EXPECT_EQ(whole[0]["samples"], split[0]["samples"]);
  const auto batch_tokens = static_cast<int64_t>(std::llround(
      split[0]["response_tokens_mean"].get<double>() * split[0]["turns"].get<double>()));
  EXPECT_EQ(split[0]["train_tokens"].get<int64_t>(), batch_tokens) << "each sample once";
  EXPECT_EQ(whole[0]["train_tokens"].get<int64_t>(), 2 * batch_tokens) << "the batch twice";
  for (const char* key : {"loss", "grad_norm", "clip_fraction", "entropy"}) {
    EXPECT_TRUE(std::isfinite(split[0][key].get<double>())) << key;
  }
  EXPECT_GT(split[0]["entropy"].get<double>(), 0);
}

// A resumed run may change the response limit and its schedule (the paper raised the limit
// mid-run by restarting); any other change is still refused.
TEST_F(TrainerTest, ResumeMayChangeTheResponseLimitAndItsSchedule) {
  const auto create = [&](const Json& config) {
    auto options = trainer_options_from_json(config);
    EXPECT_TRUE(options.is_ok()) << options.status().to_string();
    options->train_tasks = tasks_;
    return Trainer::create(*options, &evaluator_).status();
  };
  Json config = base_config(model_dir(), out("limits"));
  ASSERT_TRUE(create(config).is_ok());
  config["rollout"]["max_tokens"] = 12;
  EXPECT_TRUE(create(config).is_ok()) << "a new limit";
  config["rollout"]["max_tokens_schedule"] = {{{"step", 1}, {"max_tokens", 16}}};
  EXPECT_TRUE(create(config).is_ok()) << "a new schedule";
  config["rollout"]["max_tokens_schedule"][0]["max_tokens"] = 20;
  EXPECT_TRUE(create(config).is_ok()) << "a changed schedule";
  config["rollout"]["temperature"] = 0.5;
  const Status changed = create(config);
  EXPECT_EQ(changed.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(changed.message().find("\"rollout.max_tokens\""), std::string::npos)
      << changed.to_string();

  // A run without a "rollout" section takes one that only sets the limit.
  Json bare = base_config(model_dir(), out("bare"));
  bare.erase("rollout");
  ASSERT_TRUE(create(bare).is_ok());
  bare["rollout"] = {{"max_tokens", 64}};
  EXPECT_TRUE(create(bare).is_ok());
}

TEST_F(TrainerTest, AnotherConfigInTheSameFolderIsRefused) {
  Json config = base_config(model_dir(), out("run"));
  config["steps"] = 1;
  train(config);
  config["optimizer"]["lr"] = 0.5;
  auto options = trainer_options_from_json(config);
  ASSERT_TRUE(options.is_ok());
  options->train_tasks = tasks_;
  auto changed = Trainer::create(*options, &evaluator_);
  EXPECT_EQ(changed.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(changed.status().message().find(out("run").string() +
                                            " holds a training run with another config"),
            std::string::npos)
      << changed.status().to_string();
}

TEST(TrainerConfig, TheResolvedConfigReadsBackAsItself) {
  Json given = {{"model", "m"},
                {"out", "o"},
                {"steps", 7},
                {"lora", {{"rank", 16}}},
                {"gpus", {0, 1}},
                {"rollout",
                 {{"trajectories", 8},
                  {"turns", 2},
                  {"temperature", 0.7},
                  {"max_tokens_schedule", {{{"step", 3}, {"max_tokens", 64}}}}}},
                {"grpo", {{"length_norm", "token"}, {"step_samples", "split"}}},
                {"optimizer", {{"warmup_ratio", 0.03}, {"state_on_host", true}}}};
  auto options = trainer_options_from_json(given);
  ASSERT_TRUE(options.is_ok()) << options.status().to_string();
  const Json resolved = to_json(*options);
  EXPECT_EQ(resolved["steps"], 7);
  EXPECT_EQ(resolved["lora"]["rank"], 16);
  EXPECT_EQ(resolved["rollout"]["trajectories"], 8);
  EXPECT_EQ(resolved["grpo"]["length_norm"], "token");
  EXPECT_EQ(resolved["optimizer"]["lr"], OptimizerConfig{}.lr) << "defaults are filled in";
  EXPECT_EQ(resolved["optimizer"]["warmup_ratio"], 0.03);
  EXPECT_EQ(resolved["optimizer"]["state_on_host"], true);
  EXPECT_EQ(resolved["grpo"]["step_samples"], "split");
  EXPECT_EQ(resolved["grpo"]["max_tokens"], 0) << "L follows the response limit";
  EXPECT_EQ(resolved["rollout"]["max_tokens_schedule"],
            Json::parse(R"([{"step": 3, "max_tokens": 64}])"));
  auto again = trainer_options_from_json(resolved);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(to_json(*again), resolved);
  std::vector<std::string> written;
  for (const auto& [key, value] : resolved.items()) {
    const bool section = key != "rollout" && value.is_object();
    if (!section) written.push_back(key);
    if (section)
      for (const auto& item : value.items()) written.push_back(key + "." + item.key());
  }
  std::vector<std::string> schema = trainer_config_keys();
  for (auto& k : schema) {  // sections are written as their keys
    if (k == "grpo" || k == "optimizer" || k == "lora" || k == "export") k.clear();
  }
  schema.erase(std::remove(schema.begin(), schema.end(), ""), schema.end());
  std::sort(schema.begin(), schema.end());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, schema) << "to_json writes exactly the keys the schema reads";
}

TEST(TrainerConfig, EveryKeyIsDocumentedInItsSectionsRow) {
  // docs/trainer.md's table: a row per top-level key (or a few keys sharing one), and a row
  // per section whose text names each of its keys.
  const auto doc = read_file(KEVIN_TRAINER_DOC);
  ASSERT_TRUE(doc.is_ok()) << doc.status().to_string();
  const auto row_of = [&](const std::string& key) -> std::string {
    const size_t at = doc->find("\n| `" + key + "`");
    if (at == std::string::npos) return "";
    return doc->substr(at + 1, doc->find('\n', at + 1) - at - 1);
  };
  for (const std::string& key : trainer_config_keys()) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      const bool has_row =
          !row_of(key).empty() || doc->find(", `" + key + "` |") != std::string::npos;
      EXPECT_TRUE(has_row) << key << " has no row in docs/trainer.md's table of keys";
      continue;
    }
    const std::string row = row_of(key.substr(0, dot));
    EXPECT_NE(row.find("`" + key.substr(dot + 1) + "`"), std::string::npos)
        << key << " is not named in the " << key.substr(0, dot) << " row of docs/trainer.md";
  }
}

TEST(TrainerConfig, WarmupRatioCountsTheRunsOptimizerSteps) {
  const auto warmup = [](Json optimizer, int steps, int per_batch) {
    auto o = trainer_options_from_json({{"model", "m"},
                                        {"out", "o"},
                                        {"steps", steps},
                                        {"grpo", {{"steps_per_batch", per_batch}}},
                                        {"optimizer", std::move(optimizer)}});
    EXPECT_TRUE(o.is_ok()) << o.status().to_string();
    return o.is_ok() ? warmup_optimizer_steps(*o) : -1;
  };
  EXPECT_EQ(warmup({{"warmup_ratio", 0.03}}, 60, 2), 4) << "ceil(3.6)";
  EXPECT_EQ(warmup({{"warmup_ratio", 0.07}}, 50, 2), 7) << "0.07 × 100 is 7, not 8";
  EXPECT_EQ(warmup({{"warmup_ratio", 0.03}}, 200, 2), 12);
  EXPECT_EQ(warmup({{"warmup_ratio", 0.001}}, 10, 1), 1) << "any ratio warms up at least once";
  EXPECT_EQ(warmup({{"warmup_steps", 5}}, 60, 2), 5);
  EXPECT_EQ(warmup(Json::object(), 60, 2), 0);
  const auto message = [](Json optimizer) {
    return trainer_options_from_json({{"model", "m"}, {"out", "o"}, {"optimizer", optimizer}})
        .status();
  };
  const Status both = message({{"warmup_ratio", 0.1}, {"warmup_steps", 3}});
  EXPECT_EQ(both.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(both.message().find("optimizer.warmup_ratio and optimizer.warmup_steps"),
            std::string::npos)
      << both.to_string();
  for (double bad : {1.0, -0.1, 1.5}) {
    EXPECT_NE(message({{"warmup_ratio", bad}}).message().find("warmup_ratio"), std::string::npos)
        << bad;
  }
}

TEST(TrainerConfig, TheResponseLimitScheduleResolvesPerStep) {
  const Json given = {
      {"model", "m"},
      {"out", "o"},
      {"rollout",
       {{"max_tokens", 100},
        {"max_tokens_schedule",
         {{{"step", 2}, {"max_tokens", 150}}, {{"step", 5}, {"max_tokens", 80}}}}}}};
  auto o = trainer_options_from_json(given);
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(max_tokens_at(*o, 0), 100);
  EXPECT_EQ(max_tokens_at(*o, 1), 100);
  EXPECT_EQ(max_tokens_at(*o, 2), 150);
  EXPECT_EQ(max_tokens_at(*o, 4), 150);
  EXPECT_EQ(max_tokens_at(*o, 5), 80);
  EXPECT_EQ(max_tokens_at(*o, 500), 80);
  EXPECT_EQ(o->update.max_tokens, 100);
  EXPECT_EQ(normalisation_tokens_at(*o, 3), 150) << "a defaulted L follows the schedule";
  Json pinned = given;
  pinned["grpo"] = {{"max_tokens", 120}};
  auto p = trainer_options_from_json(pinned);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(normalisation_tokens_at(*p, 3), 120) << "a given L stays";
  auto again = trainer_options_from_json(to_json(*p));
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(normalisation_tokens_at(*again, 3), 120);
  auto followed = trainer_options_from_json(to_json(*o));
  ASSERT_TRUE(followed.is_ok());
  EXPECT_EQ(normalisation_tokens_at(*followed, 5), 80) << "the printed config still follows";

  const auto message = [&](Json schedule) {
    Json j = given;
    j["rollout"]["max_tokens_schedule"] = std::move(schedule);
    return trainer_options_from_json(j).status().message();
  };
  EXPECT_NE(message(Json::parse(R"([{"step": 3, "max_tokens": 9}, {"step": 3, "max_tokens": 8}])"))
                .find("rollout.max_tokens_schedule[1].step must be greater"),
            std::string::npos);
  EXPECT_NE(message(Json::parse(R"([{"step": 1, "max_tokens": 0}])"))
                .find("rollout.max_tokens_schedule[0].max_tokens must be at least 1"),
            std::string::npos);
  EXPECT_NE(message(Json::parse(R"([{"step": -1, "max_tokens": 9}])")).find("[0].step"),
            std::string::npos);
  EXPECT_NE(message(Json::parse(R"([{"step": 1}])")).find("max_tokens"), std::string::npos);
  EXPECT_NE(message(Json::parse(R"([{"step": 1, "max_tokens": 9, "stepp": 2}])"))
                .find("unknown key \"stepp\""),
            std::string::npos);
  EXPECT_NE(message(Json(22528)).find("rollout.max_tokens_schedule"), std::string::npos);
}

TEST(TrainerConfig, StepSamplesSplitsTheBatchIntoDisjointShares) {
  const auto whole = step_batches(5, 2, StepSamples::kWholeBatch, 7);
  ASSERT_EQ(whole.size(), 2u);
  for (const auto& part : whole) EXPECT_EQ(part, (std::vector<size_t>{0, 1, 2, 3, 4}));

  const auto split = step_batches(7, 2, StepSamples::kSplit, 7);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0].size(), 4u);
  EXPECT_EQ(split[1].size(), 3u);
  std::vector<size_t> seen;
  for (const auto& part : split) {
    EXPECT_TRUE(std::is_sorted(part.begin(), part.end()));
    seen.insert(seen.end(), part.begin(), part.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6})) << "each sample exactly once";
  EXPECT_EQ(step_batches(7, 2, StepSamples::kSplit, 7), split) << "the seed decides";
  bool differs = false;
  for (uint64_t seed = 0; seed < 8; ++seed)
    differs |= step_batches(7, 2, StepSamples::kSplit, seed) != split;
  EXPECT_TRUE(differs) << "a shuffle, not the stored order";
  EXPECT_EQ(step_batches(1, 2, StepSamples::kSplit, 0), (std::vector<std::vector<size_t>>{{0}}))
      << "no empty step";
  EXPECT_EQ(step_batches(3, 1, StepSamples::kSplit, 0),
            (std::vector<std::vector<size_t>>{{0, 1, 2}}));
  auto bad = trainer_options_from_json(
      {{"model", "m"}, {"out", "o"}, {"grpo", {{"step_samples", "halves"}}}});
  EXPECT_NE(bad.status().message().find("grpo.step_samples"), std::string::npos);
}

// Every shipped config parses; kevin-32b.json holds the paper's values (docs/trainer.md,
// "The paper's recipe").
TEST(TrainerConfig, TheShippedConfigsParseAndKevin32bIsThePapersRecipe) {
  const fs::path dir = fs::path(KEVIN_SOURCE_DIR) / "examples" / "train";
  int parsed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    auto text = read_file(entry.path());
    ASSERT_TRUE(text.is_ok());
    auto json = parse_json(*text);
    ASSERT_TRUE(json.is_ok()) << entry.path();
    auto options = trainer_options_from_json(*json);
    EXPECT_TRUE(options.is_ok()) << entry.path() << ": " << options.status().to_string();
    ++parsed;
  }
  EXPECT_GE(parsed, 3);

  auto text = read_file(dir / "kevin-32b.json");
  ASSERT_TRUE(text.is_ok());
  const Json j = parse_json(*text).value();
  EXPECT_EQ(j["tasks"], Json({"level1", "level2"}));
  auto parsed_options = trainer_options_from_json(j);
  ASSERT_TRUE(parsed_options.is_ok()) << parsed_options.status().to_string();
  // The paper's 8k prompt and 22k answer fit QwQ-32B's 40,960 positions.
  EXPECT_TRUE(check_context_fits(*parsed_options, qwq_32b_shape()).is_ok());
  const TrainerOptions& o = *parsed_options;
  EXPECT_EQ(o.model_dir, "models/QwQ-32B");
  EXPECT_EQ(o.tasks_per_step, 8);
  EXPECT_EQ(o.rollout.allocations[0].trajectories, 16);
  EXPECT_EQ(o.rollout.allocations[0].turns, 4);
  EXPECT_DOUBLE_EQ(o.rollout.gamma, 0.4);
  EXPECT_EQ(o.rollout.return_mode, reward::ReturnMode::kDiscountedSum);
  EXPECT_EQ(o.rollout.advantage_mode, reward::AdvantageMode::kGroup) << "over all 64 turns";
  EXPECT_DOUBLE_EQ(o.rollout.generation.temperature, 0.9);
  EXPECT_DOUBLE_EQ(o.update.grpo.clip_low, 0.2);
  EXPECT_DOUBLE_EQ(o.update.grpo.clip_high, 0.28);
  EXPECT_DOUBLE_EQ(o.update.grpo.kl_beta, 0);
  EXPECT_EQ(o.update.grpo.norm, LengthNorm::kConstant);
  EXPECT_DOUBLE_EQ(o.update.grad_clip, 0.05);
  EXPECT_DOUBLE_EQ(o.optimizer.lr, 2e-6);
  EXPECT_DOUBLE_EQ(o.optimizer.warmup_ratio, 0.03);
  EXPECT_EQ(o.optimizer.warmup_steps, 0);
  EXPECT_TRUE(o.open_think) << "QwQ's template opens <think>";
  EXPECT_EQ(max_tokens_at(o, 0), 16384);
  EXPECT_EQ(max_tokens_at(o, 29), 16384);
  EXPECT_EQ(max_tokens_at(o, 30), 22528);
  EXPECT_TRUE(o.normalisation_follows_limit) << "L follows the limit";
  EXPECT_EQ(o.update.optimizer_steps, 2);
  EXPECT_EQ(o.step_samples, StepSamples::kSplit) << "1 on-policy, 1 off-policy";
  EXPECT_EQ(o.lora.rank, 32);
  EXPECT_TRUE(o.activation_checkpointing);
  EXPECT_EQ(o.update.micro_batch, 1);
}

// optimizer.state_on_host: AdamW's moments in host memory give the same training, and a
// checkpoint written with them on the device resumes with them on the host.
TEST_F(TrainerTest, TheOptimizerStateInHostMemoryTrainsAndResumesTheSame) {
  Json device_state = base_config(model_dir(), out("device"));
  device_state["steps"] = 2;
  train(device_state);
  Json host_state = base_config(model_dir(), out("host"));
  host_state["steps"] = 1;
  train(host_state);
  host_state["steps"] = 2;
  host_state["optimizer"]["state_on_host"] = true;
  train(host_state);
  expect_same_step2_trainables(out("device"), out("host"), /*tolerance=*/1e-6);
}

TEST(TrainerConfig, MemoryEstimateCountsAdaptersOrEveryParameter) {
  Qwen2Config c;  // Qwen2.5-7B's shape
  c.vocab_size = 152064;
  c.hidden_size = 3584;
  c.intermediate_size = 18944;
  c.num_hidden_layers = 28;
  c.num_attention_heads = 28;
  c.num_key_value_heads = 4;
  const MemoryEstimate full = estimate_memory(c, LoraConfig{});
  EXPECT_NEAR(static_cast<double>(full.parameters) / 1e9, 7.62, 0.01);
  EXPECT_EQ(full.trainable, full.parameters);
  EXPECT_NEAR(full.state_gib(), 16.0 * static_cast<double>(full.parameters) / double(1ull << 30),
              1e-9);
  LoraConfig lora;
  lora.rank = 16;
  const MemoryEstimate adapters = estimate_memory(c, lora);
  // Per layer and rank: q, o 2·(3584+3584) + k, v 2·(3584+512) + gate, up, down 3·(3584+18944).
  EXPECT_EQ(adapters.trainable, int64_t{16} * 90112 * 28);
  EXPECT_LT(adapters.state_gib(), full.state_gib() / 3);
  // optimizer.state_on_host: the two moments (8 bytes a parameter) move to host memory.
  Workload host;
  host.optimizer_on_host = true;
  const MemoryEstimate offloaded = estimate_memory(c, LoraConfig{}, host);
  const double params_gib = static_cast<double>(full.parameters) / double(1ull << 30);
  EXPECT_NEAR(offloaded.state_gib(), 8.0 * params_gib, 1e-9);
  EXPECT_NEAR(offloaded.host_optimizer_gib, 8.0 * params_gib, 1e-9);
  EXPECT_EQ(full.host_optimizer_gib, 0);
}

TEST(TrainerConfig, MemoryEstimateSizesActivationsLogitsAndTheCache) {
  const Qwen2Config c = qwq_32b_shape();
  LoraConfig lora;
  lora.rank = 32;
  Workload w;
  w.base_bytes = 2;
  w.checkpointing = true;
  w.micro_batch_tokens = 24576;
  w.scored_tokens = 16384;
  w.logit_chunk_rows = 2048;
  w.generation_sequences = 16;
  w.generation_tokens = 24576;
  const double gib = double(1ull << 30);
  const MemoryEstimate m = estimate_memory(c, lora, w);
  EXPECT_NEAR(
      m.weights_gib,
      (2.0 * static_cast<double>(m.parameters) + 4.0 * static_cast<double>(m.trainable)) / gib,
      1e-9);
  // Checkpoints: every layer's bf16 input; then one layer's working set.
  const double checkpoints = 64.0 * 24576 * 5120 * 2 / gib;
  EXPECT_NEAR(m.activations_gib, checkpoints + layer_bytes_per_token(c, lora, 2) * 24576 / gib,
              1e-9);
  EXPECT_NEAR(m.logits_gib, 2.0 * 2 * 2048 * 152064 / gib, 1e-9);
  // 16 sequences × 24576 tokens × 64 layers × (K + V) × 8 heads × 128 × 2 bytes = 96 GiB.
  EXPECT_NEAR(m.kv_cache_gib, 96.0, 1e-9);
  EXPECT_DOUBLE_EQ(m.peak_gib(), std::max(m.update_gib(), m.generation_gib()));
  // Without checkpoints every layer keeps its working set; unchunked, every scored row.
  w.checkpointing = false;
  w.logit_chunk_rows = 0;
  const MemoryEstimate plain = estimate_memory(c, lora, w);
  EXPECT_NEAR(plain.activations_gib, 64 * layer_bytes_per_token(c, lora, 2) * 24576 / gib, 1e-9);
  EXPECT_NEAR(plain.logits_gib, 8 * m.logits_gib, 1e-9);
}

TEST(TrainerConfig, PromptAndAnswerMustFitTheModelsPositions) {
  auto o = trainer_options_from_json(
      {{"model", "m"},
       {"out", "o"},
       {"rollout",
        {{"context_tokens", 24000},
         {"max_tokens", 16384},
         {"max_tokens_schedule", {{{"step", 30}, {"max_tokens", 22528}}}}}}});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  const Status too_long = check_context_fits(*o, qwq_32b_shape());
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
  // The schedule's larger limit counts, not the first one.
  EXPECT_NE(too_long.message().find("(22528, rollout.max_tokens or its schedule) = 46528"),
            std::string::npos)
      << too_long.to_string();
  EXPECT_NE(too_long.message().find("max_position_embeddings (40960)"), std::string::npos);
  o->rollout.prompt.context_tokens = 18432;  // 18432 + 22528 = 40960: exactly the limit
  EXPECT_TRUE(check_context_fits(*o, qwq_32b_shape()).is_ok());
}

TEST(TrainerConfig, ErrorsNameTheKey) {
  const Json good = {{"model", "m"}, {"out", "o"}};
  ASSERT_TRUE(trainer_options_from_json(good).is_ok());
  const auto message = [&](Json j) { return trainer_options_from_json(j).status().message(); };
  Json j = good;
  j["stepz"] = 3;
  EXPECT_NE(message(j).find("stepz"), std::string::npos);
  j = good;
  j["optimizer"] = {{"lr", "fast"}};
  EXPECT_NE(message(j).find("lr"), std::string::npos);
  j = good;
  j["grpo"] = {{"length_norm", "median"}};
  EXPECT_NE(message(j).find("length_norm"), std::string::npos);
  j = good;
  j["rollout"] = {{"search", "beam"}};
  EXPECT_NE(message(j).find("beam"), std::string::npos);
  j = good;
  j["lora"] = {{"rnak", 8}};
  EXPECT_NE(message(j).find("unknown key \"rnak\" in \"lora\" (did you mean \"rank\"?)"),
            std::string::npos)
      << message(j);
  j = good;
  j["optimizer"] = {{"learning_rate", 1e-5}};
  EXPECT_NE(message(j).find("unknown key \"learning_rate\" in \"optimizer\" (did you mean "
                            "\"lr\"?)"),
            std::string::npos)
      << "another trainer's name for a key is pointed to ours\n"
      << message(j);
  j = good;
  j.erase("model");
  EXPECT_NE(message(j).find("model"), std::string::npos);
  j = good;
  j["steps"] = 0;
  EXPECT_NE(message(j).find("steps"), std::string::npos);
  for (const Json& gpus : {Json("some"), Json::array(), Json({0, 0}), Json({-1})}) {
    j = good;
    j["gpus"] = gpus;
    EXPECT_NE(message(j).find("gpus"), std::string::npos) << dump_json(gpus);
  }
  j = good;
  j["cpu_replicas"] = 0;
  EXPECT_NE(message(j).find("cpu_replicas"), std::string::npos);
  j = good;
  j["gpus"] = {1, 3};
  EXPECT_EQ(trainer_options_from_json(j)->gpus, (std::vector<int>{1, 3}));
  const auto parsed = trainer_options_from_json(
      {{"model", "m"}, {"out", "o"}, {"rollout", {{"trajectories", 8}, {"turns", 2}}}});
  ASSERT_TRUE(parsed.is_ok());
  EXPECT_EQ(parsed->rollout.allocations[0].label(), "8x2");
  EXPECT_EQ(parsed->update.max_tokens, parsed->rollout.generation.max_tokens)
      << "L of the constant normalisation";
}

}  // namespace
}  // namespace kevin::train
