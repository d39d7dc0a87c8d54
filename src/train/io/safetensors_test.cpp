// safetensors_test.cpp — the safetensors reader and writer: byte-exact agreement with the
// reference implementation's own test vectors, round trips of every dtype, untrusted-file
// validation, mapping lifetime, and sharded Hugging Face folders.
#include "train/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <torch/version.h>

#include <cstring>
#include <fstream>
#include <random>

#include "core/file.h"
#include "core/json.h"

namespace kevin::train {
namespace {
namespace fs = std::filesystem;
using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;

// The raw bytes of a tensor, row-major.
std::string tensor_bytes(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  const size_t n = c.nbytes();
  return n == 0 ? std::string() : std::string(static_cast<const char*>(c.data_ptr()), n);
}

// Whether `text` contains `part`, printing both when not.
::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// An 8-byte little-endian size field.
std::string size_field(uint64_t n) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kevin_safetensors_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path put(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string bytes_of(const std::string& name) { return read_file(dir_ / name).value(); }

  fs::path dir_;
};

// The first three vectors are the expected outputs in huggingface/safetensors'
// bindings/python/tests/test_simple.py (test_serialization, test_serialization_metadata,
// test_serialization_forces_alignment); matching them byte for byte means we write the
// format, not merely something we can read back.
TEST_F(SafetensorsTest, WritesTheReferenceBytes) {
  torch::Tensor i32 = torch::zeros({2, 2}, torch::kInt);
  i32[1][1] = 1;
  ASSERT_TRUE(write_safetensors(dir_ / "a.safetensors", {{"test", i32}}).is_ok());
  EXPECT_EQ(bytes_of("a.safetensors"),
            std::string("@\0\0\0\0\0\0\0", 8) +
                R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" + "    " +
                std::string(12, '\0') + std::string("\x01\0\0\0", 4));

  ASSERT_TRUE(write_safetensors(dir_ / "b.safetensors",
                                {{"test1", torch::zeros({2, 2}, torch::kInt)}},
                                {{"framework", "pt"}})
                  .is_ok());
  EXPECT_EQ(bytes_of("b.safetensors"),
            std::string("`\0\0\0\0\0\0\0", 8) +
                R"({"__metadata__":{"framework":"pt"},)"
                R"("test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" +
                " " + std::string(16, '\0'));

  ASSERT_TRUE(
      write_safetensors(dir_ / "c.safetensors", {{"test1", torch::zeros({2, 2}, torch::kInt)},
                                                 {"test2", torch::zeros({2, 2}, torch::kHalf)}})
          .is_ok());
  const std::string c = bytes_of("c.safetensors");
  EXPECT_EQ(c, std::string("\x80\0\0\0\0\0\0\0", 8) +
                   R"({"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]},)"
                   R"("test2":{"dtype":"F16","shape":[2,2],"data_offsets":[16,24]}})" +
                   "      " + std::string(24, '\0'));
}

TEST_F(SafetensorsTest, ReadsTheReferenceUnpaddedVector) {
  // test_deserialization in the same file: a 60-byte header, not padded.
  const fs::path p =
      put("ref.safetensors", std::string("<\0\0\0\0\0\0\0", 8) +
                                 R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" +
                                 std::string(16, '\0'));
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->names(), std::vector<std::string>{"test"});
  auto t = f->tensor("test");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_TRUE(torch::equal(*t, torch::zeros({2, 2}, torch::kInt)));
}

TEST_F(SafetensorsTest, ReadsAHandWrittenHeader) {
  // Pretty-printed, keys out of data order, metadata last, no padding; data little-endian.
  const std::string header = R"({
    "w": {"dtype": "BF16", "shape": [2], "data_offsets": [8, 12]},
    "ids": {"shape": [1, 1], "data_offsets": [0, 8], "dtype": "I64"},
    "__metadata__": {"format": "pt", "note": "hand-written"}
  })";
  const std::string data =
      std::string("\x07\0\0\0\0\0\0\0", 8) + std::string("\x80\x3f\x00\xc0", 4);  // 7; bf16 1, -2
  const fs::path p = put("hand.safetensors", size_field(header.size()) + header + data);
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->names(), (std::vector<std::string>{"ids", "w"}));
  EXPECT_EQ(f->metadata(),
            (std::map<std::string, std::string>{{"format", "pt"}, {"note", "hand-written"}}));
  ASSERT_NE(f->find("w"), nullptr);
  EXPECT_EQ(f->find("w")->dtype, "BF16");
  EXPECT_EQ(f->find("w")->begin, 8u);
  EXPECT_EQ(f->find("nope"), nullptr);
  auto ids = f->tensor("ids");
  ASSERT_TRUE(ids.is_ok()) << ids.status().to_string();
  EXPECT_EQ(ids->scalar_type(), torch::kLong);
  EXPECT_EQ(ids->sizes().vec(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ids->item<int64_t>(), 7);
  auto w = f->tensor("w");
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(w->to(torch::kFloat), torch::tensor({1.0f, -2.0f})));
  auto missing = f->tensor("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(missing.status().message(), "nope"));
}

TEST_F(SafetensorsTest, RoundTripsEveryDtypeAndShape) {
  const std::vector<std::string> names = {"BOOL", "U8",  "I8",   "F8_E5M2", "F8_E4M3", "I16",
                                          "U16",  "F16", "BF16", "I32",     "U32",     "F32",
                                          "C64",  "F64", "I64",  "U64"};
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3}, {3, 0, 2}, {2, 1, 3, 2}};
  std::mt19937 rng(7);
  Tensors tensors;
  int supported = 0;
  for (const std::string& name : names) {
    auto dtype = torch_dtype_of(name);
    if (!dtype.is_ok()) {
      // Only types newer than this libtorch may be missing.
      EXPECT_EQ(dtype.status().code(), StatusCode::kUnimplemented) << name;
      continue;
    }
    ++supported;
    EXPECT_EQ(safetensors_dtype_of(*dtype).value_or(""), name);
    for (size_t s = 0; s < shapes.size(); ++s) {
      torch::Tensor t = torch::empty(shapes[s], torch::TensorOptions().dtype(*dtype));
      auto* p = static_cast<unsigned char*>(t.data_ptr());
      for (size_t i = 0; i < t.nbytes(); ++i) {
        p[i] = static_cast<unsigned char>(name == "BOOL" ? rng() % 2 : rng() % 256);
      }
      tensors.emplace_back(name + "/" + std::to_string(s), t);
    }
  }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  EXPECT_EQ(supported, 16);
#else
  EXPECT_EQ(supported, 11);  // no U16/U32/U64 or F8 types in this libtorch
#endif
  ASSERT_TRUE(write_safetensors(dir_ / "all.safetensors", tensors, {{"k", "v"}}).is_ok());
  auto f = SafetensorsFile::open(dir_ / "all.safetensors");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->metadata().at("k"), "v");
  ASSERT_EQ(f->names().size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    auto back = f->tensor(name);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back->scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(back->sizes(), t.sizes()) << name;
    EXPECT_EQ(tensor_bytes(*back), tensor_bytes(t)) << name;
  }
}

TEST_F(SafetensorsTest, Bf16RoundTripIsExact) {
  at::manual_seed(3);
  const torch::Tensor w = torch::randn({4, 8}).to(torch::kBFloat16);
  ASSERT_TRUE(write_safetensors(dir_ / "w.safetensors", {{"w", w}}).is_ok());
  auto f = SafetensorsFile::open(dir_ / "w.safetensors");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto back = f->tensor("w");
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(*back, w));
  auto as_float = f->copy("w", torch::kCPU, torch::kFloat);
  ASSERT_TRUE(as_float.is_ok()) << as_float.status().to_string();
  EXPECT_EQ(as_float->scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(*as_float, w.to(torch::kFloat)));
  // The stored bytes are the bf16 bit patterns themselves (1.0 is 0x3F80).
  ASSERT_TRUE(
      write_safetensors(dir_ / "one.safetensors", {{"x", torch::ones({1}, torch::kBFloat16)}})
          .is_ok());
  const std::string bytes = bytes_of("one.safetensors");
  EXPECT_EQ(bytes.substr(bytes.size() - 2), std::string("\x80\x3f", 2));
}

TEST_F(SafetensorsTest, WritesNonContiguousTensors) {
  const torch::Tensor t = torch::arange(6, torch::kFloat).reshape({2, 3}).t();
  ASSERT_FALSE(t.is_contiguous());
  ASSERT_TRUE(write_safetensors(dir_ / "t.safetensors", {{"t", t}}).is_ok());
  auto f = SafetensorsFile::open(dir_ / "t.safetensors");
  ASSERT_TRUE(f.is_ok());
  EXPECT_TRUE(torch::equal(f->tensor("t").value(), t));
}

TEST_F(SafetensorsTest, TensorsAreZeroCopyViewsThatOutliveTheFile) {
  const torch::Tensor a = torch::arange(1024, torch::kFloat);
  ASSERT_TRUE(write_safetensors(dir_ / "a.safetensors", {{"a", a}}).is_ok());
  torch::Tensor view;
  torch::Tensor owned;
  {
    auto f = SafetensorsFile::open(dir_ / "a.safetensors");
    ASSERT_TRUE(f.is_ok());
    view = f->tensor("a").value();
    EXPECT_EQ(view.data_ptr(), f->tensor("a").value().data_ptr());  // both alias the mapping
    owned = f->copy("a").value();
    EXPECT_NE(owned.data_ptr(), view.data_ptr());
  }
  fs::remove(dir_ / "a.safetensors");  // unlinking does not invalidate a mapping
  EXPECT_TRUE(torch::equal(view, a));
  owned.add_(1);  // copies are writable
  EXPECT_TRUE(torch::equal(owned, a + 1));
  EXPECT_TRUE(torch::equal(view, a));
}

TEST_F(SafetensorsTest, ViewsAreReadOnly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_TRUE(write_safetensors(dir_ / "a.safetensors", {{"a", torch::zeros({256})}}).is_ok());
  const torch::Tensor view = SafetensorsFile::open(dir_ / "a.safetensors")->tensor("a").value();
  EXPECT_DEATH(view.fill_(1), "");
}

TEST_F(SafetensorsTest, MisalignedTensorsAreCopiedAligned) {
  // In the given order the F32 tensor starts at byte 1 of the data buffer.
  const torch::Tensor f32 = torch::tensor({1.5f, -2.25f});
  ASSERT_TRUE(write_safetensors(dir_ / "m.safetensors",
                                {{"byte", torch::ones({1}, torch::kByte)}, {"f32", f32}})
                  .is_ok());
  auto f = SafetensorsFile::open(dir_ / "m.safetensors");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->find("f32")->begin, 1u);
  auto t = f->tensor("f32");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 4, 0u);
  EXPECT_TRUE(torch::equal(*t, f32));
}

TEST_F(SafetensorsTest, DtypeNames) {
  EXPECT_EQ(torch_dtype_of("BF16").value_or(torch::kFloat), torch::kBFloat16);
  EXPECT_EQ(torch_dtype_of("F128").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(torch_dtype_of("F8_E8M0").status().code(), StatusCode::kUnimplemented);
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 3)
  EXPECT_TRUE(contains(torch_dtype_of("U16").status().message(), "no torch type"));
#endif
  EXPECT_EQ(safetensors_dtype_of(torch::kComplexDouble).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(SafetensorsTest, WriterRejectsBadInputAndLeavesNothingBehind) {
  const torch::Tensor x = torch::zeros({2});
  const std::vector<std::pair<Tensors, std::string>> cases = {
      {{{"x", x}, {"x", x}}, "duplicate name"},
      {{{"__metadata__", x}}, "reserved"},
      {{{"u", torch::Tensor()}}, "undefined"},
      {{{"c", torch::zeros({2}, torch::kComplexDouble)}}, "no safetensors name"},
      {{{"bad\xff", x}}, "UTF-8"},
  };
  for (const auto& [tensors, expected] : cases) {
    const Status s = write_safetensors(dir_ / "bad.safetensors", tensors);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << expected;
    EXPECT_TRUE(contains(s.message(), expected));
    EXPECT_TRUE(contains(s.message(), "bad.safetensors"));
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

// A safetensors file with header `header` and `data_size` zero bytes of data; the size field
// is the header's length unless given.
std::string file_bytes(const std::string& header, size_t data_size,
                       std::optional<uint64_t> size = std::nullopt) {
  return size_field(size.value_or(header.size())) + header + std::string(data_size, '\0');
}

TEST_F(SafetensorsTest, RejectsCorruptFilesWithClearErrors) {
  struct Case {
    std::string name;
    std::string bytes;
    std::string expected;
  };
  const std::string f32x2 = R"("dtype":"F32","shape":[2])";
  const std::vector<Case> cases = {
      {"short", std::string("\x10\0\0", 3), "the file is 3 bytes, too short"},
      {"huge_header", file_bytes("{}", 0, 200'000'000), "header size 200000000 exceeds the limit"},
      {"truncated_header", file_bytes(R"({"a":{)", 0, 64),
       "header size 64 runs past the end of the file"},
      {"not_object", file_bytes("[1]", 0), "does not start with '{'"},
      {"bad_json", file_bytes(R"({"a": {"dtype": )", 0), "the header is not valid JSON"},
      {"truncated_data", file_bytes("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]}}", 4),
       "tensor \"a\": data_offsets [0, 8] run past the end of the data buffer (4 bytes"},
      {"offset_past_end", file_bytes("{\"a\":{" + f32x2 + ",\"data_offsets\":[100,108]}}", 8),
       "tensor \"a\": data_offsets [100, 108] run past the end of the data buffer (8 bytes"},
      {"overlap",
       file_bytes("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]},\"b\":{" + f32x2 +
                      ",\"data_offsets\":[4,12]}}",
                  12),
       "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\""},
      {"gap",
       file_bytes("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]},\"b\":{" + f32x2 +
                      ",\"data_offsets\":[12,20]}}",
                  20),
       "bytes [8, 12) of the data buffer, before tensor \"b\", belong to no tensor"},
      {"trailing", file_bytes("{\"a\":{" + f32x2 + ",\"data_offsets\":[0,8]}}", 9),
       "bytes [8, 9) at the end of the data buffer belong to no tensor"},
      {"wrong_size", file_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "tensor \"a\": data_offsets [0, 8] hold 8 bytes, but dtype F32 and shape [3] need 12"},
      {"unknown_dtype",
       file_bytes(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16),
       "tensor \"a\": unknown or unsupported dtype \"F128\""},
      {"negative_dim", file_bytes(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 0),
       "tensor \"a\": shape [-1] holds a dim that is not a non-negative integer"},
      {"fractional_dim",
       file_bytes(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 1),
       "tensor \"a\": shape [1.5] holds a dim"},
      {"overflow",
       file_bytes(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})",
                  0),
       "tensor \"a\": shape [4294967296,4294967296] overflows"},
      {"overflow_empty",
       file_bytes(R"({"a":{"dtype":"U8","shape":[0,9223372036854775807,2],"data_offsets":[0,0]}})",
                  0),
       "tensor \"a\": shape [0,9223372036854775807,2] overflows"},
      {"bytes_overflow",
       file_bytes(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0),
       "tensor \"a\": shape [4611686018427387904] overflows"},
      {"reversed", file_bytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}})", 1),
       "tensor \"a\": data_offsets [1, 0] end before they begin"},
      {"one_offset", file_bytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1),
       "tensor \"a\": \"data_offsets\" is not a pair"},
      {"no_dtype", file_bytes(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", 1),
       "tensor \"a\": \"dtype\" is missing"},
      {"entry", file_bytes(R"({"a":3})", 0), "tensor \"a\": entry is not a JSON object"},
      {"duplicate",
       file_bytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                  R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                  1),
       "tensor \"a\" appears twice"},
      {"metadata", file_bytes(R"({"__metadata__":{"k":1}})", 0), "metadata \"k\" is not a string"},
      {"deep", file_bytes(R"({"a":{"dtype":"U8","shape":[[[1]]],"data_offsets":[0,1]}})", 1),
       "the header is nested deeper than a safetensors header can be"},
  };
  for (const Case& c : cases) {
    const fs::path p = put(c.name + ".safetensors", c.bytes);
    auto f = SafetensorsFile::open(p);
    ASSERT_FALSE(f.is_ok()) << c.name;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_TRUE(contains(f.status().message(), p.string() + ": ")) << c.name;
    EXPECT_TRUE(contains(f.status().message(), c.expected)) << c.name;
  }
  auto missing = SafetensorsFile::open(dir_ / "missing.safetensors");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(missing.status().message(),
                       "no such file: " + (dir_ / "missing.safetensors").string()));
  auto folder = SafetensorsFile::open(dir_);
  EXPECT_EQ(folder.status().code(), StatusCode::kIoError);
  EXPECT_TRUE(contains(folder.status().message(), dir_.string() + ": not a regular file"));
}

TEST_F(SafetensorsTest, RejectsBoolBytesOtherThanZeroOrOne) {
  const std::string header = R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})";
  const fs::path p = put("bool.safetensors", size_field(header.size()) + header + "\x01\x02");
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto t = f->tensor("a");
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(t.status().message(), "tensor \"a\": a BOOL element is neither 0 nor 1"));
}

TEST_F(SafetensorsTest, NewerDtypesOpenButMayNotConvert) {
  // A file with a dtype this libtorch may lack still opens; only tensor() can refuse it.
  const fs::path p =
      put("u16.safetensors",
          file_bytes(R"({"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", 4));
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto t = f->tensor("a");
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
#else
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(contains(t.status().message(), "tensor \"a\""));
#endif
}

Tensors sample_model() {
  return {{"a", torch::arange(10, torch::kFloat)},
          {"b", torch::full({10}, 2.0f)},
          {"c", torch::arange(30, torch::kFloat).reshape({5, 6})},
          {"d", torch::ones({4}, torch::kBFloat16)},
          {"e", torch::zeros({0}, torch::kLong)}};
}

void expect_same(const std::map<std::string, torch::Tensor>& loaded, const Tensors& expected) {
  ASSERT_EQ(loaded.size(), expected.size());
  for (const auto& [name, t] : expected) {
    ASSERT_EQ(loaded.count(name), 1u) << name;
    EXPECT_EQ(loaded.at(name).scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(loaded.at(name), t)) << name;
  }
}

TEST_F(SafetensorsTest, WritesAndLoadsShardedCheckpoints) {
  // 40 + 40 + 120 + 8 + 0 bytes with 64-byte shards: [a] [b] [c, alone and over the limit] [d, e].
  const Tensors model = sample_model();
  put("notes.txt", "not ours");
  ASSERT_TRUE(write_sharded_safetensors(dir_, model, 64).is_ok());
  for (int i = 1; i <= 4; ++i)
    EXPECT_TRUE(fs::exists(dir_ / ("model-0000" + std::to_string(i) + "-of-00004.safetensors")));
  auto index = parse_json(bytes_of("model.safetensors.index.json"));
  ASSERT_TRUE(index.is_ok());
  EXPECT_EQ((*index)["metadata"]["total_size"], 208);
  EXPECT_EQ((*index)["weight_map"], Json({{"a", "model-00001-of-00004.safetensors"},
                                          {"b", "model-00002-of-00004.safetensors"},
                                          {"c", "model-00003-of-00004.safetensors"},
                                          {"d", "model-00004-of-00004.safetensors"},
                                          {"e", "model-00004-of-00004.safetensors"}}));
  auto shard = SafetensorsFile::open(dir_ / "model-00004-of-00004.safetensors");
  ASSERT_TRUE(shard.is_ok());
  EXPECT_EQ(shard->metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(shard->names(), (std::vector<std::string>{"d", "e"}));
  auto loaded = load_safetensors_dir(dir_);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  expect_same(*loaded, model);

  // Rewritten as one file: the old shards and index go, other files stay.
  ASSERT_TRUE(write_sharded_safetensors(dir_, model, 1 << 20).is_ok());
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir_))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"model.safetensors", "notes.txt"}));
  loaded = load_safetensors_dir(dir_);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  expect_same(*loaded, model);
  const Status no_room = write_sharded_safetensors(dir_, model, 0);
  EXPECT_EQ(no_room.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(no_room.message(), "max_shard_bytes must be positive"));
}

TEST_F(SafetensorsTest, DeferredTensorsAreMadeOneShardAtATime) {
  // Three 400-byte tensors, shards of 500 bytes: one tensor a shard. Each tensor is made only
  // once the shards before it are on disk, and converted to its planned dtype.
  std::vector<DeferredTensor> deferred;
  std::vector<size_t> files_seen;
  const auto shard_files = [&] {
    size_t n = 0;
    for (const auto& entry : fs::directory_iterator(dir_))
      n += entry.path().extension() == ".safetensors";
    return n;
  };
  for (int i = 0; i < 3; ++i) {
    deferred.push_back({"t" + std::to_string(i), torch::kFloat32, {100}, [&, i] {
                          files_seen.push_back(shard_files());
                          return torch::full({100}, i, torch::kFloat64);
                        }});
  }
  ASSERT_TRUE(write_sharded_safetensors(dir_, deferred, 500).is_ok());
  EXPECT_EQ(files_seen, (std::vector<size_t>{0, 1, 2}));
  auto loaded = load_safetensors_dir(dir_);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  for (int i = 0; i < 3; ++i) {
    const auto& t = loaded->at("t" + std::to_string(i));
    EXPECT_EQ(t.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::equal(t, torch::full({100}, i, torch::kFloat32)));
  }
  // A tensor made with another shape than planned is refused, naming it.
  deferred[1].make = [] { return torch::zeros({7}); };
  const Status wrong = write_sharded_safetensors(dir_ / "wrong", deferred, 500);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(wrong.message(), "\"t1\": made with shape [7], planned as [100]"));
}

TEST_F(SafetensorsTest, LoadsFoldersWithoutAnIndex) {
  ASSERT_TRUE(write_safetensors(dir_ / "part1.safetensors", {{"a", torch::ones({2})}}).is_ok());
  ASSERT_TRUE(write_safetensors(dir_ / "part2.safetensors", {{"b", torch::zeros({3})}}).is_ok());
  auto loaded = load_safetensors_dir(dir_);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->size(), 2u);
  ASSERT_TRUE(write_safetensors(dir_ / "part3.safetensors", {{"a", torch::ones({2})}}).is_ok());
  loaded = load_safetensors_dir(dir_);
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_TRUE(contains(loaded.status().message(),
                       "tensor \"a\" is in both part1.safetensors and part3.safetensors"));
  // model.safetensors, when present, is the checkpoint and other files are ignored.
  ASSERT_TRUE(write_safetensors(dir_ / "model.safetensors", {{"m", torch::ones({1})}}).is_ok());
  loaded = load_safetensors_dir(dir_);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->size(), 1u);
}

TEST_F(SafetensorsTest, LoadRejectsInconsistentIndexes) {
  ASSERT_TRUE(write_sharded_safetensors(dir_, sample_model(), 64).is_ok());
  const Json good = parse_json(bytes_of("model.safetensors.index.json")).value();
  const auto with_index = [&](const Json& index) {
    EXPECT_TRUE(write_file_atomic(dir_ / "model.safetensors.index.json", dump_json(index)).is_ok());
    return load_safetensors_dir(dir_).status();
  };
  Json index = good;
  index["weight_map"]["ghost"] = "model-00001-of-00004.safetensors";
  EXPECT_TRUE(contains(
      with_index(index).message(),
      "tensor \"ghost\" is indexed in model-00001-of-00004.safetensors, which does not hold it"));
  index = good;
  index["weight_map"].erase("e");  // shard 4 still holds it, beside "d"
  EXPECT_TRUE(contains(
      with_index(index).message(),
      "shard model-00004-of-00004.safetensors holds tensor \"e\", which the index does not list"));
  index = good;
  index["weight_map"]["a"] = "../model-00001-of-00004.safetensors";
  EXPECT_TRUE(contains(with_index(index).message(), "not a plain file name"));
  index = good;
  index["weight_map"]["a"] = "model-00009-of-00004.safetensors";
  EXPECT_EQ(with_index(index).code(), StatusCode::kNotFound);
  index = good;
  index.erase("weight_map");
  EXPECT_TRUE(contains(with_index(index).message(), "\"weight_map\""));
  // A tensor in two shards: shard 2 also holds "a", which the index places in shard 1.
  index = good;
  index["weight_map"]["b"] = "model-00002-of-00004.safetensors";
  ASSERT_TRUE(write_safetensors(dir_ / "model-00002-of-00004.safetensors",
                                {{"b", torch::full({10}, 2.0f)}, {"a", torch::ones({1})}})
                  .is_ok());
  const Status twice = with_index(index);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(twice.message(),
                       "tensor \"a\" is in both model-00002-of-00004.safetensors and "
                       "model-00001-of-00004.safetensors"));
  // Under the original index the extra "a" is a conflict too.
  const Status again = with_index(good);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(again.message(),
                       "tensor \"a\" is in both model-00002-of-00004.safetensors and "
                       "model-00001-of-00004.safetensors"))
      << again.to_string();
}

TEST_F(SafetensorsTest, LoadReportsMissingFolders) {
  auto nope = load_safetensors_dir(dir_ / "nope");
  EXPECT_EQ(nope.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(nope.status().message(), "no such folder: " + (dir_ / "nope").string()))
      << nope.status().to_string();
  auto empty = load_safetensors_dir(dir_);
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(empty.status().message(), "no safetensors file in " + dir_.string()))
      << empty.status().to_string();
}

}  // namespace
}  // namespace kevin::train
