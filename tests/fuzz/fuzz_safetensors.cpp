// fuzz_safetensors.cpp — fuzz target: a checkpoint from an untrusted model folder. The bytes
// as a .safetensors file (header validation, then every tensor viewed from the mapping) and
// as the folder's model.safetensors.index.json beside a valid shard (weight_map checks).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "scratch_file.h"
#include "train/io/safetensors.h"

namespace {

// shard.safetensors, for an index to name: tensor "w", F32[2], the header padded to 8 bytes
// so the tensor is aligned and viewed in place.
constexpr std::string_view kShardHeader =
    R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  )";

// The scratch folder, with shard.safetensors written into it on the first call.
const std::filesystem::path& folder_with_shard() {
  static const std::filesystem::path folder = [] {
    std::string shard(8, '\0');
    shard[0] = static_cast<char>(kShardHeader.size());
    shard += kShardHeader;
    shard += std::string(8, '\0');
    return kevin::fuzz::write_scratch_file("shard.safetensors", shard).parent_path();
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kevin::fuzz::write_scratch_file;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::filesystem::path file_path = write_scratch_file("input.safetensors", input);
  if (auto file = kevin::train::SafetensorsFile::open(file_path); file.is_ok()) {
    for (const std::string& name : file->names()) (void)file->tensor(name);
  }
  const std::filesystem::path& folder = folder_with_shard();
  (void)write_scratch_file("model.safetensors.index.json", input);
  (void)kevin::train::load_safetensors_dir(folder);
  return 0;
}
