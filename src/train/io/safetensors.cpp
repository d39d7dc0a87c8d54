// safetensors.cpp — safetensors reading (mmap, header validated as untrusted input),
// writing (streamed to a temporary file, then renamed) and Hugging Face sharded folders.
#include "train/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/version.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <tuple>

#include "core/file.h"
#include "core/json.h"

namespace kevin::train {
namespace fs = std::filesystem;

// The format stores little-endian values and the mapping is handed to torch as is.
static_assert(std::endian::native == std::endian::little, "safetensors needs a little-endian host");

namespace {

constexpr std::string_view kIndexFileName = "model.safetensors.index.json";
constexpr std::string_view kSingleFileName = "model.safetensors";
constexpr uint64_t kMaxInt64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Types newer than Debian's libtorch 1.13 exist only from the release that added them.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
constexpr torch::ScalarType kTorchF8E4M3 = torch::ScalarType::Float8_e4m3fn;
constexpr torch::ScalarType kTorchF8E5M2 = torch::ScalarType::Float8_e5m2;
#else
constexpr torch::ScalarType kTorchF8E4M3 = torch::ScalarType::Undefined;
constexpr torch::ScalarType kTorchF8E5M2 = torch::ScalarType::Undefined;
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
constexpr torch::ScalarType kTorchU16 = torch::ScalarType::UInt16;
constexpr torch::ScalarType kTorchU32 = torch::ScalarType::UInt32;
constexpr torch::ScalarType kTorchU64 = torch::ScalarType::UInt64;
#else
constexpr torch::ScalarType kTorchU16 = torch::ScalarType::Undefined;
constexpr torch::ScalarType kTorchU32 = torch::ScalarType::Undefined;
constexpr torch::ScalarType kTorchU64 = torch::ScalarType::Undefined;
#endif

struct DtypeEntry {
  std::string_view name;
  uint64_t size;                  // bytes per element
  torch::ScalarType scalar_type;  // Undefined when this libtorch has no such type
};

// The whole-byte dtypes of the format. The sub-byte ones (F4, F6_*) are left out: their
// tensors cannot be described by a torch dtype and shape at all.
constexpr std::array<DtypeEntry, 17> kDtypes{{
    {"BOOL", 1, torch::ScalarType::Bool},
    {"U8", 1, torch::ScalarType::Byte},
    {"I8", 1, torch::ScalarType::Char},
    {"F8_E5M2", 1, kTorchF8E5M2},
    {"F8_E4M3", 1, kTorchF8E4M3},
    {"F8_E8M0", 1, torch::ScalarType::Undefined},
    {"I16", 2, torch::ScalarType::Short},
    {"U16", 2, kTorchU16},
    {"F16", 2, torch::ScalarType::Half},
    {"BF16", 2, torch::ScalarType::BFloat16},
    {"I32", 4, torch::ScalarType::Int},
    {"U32", 4, kTorchU32},
    {"F32", 4, torch::ScalarType::Float},
    {"C64", 8, torch::ScalarType::ComplexFloat},
    {"F64", 8, torch::ScalarType::Double},
    {"I64", 8, torch::ScalarType::Long},
    {"U64", 8, kTorchU64},
}};

const DtypeEntry* find_dtype(std::string_view name) {
  const auto it = std::find_if(kDtypes.begin(), kDtypes.end(),
                               [&](const DtypeEntry& e) { return e.name == name; });
  return it == kDtypes.end() ? nullptr : &*it;
}

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Reads and checks one tensor entry of the header. Messages name the tensor, not the file
// (the caller adds it).
Result<SafetensorsTensorInfo> parse_entry(const std::string& name, const Json& entry,
                                          uint64_t buffer_size) {
  const std::string where = "tensor " + in_quotes(name) + ": ";
  if (!entry.is_object()) return invalid_argument(where + "entry is not a JSON object");
  SafetensorsTensorInfo info;

  const auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string())
    return invalid_argument(where + "\"dtype\" is missing or not a string");
  info.dtype = dtype->get<std::string>();
  const DtypeEntry* dt = find_dtype(info.dtype);
  if (dt == nullptr)
    return invalid_argument(where + "unknown or unsupported dtype " + in_quotes(info.dtype));

  const auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array())
    return invalid_argument(where + "\"shape\" is missing or not an array");
  // numel, and the product of the non-zero dims: the latter bounds every stride torch will
  // compute, so it must fit in int64 even when a zero dim makes the tensor empty.
  uint64_t numel = 1;
  uint64_t span = 1;
  for (const Json& dim : *shape) {
    if (!dim.is_number_unsigned())
      return invalid_argument(where + "shape " + shape->dump() +
                              " holds a dim that is not a non-negative integer");
    const uint64_t d = dim.get<uint64_t>();
    if (d > kMaxInt64 || __builtin_mul_overflow(span, std::max<uint64_t>(d, 1), &span) ||
        span > kMaxInt64) {
      return invalid_argument(where + "shape " + shape->dump() + " overflows");
    }
    numel *= d;  // cannot overflow: numel <= span
    info.shape.push_back(static_cast<int64_t>(d));
  }

  const auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return invalid_argument(where + "\"data_offsets\" is not a pair of non-negative integers");
  }
  info.begin = (*offsets)[0].get<uint64_t>();
  info.end = (*offsets)[1].get<uint64_t>();
  const std::string range =
      "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "]";
  if (info.begin > info.end) return invalid_argument(where + range + " end before they begin");
  if (info.end > buffer_size) {
    return invalid_argument(where + range + " run past the end of the data buffer (" +
                            std::to_string(buffer_size) +
                            " bytes; the file is truncated or the offsets are wrong)");
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, dt->size, &bytes))
    return invalid_argument(where + "shape " + shape->dump() + " overflows");
  if (bytes != info.end - info.begin) {
    return invalid_argument(where + range + " hold " + std::to_string(info.end - info.begin) +
                            " bytes, but dtype " + info.dtype + " and shape " +
                            shape_string(info.shape) + " need " + std::to_string(bytes));
  }
  return info;
}

// Closes a file descriptor when it goes out of scope.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() { ::close(fd_); }

 private:
  int fd_;
};

Status write_all(int fd, const void* data, uint64_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most about 2 GiB per call; large tensors take several.
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(std::string("write failed: ") + std::strerror(errno));
    }
    p += n;
    size -= static_cast<uint64_t>(n);
  }
  return Status::ok();
}

uint64_t byte_size(const torch::Tensor& t) {
  return static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(t.element_size());
}

// The header of write_safetensors, padded; also checks the tensors can be written.
Result<std::string> build_header(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                 const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps insertion order, so the header lists "__metadata__" first and the
  // tensors in data order, and each entry's keys in the reference writer's order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string_view> seen;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::string where = "tensor " + in_quotes(name) + ": ";
    if (name == "__metadata__")
      return invalid_argument(where + "the name is reserved for metadata");
    if (!seen.insert(name).second) return invalid_argument(where + "duplicate name");
    if (!t.defined()) return invalid_argument(where + "undefined tensor");
    if (t.layout() != torch::kStrided)
      return invalid_argument(where + "only dense (strided) tensors can be written");
    KEVIN_ASSIGN_OR_RETURN(std::string dtype, safetensors_dtype_of(t.scalar_type()));
    const uint64_t end = offset + byte_size(t);
    header[name] = {{"dtype", dtype},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", nlohmann::ordered_json::array({offset, end})}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
  } catch (const nlohmann::ordered_json::exception& e) {
    return invalid_argument(std::string("tensor names and metadata must be valid UTF-8: ") +
                            e.what());
  }
  // Padding to 8 bytes keeps the data buffer 8-aligned in the file, hence in the mapping.
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kSafetensorsMaxHeaderBytes) {
    return invalid_argument("the header would be " + std::to_string(text.size()) +
                            " bytes, over the " + std::to_string(kSafetensorsMaxHeaderBytes) +
                            "-byte limit readers enforce");
  }
  return text;
}

Status write_body(int fd, const std::string& header,
                  const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  const uint64_t header_size = header.size();
  std::array<char, 8> size_field{};
  std::memcpy(size_field.data(), &header_size, size_field.size());
  KEVIN_RETURN_IF_ERROR(write_all(fd, size_field.data(), size_field.size()));
  KEVIN_RETURN_IF_ERROR(write_all(fd, header.data(), header.size()));
  for (const auto& [name, t] : tensors) {
    const uint64_t bytes = byte_size(t);
    if (bytes == 0) continue;
    torch::Tensor cpu;
    try {
      // A no-op for contiguous CPU tensors; otherwise one tensor's worth of extra memory.
      cpu = t.detach().to(torch::kCPU).contiguous();
    } catch (const std::exception& e) {
      return failed_precondition("tensor " + in_quotes(name) +
                                 ": cannot copy to the CPU: " + torch_error(e));
    }
    KEVIN_RETURN_IF_ERROR(write_all(fd, cpu.data_ptr(), bytes));
  }
  return Status::ok();
}

// The entries of `dir` (files and folders), without throwing.
Result<std::vector<fs::path>> list_dir(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path());
  if (ec) return io_error("cannot list " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

std::string shard_file_name(size_t index, size_t count) {
  const auto five_digits = [](size_t v) {
    std::string s = std::to_string(v);
    return std::string(s.size() < 5 ? 5 - s.size() : 0, '0') + s;
  };
  return "model-" + five_digits(index) + "-of-" + five_digits(count) + ".safetensors";
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether `name` is one of the files write_sharded_safetensors writes (in any shard count).
bool is_checkpoint_file_name(std::string_view name) {
  if (name == kIndexFileName || name == kSingleFileName) return true;
  constexpr std::string_view kPrefix = "model-";
  constexpr std::string_view kSuffix = ".safetensors";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return false;
  const std::string_view middle =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  const size_t of = middle.find("-of-");
  return of != std::string_view::npos && all_digits(middle.substr(0, of)) &&
         all_digits(middle.substr(of + 4));
}

// An index names shards relative to its folder; anything else could read outside it.
bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

Result<std::map<std::string, torch::Tensor>> load_indexed(const fs::path& dir,
                                                          const fs::path& index_path) {
  const std::string where = index_path.string() + ": ";
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(index_path));
  Result<Json> parsed = parse_json(text);
  if (!parsed.is_ok()) return parsed.status().with_context(index_path.string());
  const auto weight_map = parsed->find("weight_map");
  if (!parsed->is_object() || weight_map == parsed->end() || !weight_map->is_object()) {
    return invalid_argument(where + "\"weight_map\" is missing or not an object");
  }
  std::map<std::string, SafetensorsFile> shards;
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, file_json] : weight_map->items()) {
    if (!file_json.is_string() || !is_plain_file_name(file_json.get<std::string>())) {
      return invalid_argument(where + "tensor " + in_quotes(name) +
                              ": the shard is not a plain file name");
    }
    const std::string file = file_json.get<std::string>();
    auto shard = shards.find(file);
    if (shard == shards.end()) {
      KEVIN_ASSIGN_OR_RETURN(SafetensorsFile opened, SafetensorsFile::open(dir / file));
      shard = shards.emplace(file, std::move(opened)).first;
    }
    if (!shard->second.contains(name)) {
      return invalid_argument(where + "tensor " + in_quotes(name) + " is indexed in " + file +
                              ", which does not hold it");
    }
    KEVIN_ASSIGN_OR_RETURN(out[name], shard->second.tensor(name));
  }
  for (const auto& [file, shard] : shards) {
    for (const std::string& name : shard.names()) {
      const auto indexed = weight_map->find(name);
      if (indexed == weight_map->end()) {
        return invalid_argument(where + "shard " + file + " holds tensor " + in_quotes(name) +
                                ", which the index does not list");
      }
      if (indexed->get<std::string>() != file) {
        return invalid_argument(where + "tensor " + in_quotes(name) + " is in both " + file +
                                " and " + indexed->get<std::string>());
      }
    }
  }
  return out;
}

}  // namespace

Result<torch::ScalarType> torch_dtype_of(std::string_view safetensors_dtype) {
  const DtypeEntry* dt = find_dtype(safetensors_dtype);
  if (dt == nullptr)
    return invalid_argument("unknown safetensors dtype " + in_quotes(safetensors_dtype));
  if (dt->scalar_type == torch::ScalarType::Undefined) {
    return unimplemented("safetensors dtype " + std::string(safetensors_dtype) +
                         " has no torch type in libtorch " + std::to_string(TORCH_VERSION_MAJOR) +
                         "." + std::to_string(TORCH_VERSION_MINOR));
  }
  return dt->scalar_type;
}

Result<std::string> safetensors_dtype_of(torch::ScalarType dtype) {
  const auto it = std::find_if(kDtypes.begin(), kDtypes.end(), [&](const DtypeEntry& e) {
    return e.scalar_type == dtype && dtype != torch::ScalarType::Undefined;
  });
  if (it == kDtypes.end())
    return invalid_argument(std::string("torch dtype ") + c10::toString(dtype) +
                            " has no safetensors name");
  return std::string(it->name);
}

struct SafetensorsFile::Mapping {
  Mapping(void* address, uint64_t length) : addr(address), size(length) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { ::munmap(addr, size); }
  const std::byte* bytes() const { return static_cast<const std::byte*>(addr); }

  void* addr;
  uint64_t size;
};

Result<SafetensorsFile> SafetensorsFile::open(const fs::path& path) {
  const std::string where = path.string() + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found("no such file: " + path.string());
    return io_error("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  const FdCloser closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return io_error("cannot stat " + path.string() + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return io_error(where + "not a regular file");
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    return invalid_argument(where + "the file is " + std::to_string(file_size) +
                            " bytes, too short to hold the 8-byte header size");
  }
  void* addr = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED)
    return io_error("cannot map " + path.string() + ": " + std::strerror(errno));

  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = std::make_shared<const Mapping>(addr, file_size);
  const std::byte* bytes = file.mapping_->bytes();

  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes, sizeof header_size);
  if (header_size > kSafetensorsMaxHeaderBytes) {
    return invalid_argument(where + "header size " + std::to_string(header_size) +
                            " exceeds the limit of " + std::to_string(kSafetensorsMaxHeaderBytes) +
                            " bytes");
  }
  if (header_size > file_size - 8) {
    return invalid_argument(where + "header size " + std::to_string(header_size) +
                            " runs past the end of the file (" + std::to_string(file_size) +
                            " bytes; truncated?)");
  }
  file.data_start_ = 8 + header_size;
  const uint64_t buffer_size = file_size - file.data_start_;
  const std::string_view text(reinterpret_cast<const char*>(bytes + 8), header_size);
  if (text.empty() || text.front() != '{')
    return invalid_argument(where + "the header does not start with '{'");

  // nlohmann keeps the last of duplicate keys silently; the format forbids them, so the
  // top-level keys are watched as they are parsed. Nesting is bounded too: a valid header is
  // at most 3 deep (the dims of a shape), and a 100 MB run of '[' would otherwise cost GBs.
  std::set<std::string> seen;
  std::optional<std::string> duplicate;
  const Json::parser_callback_t watch = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > 3) throw std::length_error("nested deeper than a safetensors header can be");
    if (depth == 1 && event == Json::parse_event_t::key &&
        !seen.insert(parsed.get<std::string>()).second && !duplicate) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(text.begin(), text.end(), watch);
  } catch (const Json::exception& e) {
    return invalid_argument(where + "the header is not valid JSON: " + e.what());
  } catch (const std::length_error& e) {
    return invalid_argument(where + "the header is " + e.what());
  }
  if (!header.is_object()) return invalid_argument(where + "the header is not a JSON object");
  if (duplicate)
    return invalid_argument(where + "tensor " + in_quotes(*duplicate) +
                            " appears twice in the header");

  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return invalid_argument(where + "\"__metadata__\" is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          return invalid_argument(where + "metadata " + in_quotes(key) + " is not a string");
        file.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    Result<SafetensorsTensorInfo> info = parse_entry(name, entry, buffer_size);
    if (!info.is_ok()) return info.status().with_context(path.string());
    file.infos_.emplace(name, std::move(info).value());
  }

  // In data order, each tensor must start where the previous one ended and the last must end
  // at the end of the file: no overlaps (aliasing), no gaps (hidden bytes).
  std::vector<std::tuple<uint64_t, uint64_t, const std::string*>> order;
  for (const auto& [name, info] : file.infos_) order.emplace_back(info.begin, info.end, &name);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a), *std::get<2>(a)) <
           std::tie(std::get<0>(b), std::get<1>(b), *std::get<2>(b));
  });
  uint64_t covered = 0;
  const std::string* previous = nullptr;
  for (const auto& [begin, end, name] : order) {
    if (begin < covered) {
      return invalid_argument(where + "tensor " + in_quotes(*name) + ": data_offsets [" +
                              std::to_string(begin) + ", " + std::to_string(end) +
                              "] overlap tensor " + in_quotes(*previous));
    }
    if (begin > covered) {
      return invalid_argument(where + "bytes [" + std::to_string(covered) + ", " +
                              std::to_string(begin) + ") of the data buffer, before tensor " +
                              in_quotes(*name) + ", belong to no tensor");
    }
    covered = end;
    previous = name;
    file.names_.push_back(*name);
  }
  if (covered != buffer_size) {
    return invalid_argument(where + "bytes [" + std::to_string(covered) + ", " +
                            std::to_string(buffer_size) +
                            ") at the end of the data buffer belong to no tensor");
  }
  return file;
}

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = infos_.find(name);
  return it == infos_.end() ? nullptr : &it->second;
}

Result<torch::Tensor> SafetensorsFile::tensor(std::string_view name) const {
  const std::string where = path_.string() + ": tensor " + in_quotes(name) + ": ";
  const SafetensorsTensorInfo* info = find(name);
  if (info == nullptr) return not_found(path_.string() + ": no tensor " + in_quotes(name));
  Result<torch::ScalarType> dtype = torch_dtype_of(info->dtype);
  if (!dtype.is_ok()) return Status(dtype.status().code(), where + dtype.status().message());
  const auto options = torch::TensorOptions().dtype(*dtype);
  const std::byte* data = mapping_->bytes() + data_start_ + info->begin;
  const uint64_t bytes = info->end - info->begin;
  try {
    if (bytes == 0) return torch::empty(info->shape, options);
    // Torch assumes a bool byte is 0 or 1 (anything else is undefined behaviour in its
    // kernels), and an untrusted file may hold any byte.
    if (*dtype == torch::kBool &&
        std::any_of(data, data + bytes, [](std::byte b) { return b > std::byte{1}; })) {
      return invalid_argument(where + "a BOOL element is neither 0 nor 1");
    }
    if (reinterpret_cast<std::uintptr_t>(data) % find_dtype(info->dtype)->size != 0) {
      torch::Tensor aligned = torch::empty(info->shape, options);
      std::memcpy(aligned.data_ptr(), data, bytes);
      return aligned;
    }
    // The deleter owns a reference to the mapping, so the storage keeps it mapped. from_blob
    // wants a mutable pointer; the pages stay PROT_READ, which is what makes the view read-only.
    return torch::from_blob(
        const_cast<std::byte*>(data), info->shape, [keep = mapping_](void*) {}, options);
  } catch (const std::exception& e) {
    return internal_error(where + torch_error(e));
  }
}

Result<torch::Tensor> SafetensorsFile::copy(std::string_view name, torch::Device device,
                                            std::optional<torch::ScalarType> dtype) const {
  KEVIN_ASSIGN_OR_RETURN(torch::Tensor view, tensor(name));
  try {
    return view.to(device, dtype.value_or(view.scalar_type()), /*non_blocking=*/false,
                   /*copy=*/true);
  } catch (const std::exception& e) {
    return failed_precondition(path_.string() + ": tensor " + in_quotes(name) +
                               ": cannot copy to " + device.str() + ": " + torch_error(e));
  }
}

Status write_safetensors(const fs::path& file,
                         const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  Result<std::string> header = build_header(tensors, metadata);
  if (!header.is_ok()) return header.status().with_context(file.string());
  std::error_code ec;
  if (file.has_parent_path()) {
    fs::create_directories(file.parent_path(), ec);
    if (ec) return io_error("cannot create " + file.parent_path().string() + ": " + ec.message());
  }
  // Streamed to a temporary file beside the target, then renamed: readers see the old file
  // or the new one, and a model never has to fit in memory twice.
  std::string tmp = file.string() + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0)
    return io_error("cannot create a temporary file beside " + file.string() + ": " +
                    std::strerror(errno));
  Status status = write_body(fd, *header, tensors);
  // mkostemp creates the file 0600; a checkpoint should be readable like any written file.
  if (status.is_ok() && ::fchmod(fd, 0644) != 0)
    status = io_error(std::string("fchmod failed: ") + std::strerror(errno));
  if (status.is_ok() && ::fsync(fd) != 0)
    status = io_error(std::string("fsync failed: ") + std::strerror(errno));
  if (::close(fd) != 0 && status.is_ok())
    status = io_error(std::string("close failed: ") + std::strerror(errno));
  if (status.is_ok() && ::rename(tmp.c_str(), file.c_str()) != 0) {
    status = io_error("cannot rename to " + file.string() + ": " + std::strerror(errno));
  }
  if (!status.is_ok()) ::unlink(tmp.c_str());
  return status.with_context(file.string());
}

Status write_sharded_safetensors(const fs::path& dir,
                                 const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                 uint64_t max_shard_bytes) {
  std::vector<DeferredTensor> deferred;
  for (const auto& [name, t] : tensors) {
    if (!t.defined())
      return invalid_argument(dir.string() + ": tensor " + in_quotes(name) + ": undefined tensor");
    deferred.push_back({name, t.scalar_type(), t.sizes().vec(), [t] { return t; }});
  }
  return write_sharded_safetensors(dir, deferred, max_shard_bytes);
}

namespace {

// The values of one shard's tensors, made and converted in order.
Result<std::vector<std::pair<std::string, torch::Tensor>>> make_shard(
    const fs::path& dir, const std::vector<const DeferredTensor*>& shard) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const DeferredTensor* d : shard) {
    const std::string where = dir.string() + ": tensor " + in_quotes(d->name) + ": ";
    torch::Tensor t;
    try {
      torch::NoGradGuard no_grad;
      t = d->make();
      if (t.defined()) t = t.detach().to(d->dtype);
    } catch (const std::exception& e) {
      return failed_precondition(where + "cannot make it: " + torch_error(e));
    }
    if (!t.defined()) return invalid_argument(where + "undefined tensor");
    if (t.sizes().vec() != d->shape) {
      return invalid_argument(where + "made with shape " + c10::str(t.sizes()) + ", planned as " +
                              c10::str(c10::IntArrayRef(d->shape)));
    }
    out.emplace_back(d->name, std::move(t));
  }
  return out;
}

}  // namespace

Status write_sharded_safetensors(const fs::path& dir, const std::vector<DeferredTensor>& tensors,
                                 uint64_t max_shard_bytes) {
  if (max_shard_bytes == 0)
    return invalid_argument(dir.string() + ": max_shard_bytes must be positive");
  // Shards are filled in order, as transformers does; a new one starts when the next tensor
  // would not fit (a tensor larger than the limit gets a shard of its own).
  std::vector<std::vector<const DeferredTensor*>> shards;
  std::set<std::string_view> seen;
  uint64_t shard_bytes = 0;
  uint64_t total_bytes = 0;
  for (const DeferredTensor& d : tensors) {
    if (!seen.insert(d.name).second)
      return invalid_argument(dir.string() + ": tensor " + in_quotes(d.name) + ": duplicate name");
    uint64_t bytes = static_cast<uint64_t>(c10::elementSize(d.dtype));
    for (const int64_t dim : d.shape) bytes *= static_cast<uint64_t>(std::max<int64_t>(dim, 0));
    if (shards.empty() || (!shards.back().empty() && shard_bytes + bytes > max_shard_bytes)) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&d);
    shard_bytes += bytes;
    total_bytes += bytes;
  }
  if (shards.empty()) shards.emplace_back();  // an empty model is still a (tensor-less) file

  std::set<std::string> written;
  Json weight_map = Json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string file_name =
        shards.size() == 1 ? std::string(kSingleFileName) : shard_file_name(i + 1, shards.size());
    KEVIN_ASSIGN_OR_RETURN(auto made, make_shard(dir, shards[i]));
    KEVIN_RETURN_IF_ERROR(write_safetensors(dir / file_name, made, {{"format", "pt"}}));
    written.insert(file_name);
    for (const DeferredTensor* d : shards[i]) weight_map[d->name] = file_name;
  }
  if (shards.size() > 1) {
    const Json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
    KEVIN_RETURN_IF_ERROR(write_file_atomic(dir / kIndexFileName, dump_json(index, 2) + "\n"));
    written.insert(std::string(kIndexFileName));
  }

  // Leftovers of an earlier checkpoint (another shard count, or an index beside a new single
  // file) would be loaded instead of, or mixed with, this one.
  KEVIN_ASSIGN_OR_RETURN(std::vector<fs::path> entries, list_dir(dir));
  for (const fs::path& entry : entries) {
    const std::string name = entry.filename().string();
    if (!is_checkpoint_file_name(name) || written.count(name) != 0) continue;
    std::error_code ec;
    fs::remove(entry, ec);
    if (ec) return io_error("cannot remove the stale " + entry.string() + ": " + ec.message());
  }
  return Status::ok();
}

Result<std::map<std::string, torch::Tensor>> load_safetensors_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("no such folder: " + dir.string());
  if (fs::exists(dir / kIndexFileName, ec)) return load_indexed(dir, dir / kIndexFileName);

  std::vector<fs::path> files;
  if (fs::exists(dir / kSingleFileName, ec)) {
    files.push_back(dir / kSingleFileName);
  } else {
    KEVIN_ASSIGN_OR_RETURN(std::vector<fs::path> entries, list_dir(dir));
    for (const fs::path& entry : entries) {
      if (entry.extension() == ".safetensors" && fs::is_regular_file(entry, ec))
        files.push_back(entry);
    }
  }
  if (files.empty()) return not_found("no safetensors file in " + dir.string());

  std::map<std::string, torch::Tensor> out;
  std::map<std::string, fs::path> origin;
  for (const fs::path& path : files) {
    KEVIN_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
    for (const std::string& name : file.names()) {
      const auto [it, inserted] = origin.emplace(name, path);
      if (!inserted) {
        return invalid_argument(dir.string() + ": tensor " + in_quotes(name) + " is in both " +
                                it->second.filename().string() + " and " +
                                path.filename().string());
      }
      KEVIN_ASSIGN_OR_RETURN(out[name], file.tensor(name));
    }
  }
  return out;
}

namespace {

// MADV_PAGEOUT (Linux >= 5.4) reclaims the range's pages only if this process alone maps
// them, and never changes contents, unlike MADV_DONTNEED, which zeroes anonymous memory. An
// older kernel refuses the hint: the copy is still right, only the memory stays resident.
void reclaim_pages(const void* data, int64_t bytes) {
#ifdef MADV_PAGEOUT
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end =
      (reinterpret_cast<uintptr_t>(data) + static_cast<uintptr_t>(bytes)) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace

std::string torch_error(const std::exception& e) {
  // c10::Error::what() carries a C++ backtrace on some releases; a Status wants one line.
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return c10_error->what_without_backtrace();
  return e.what();
}

Status stream_into(const torch::Tensor& source, const torch::Tensor& destination) {
  if (source.sizes() != destination.sizes()) {
    return invalid_argument("stream_into: a tensor of shape " + c10::str(source.sizes()) +
                            " cannot fill one of shape " + c10::str(destination.sizes()));
  }
  if (!source.is_contiguous() || !destination.is_contiguous())
    return invalid_argument("stream_into: both tensors must be contiguous");
  const int64_t total = source.numel();
  if (total == 0) return Status::ok();
  const int64_t per_chunk = std::max<int64_t>(1, kStreamChunkBytes / source.element_size());
  try {
    torch::NoGradGuard no_grad;
    const auto from = source.view({-1});
    auto to = destination.view({-1});
    for (int64_t begin = 0; begin < total; begin += per_chunk) {
      const int64_t n = std::min(per_chunk, total - begin);
      const auto chunk = from.narrow(0, begin, n);
      // A copy from pageable host memory returns once the bytes are read, so the pages
      // can go right after.
      to.narrow(0, begin, n).copy_(chunk);
      if (source.is_cpu()) reclaim_pages(chunk.data_ptr(), n * source.element_size());
    }
  } catch (const std::exception& e) {
    return failed_precondition("stream_into: cannot copy to " + destination.device().str() + ": " +
                               torch_error(e));
  }
  return Status::ok();
}

}  // namespace kevin::train
