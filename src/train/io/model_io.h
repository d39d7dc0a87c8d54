// model_io.h — Qwen2 models to and from Hugging Face folders: config.json plus (sharded)
// safetensors, the layout transformers' from_pretrained / save_pretrained and vLLM read.
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/status.h"
#include "train/model/qwen2_model.h"

namespace kevin::train {

// A model built from <dir>/config.json and every weight of the folder, its parameters
// allocated on `device` in `dtype` (the checkpoint's values converted as Tensor::copy_ does)
// and filled tensor by tensor straight from the mapped shards: no copy of the model is made in
// host memory and nothing is randomly initialised, so the host needs about one
// kStreamChunkBytes chunk beyond the process itself. Errors: kNotFound (no config or no
// safetensors), kInvalidArgument (a config or weight that does not fit), kUnimplemented (an
// unsupported config feature), kFailedPrecondition (the device cannot hold the model: out of
// memory, no such device).
Result<Qwen2ForCausalLM> load_qwen2_dir(const std::filesystem::path& dir,
                                        torch::Device device = torch::kCPU,
                                        torch::ScalarType dtype = torch::kFloat32);

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes an HF folder: config.json (with `dtype` as its torch_dtype) and `weights` (HF names,
// e.g. a model's named_weights() or merged_weights()) cast to `dtype`, in shards of at most
// `max_shard_bytes`. Errors as write_sharded_safetensors, or kIoError for config.json.
Status save_qwen2_dir(const Qwen2Config& config, const NamedTensors& weights,
                      const std::filesystem::path& dir, torch::ScalarType dtype,
                      uint64_t max_shard_bytes = 5ull << 30);

// save_qwen2_dir of the model's merged_weights, one shard's worth merged at a time (its
// merged_weight_makers): exporting a 32B model needs about one shard of device memory beside
// it, not a merged copy. Errors as save_qwen2_dir, and kFailedPrecondition when merging one
// shard runs out of memory.
Status save_merged_qwen2_dir(const Qwen2ForCausalLM& model, const std::filesystem::path& dir,
                             torch::ScalarType dtype, uint64_t max_shard_bytes = 5ull << 30);

// Writes the model's LoRA adapters as a PEFT folder (adapter_config.json and
// adapter_model.safetensors under PEFT's "base_model.model." names) that PEFT and vLLM load
// on top of `base_model`. kFailedPrecondition when the model has no adapters.
Status save_peft_adapter(const Qwen2ForCausalLM& model, const std::filesystem::path& dir,
                         const std::string& base_model, torch::ScalarType dtype);

// "bfloat16" / "float16" / "float32" → the torch type; kInvalidArgument otherwise.
Result<torch::ScalarType> export_dtype_of(const std::string& name);

}  // namespace kevin::train
