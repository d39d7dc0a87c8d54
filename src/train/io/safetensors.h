// safetensors.h — the safetensors checkpoint format (huggingface/safetensors): a validating
// zero-copy reader over a read-only mmap, a streaming atomic writer, and Hugging Face sharded
// folders (model-0000i-of-0000n.safetensors + model.safetensors.index.json).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace kevin::train {

// Largest JSON header accepted, as in the reference implementation: the size field of an
// untrusted file must not make us parse (or trust) an arbitrarily large header.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// The torch dtype of a safetensors dtype name ("BF16" → kBFloat16). kInvalidArgument for a
// name this reader does not know; kUnimplemented for a known one this libtorch cannot hold
// (U16/U32/U64 need torch >= 2.3, F8_E4M3/F8_E5M2 >= 2.1, F8_E8M0 is never mapped).
Result<torch::ScalarType> torch_dtype_of(std::string_view safetensors_dtype);

// The safetensors name of a torch dtype (kBFloat16 → "BF16"); kInvalidArgument for a dtype
// the format has no name for (complex128, quantized types...).
Result<std::string> safetensors_dtype_of(torch::ScalarType dtype);

// One header entry, validated: its byte range is [begin, end) of the data buffer and is
// exactly numel(shape) * element size bytes.
struct SafetensorsTensorInfo {
  std::string dtype;           // the safetensors name, e.g. "BF16"
  std::vector<int64_t> shape;  // empty for a 0-d tensor
  uint64_t begin = 0;
  uint64_t end = 0;
};

// An open safetensors file: the whole file mapped read-only (PROT_READ, MAP_PRIVATE) and its
// header validated once, at open(). Copies share the mapping; it is unmapped when the last
// copy and the last tensor view of it are gone. The file must not be truncated or rewritten in
// place while mapped (the kernel would deliver SIGBUS); our writer never does either, it
// renames a new file over the old one.
class SafetensorsFile {
 public:
  // Opens and validates `path` as an untrusted file: header size within the file and
  // kSafetensorsMaxHeaderBytes, a JSON object header without duplicate names, known dtypes,
  // non-negative dims whose product and byte size do not overflow, byte sizes matching
  // dtype and shape, and ranges that neither overlap nor leave gaps and cover the data buffer
  // exactly. Missing file → kNotFound; unreadable → kIoError; any format violation →
  // kInvalidArgument whose message names the file and, where there is one, the tensor.
  static Result<SafetensorsFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  // Tensor names in data-buffer order (by begin offset, then name).
  const std::vector<std::string>& names() const { return names_; }
  // The "__metadata__" strings (empty when the file has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(std::string_view name) const { return infos_.find(name) != infos_.end(); }
  // The header entry of `name`, or nullptr when there is none. Valid while this object lives.
  const SafetensorsTensorInfo* find(std::string_view name) const;

  // Tensor `name` on the CPU as a view of the mapping, without copying: it keeps the mapping
  // alive, so it may outlive this object. The view is READ-ONLY: the pages are mapped
  // PROT_READ, so writing through it (in-place ops, optimizer steps, copy_ into it) crashes
  // the process; clone() it, or use copy(), before modifying. A tensor whose bytes are not
  // aligned to its element size (possible for files whose writer did not order tensors by
  // alignment) is returned as an aligned copy instead. Unknown name → kNotFound; a dtype this
  // libtorch cannot hold → kUnimplemented.
  Result<torch::Tensor> tensor(std::string_view name) const;

  // Tensor `name` as a new tensor that owns its memory, on `device`, converted to `dtype`
  // when given. Errors as tensor(); a torch failure (e.g. no CUDA) → kFailedPrecondition.
  Result<torch::Tensor> copy(std::string_view name, torch::Device device = torch::kCPU,
                             std::optional<torch::ScalarType> dtype = std::nullopt) const;

 private:
  struct Mapping;
  SafetensorsFile() = default;

  std::filesystem::path path_;
  std::shared_ptr<const Mapping> mapping_;
  uint64_t data_start_ = 0;  // file offset of the data buffer: 8 + header size
  std::vector<std::string> names_;
  std::map<std::string, SafetensorsTensorInfo, std::less<>> infos_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` to `file` in the given order (offsets follow that order), with `metadata`
// as "__metadata__" when non-empty. The header is compact JSON (entries "dtype", "shape",
// "data_offsets" in that order, "__metadata__" first) right-padded with spaces to a multiple
// of 8 bytes, as the reference writer does. Tensors may live on any device and be
// non-contiguous: each is copied to a contiguous CPU tensor in turn, so peak extra memory is
// one tensor. The file is written atomically (a temporary file in the same folder, fsync,
// rename); parent folders are created. kInvalidArgument for an undefined or non-strided
// tensor, a dtype the format lacks, a duplicate or reserved ("__metadata__") name, or names
// or metadata that are not valid UTF-8; kIoError when writing fails (nothing is left behind).
// Note: the reference writer instead sorts tensors by decreasing alignment so every tensor is
// aligned; with mixed dtypes, pass larger element sizes first to keep reads zero-copy.
Status write_safetensors(const std::filesystem::path& file,
                         const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

// Writes `tensors` as a Hugging Face checkpoint folder, as transformers' save_pretrained does:
// tensors go, in order, into shards of at most `max_shard_bytes` (a larger tensor gets a
// shard of its own); one shard is written as model.safetensors, several as
// model-00001-of-0000N.safetensors plus model.safetensors.index.json
// ({"metadata": {"total_size": bytes}, "weight_map": {name: shard}}). Every shard carries the
// metadata {"format": "pt"}, which transformers requires. Files of an earlier checkpoint in
// `dir` with those names that this one does not use are removed afterwards, so a folder
// never mixes two checkpoints once this returns; each file is atomic, the folder as a whole is
// not (write to a fresh folder and rename it for that). Errors as write_safetensors;
// max_shard_bytes == 0 → kInvalidArgument.
Status write_sharded_safetensors(const std::filesystem::path& dir,
                                 const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                 uint64_t max_shard_bytes);

// A tensor whose values a sharded writer asks for only when it writes the shard that holds
// it: the name, dtype and shape up front (they decide the shards), the values from `make`
// (any device and dtype; converted to `dtype`, and must have `shape`).
struct DeferredTensor {
  std::string name;
  torch::ScalarType dtype = torch::kFloat32;
  std::vector<int64_t> shape;
  std::function<torch::Tensor()> make;
};

// write_sharded_safetensors over deferred tensors: the shards are planned from dtypes and
// shapes, then each shard's tensors are made, converted and written before the next shard's
// are made, so at most one shard's values exist at once (a merged 32B export needs one 5 GiB
// shard beside the model, not a second model). Errors as above; a made tensor of another
// shape → kInvalidArgument; a torch failure while making or converting one (out of memory)
// → kFailedPrecondition. Shards written before an error stay, as above.
Status write_sharded_safetensors(const std::filesystem::path& dir,
                                 const std::vector<DeferredTensor>& tensors,
                                 uint64_t max_shard_bytes);

// Loads every tensor of a checkpoint folder: the shards model.safetensors.index.json names
// when it exists, else model.safetensors, else every *.safetensors file in the folder. The
// tensors are read-only views of the mappings (see SafetensorsFile::tensor) and keep them
// alive. With an index, every indexed tensor must be in its shard and every shard tensor in
// the index under that shard; shard names must be plain file names in `dir`. A name held by
// two files is an error in every case. No folder or no safetensors file → kNotFound; any
// inconsistency → kInvalidArgument naming the file and tensor.
Result<std::map<std::string, torch::Tensor>> load_safetensors_dir(const std::filesystem::path& dir);

// A torch exception's message for a Status: c10::Error's without its C++ backtrace.
std::string torch_error(const std::exception& e);

// Bytes of a checkpoint tensor that stream_into copies at a time.
inline constexpr int64_t kStreamChunkBytes = int64_t{64} << 20;

// Copies `source` into `destination` (same shape, contiguous, any device and dtype: the
// conversion is the one Tensor::copy_ makes) kStreamChunkBytes of the source at a time, and
// asks the kernel to reclaim each chunk's pages from this process once it is copied. For a
// view of a file mapping (SafetensorsFile::tensor, load_safetensors_dir) that keeps at most a
// chunk of the checkpoint resident here, so a 61 GiB model loads on a host with less memory
// free; the data stays readable (the pages come back from the file when touched again), and
// for any other tensor the hint changes nothing. kInvalidArgument for a shape mismatch or a
// non-contiguous tensor; kFailedPrecondition for a torch failure (out of device memory),
// after which `destination` is partly written.
Status stream_into(const torch::Tensor& source, const torch::Tensor& destination);

}  // namespace kevin::train
