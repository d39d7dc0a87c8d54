// model_io.cpp — HF model folders: config.json plus safetensors shards.
#include "train/io/model_io.h"

#include "core/file.h"
#include "train/io/safetensors.h"

namespace kevin::train {

Result<Qwen2ForCausalLM> load_qwen2_dir(const std::filesystem::path& dir, torch::Device device,
                                        torch::ScalarType dtype) {
  KEVIN_ASSIGN_OR_RETURN(Qwen2Config config, load_qwen2_config(dir));
  KEVIN_ASSIGN_OR_RETURN(auto weights, load_safetensors_dir(dir));
  Qwen2ForCausalLM model(nullptr);
  try {
    model = Qwen2ForCausalLM(config, ModelInit{device, dtype, /*random=*/false});
  } catch (const std::exception& e) {
    return failed_precondition(dir.string() + ": cannot allocate the model on " + device.str() +
                               ": " + torch_error(e));
  }
  KEVIN_RETURN_IF_ERROR(model->load_weights(weights, stream_into).with_context(dir.string()));
  return model;
}

namespace {

std::string dtype_name(torch::ScalarType dtype) {
  return dtype == torch::kBFloat16 ? "bfloat16" : dtype == torch::kFloat16 ? "float16" : "float32";
}

NamedTensors cast_all(const NamedTensors& tensors, torch::ScalarType dtype,
                      const std::string& prefix = "") {
  torch::NoGradGuard no_grad;
  NamedTensors out;
  for (const auto& [name, tensor] : tensors)
    out.emplace_back(prefix + name, tensor.detach().to(dtype));
  return out;
}

}  // namespace

Result<torch::ScalarType> export_dtype_of(const std::string& name) {
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16") return torch::kFloat16;
  if (name == "float32") return torch::kFloat32;
  return invalid_argument("unknown dtype \"" + name + "\" (bfloat16, float16 or float32)");
}

namespace {

// The weights folder, then config.json (a reader that finds the config finds the weights).
Status write_qwen2_dir(const Qwen2Config& config, const std::vector<DeferredTensor>& weights,
                       const std::filesystem::path& dir, torch::ScalarType dtype,
                       uint64_t max_shard_bytes) {
  Qwen2Config saved = config;
  saved.torch_dtype = dtype_name(dtype);
  KEVIN_RETURN_IF_ERROR(write_sharded_safetensors(dir, weights, max_shard_bytes));
  return write_file_atomic(dir / "config.json", dump_json(to_json(saved), 2) + "\n");
}

}  // namespace

Status save_qwen2_dir(const Qwen2Config& config, const NamedTensors& weights,
                      const std::filesystem::path& dir, torch::ScalarType dtype,
                      uint64_t max_shard_bytes) {
  std::vector<DeferredTensor> deferred;
  for (const auto& [name, tensor] : weights) {
    if (!tensor.defined())
      return invalid_argument(dir.string() + ": weight " + name + " is undefined");
    deferred.push_back({name, dtype, tensor.sizes().vec(), [tensor = tensor] { return tensor; }});
  }
  return write_qwen2_dir(config, deferred, dir, dtype, max_shard_bytes);
}

Status save_merged_qwen2_dir(const Qwen2ForCausalLM& model, const std::filesystem::path& dir,
                             torch::ScalarType dtype, uint64_t max_shard_bytes) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, tensor] : model->named_weights()) shapes[name] = tensor.sizes().vec();
  std::vector<DeferredTensor> deferred;
  for (auto& [name, make] : model->merged_weight_makers())
    deferred.push_back({name, dtype, shapes.at(name), std::move(make)});
  return write_qwen2_dir(model->config(), deferred, dir, dtype, max_shard_bytes);
}

Status save_peft_adapter(const Qwen2ForCausalLM& model, const std::filesystem::path& dir,
                         const std::string& base_model, torch::ScalarType dtype) {
  const LoraConfig& lora = model->lora();
  if (lora.rank < 1) return failed_precondition("the model has no LoRA adapters to export");
  KEVIN_RETURN_IF_ERROR(write_safetensors(
      dir / "adapter_model.safetensors",
      cast_all(model->lora_weights(), dtype, "base_model.model."), {{"format", "pt"}}));
  const Json config = {{"peft_type", "LORA"},
                       {"task_type", "CAUSAL_LM"},
                       {"base_model_name_or_path", base_model},
                       {"r", lora.rank},
                       {"lora_alpha", lora.alpha},
                       {"lora_dropout", 0.0},
                       {"target_modules", lora.targets},
                       {"bias", "none"},
                       {"fan_in_fan_out", false},
                       {"inference_mode", true},
                       {"use_rslora", false},
                       {"use_dora", false},
                       {"modules_to_save", nullptr}};
  return write_file_atomic(dir / "adapter_config.json", dump_json(config, 2) + "\n");
}

}  // namespace kevin::train
