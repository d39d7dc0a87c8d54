// object_gate_test.cpp — the object gate's structural rules on hand-made ElfObject values
// (one change from an honest object per case), and the reader on a stored real object and
// its truncations. Objects built by the real toolchain are in toolchain_gate_test.cpp.
#include <elf.h>
#include <gtest/gtest.h>

#include <functional>

#include "core/file.h"
#include "engine/gates/elf.h"
#include "engine/gates/symbol_gate.h"

namespace kevin::engine {
namespace {

ElfLoadTimeCall call(ElfCallKind kind, std::string source, std::vector<std::string> names) {
  ElfLoadTimeCall c;
  c.kind = kind;
  c.source = std::move(source);
  c.resolved = true;
  c.target = 0x1100;
  c.names = std::move(names);
  return c;
}

// What g++ makes of an honest CPU kernel, reduced to what the rules read.
ElfObject honest() {
  ElfObject o;
  o.sections = {{"", SHT_NULL, 0, 0, 0},
                {".dynsym", SHT_DYNSYM, SHF_ALLOC, 0x288, 0x60},
                {".rela.dyn", SHT_RELA, SHF_ALLOC, 0x400, 0x48},
                {".init", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, 23},
                {".plt", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1020, 0x20},
                {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1040, 0x100},
                {".fini", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1140, 9},
                {".rodata", SHT_PROGBITS, SHF_ALLOC, 0x2000, 0x20},
                {".init_array", SHT_INIT_ARRAY, SHF_ALLOC | SHF_WRITE, 0x3df0, 8},
                {".fini_array", SHT_FINI_ARRAY, SHF_ALLOC | SHF_WRITE, 0x3df8, 8},
                {".data", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 0x4000, 0x10},
                {".bss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 0x4010, 0x10},
                {".symtab", SHT_SYMTAB, 0, 0, 0x300}};
  o.segments = {{PT_LOAD, PF_R, 0, 0x500},
                {PT_LOAD, PF_R | PF_X, 0x1000, 0x149},
                {PT_LOAD, PF_R, 0x2000, 0x20},
                {PT_LOAD, PF_R | PF_W, 0x3df0, 0x230},
                {PT_GNU_STACK, PF_R | PF_W, 0, 0}};
  o.needed = {"libm.so.6", "libc.so.6"};
  o.has_symtab = true;
  o.load_time_calls = {call(ElfCallKind::kDtInit, "DT_INIT", {"_init"}),
                       call(ElfCallKind::kDtFini, "DT_FINI", {"_fini"}),
                       call(ElfCallKind::kInitArray, ".init_array[0]", {"frame_dummy"}),
                       call(ElfCallKind::kFiniArray, ".fini_array[0]", {"__do_global_dtors_aux"})};
  o.init_code = std::string("\x48\x83\xec\x08", 4);
  o.fini_code = std::string("\x48\x83\xec\x08", 4);
  return o;
}

std::string rule_after(const std::function<void(ElfObject&)>& change,
                       Backend backend = Backend::kCpu) {
  ElfObject o = honest();
  change(o);
  const auto r = check_object_structure(o, backend);
  return r ? r->rule : "";
}

ElfSection& section(ElfObject& o, std::string_view name) {
  return *std::find_if(o.sections.begin(), o.sections.end(),
                       [&](const ElfSection& s) { return s.name == name; });
}

TEST(ObjectGate, HonestObjectPasses) {
  EXPECT_FALSE(check_object_structure(honest(), Backend::kCpu).has_value());
  EXPECT_FALSE(check_object_structure(honest(), Backend::kCuda).has_value());
}

TEST(ObjectGate, Sections) {
  EXPECT_EQ(rule_after([](ElfObject& o) {
              o.sections.push_back({"kevin_evil", SHT_PROGBITS, SHF_ALLOC, 0x5000, 8});
            }),
            "banned_construct");
  EXPECT_EQ(rule_after([](ElfObject& o) {
              o.sections.push_back({".preinit_array", SHT_PREINIT_ARRAY, SHF_ALLOC, 0, 8});
            }),
            "banned_construct");
  EXPECT_EQ(rule_after([](ElfObject& o) {
              o.sections.push_back({".tdata", SHT_PROGBITS, SHF_ALLOC | SHF_TLS, 0, 8});
            }),
            "banned_construct");
  for (const char* ok : {".rodata.cst4", ".data.rel.ro", ".text.unlikely", ".note.gnu.property",
                         ".gnu.version_r", ".nv_fatbin", ".nvFatBinSegment", "__nv_module_id",
                         ".debug_info", ".rela.plt", ".nv.info"}) {
    EXPECT_EQ(rule_after([&](ElfObject& o) {
                o.sections.push_back({ok, SHT_PROGBITS, 0, 0, 8});
              }),
              "")
        << ok;
  }
}

TEST(ObjectGate, CodeOnlyWhereCodeBelongs) {
  EXPECT_EQ(rule_after([](ElfObject& o) { section(o, ".rodata").flags |= SHF_EXECINSTR; }),
            "code_outside_text");
  EXPECT_EQ(rule_after([](ElfObject& o) { section(o, ".data").flags |= SHF_EXECINSTR; }),
            "writable_code");
  EXPECT_EQ(rule_after([](ElfObject& o) { section(o, ".rodata").addr = 0x1148; }),
            "code_outside_text")
      << "data inside the executable segment";
  EXPECT_EQ(rule_after([](ElfObject& o) { section(o, ".text").flags |= SHF_WRITE; }),
            "writable_code");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.segments[1].flags |= PF_W; }), "writable_code");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.text_relocations = true; }), "writable_code");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.segments[4].flags |= PF_X; }), "executable_stack");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.segments.pop_back(); }), "executable_stack");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.ifuncs = {"pick"}; }), "indirect_function");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.ifuncs = {"R_X86_64_IRELATIVE"}; }),
            "indirect_function");
}

TEST(ObjectGate, Libraries) {
  EXPECT_EQ(rule_after([](ElfObject& o) { o.needed.push_back("libdl.so.2"); }),
            "library_not_allowed");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.needed.push_back("libcublas.so.13"); }, Backend::kCuda),
            "library_not_allowed");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.needed.push_back("libcudart.so.13"); }, Backend::kCpu),
            "library_not_allowed");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.needed.push_back("libcudart.so.13"); }, Backend::kCuda),
            "");
  EXPECT_EQ(rule_after([](ElfObject& o) {
              o.needed = {"libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"};
            }),
            "");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.loader_directives = {"DT_RUNPATH=/tmp"}; }),
            "library_not_allowed");
}

TEST(ObjectGate, LoadTimeCode) {
  const auto init_entry = [](std::vector<std::string> names, bool resolved = true,
                             bool unique = true) {
    return [=](ElfObject& o) {
      auto c = call(ElfCallKind::kInitArray, ".init_array[1]", names);
      c.resolved = resolved;
      c.unique = unique;
      o.load_time_calls.push_back(c);
    };
  };
  ElfObject dynamic_init = honest();
  init_entry({"_GLOBAL__sub_I_candidate.cpp"})(dynamic_init);
  const auto r = check_object_structure(dynamic_init, Backend::kCpu);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rule, "load_time_code");
  EXPECT_NE(r->detail.find("avoid globals with constructors"), std::string::npos) << r->detail;

  EXPECT_EQ(rule_after(init_entry({"evil"})), "load_time_code");
  EXPECT_EQ(rule_after(init_entry({"frame_dummy"}, false)), "load_time_code") << "unresolved slot";
  EXPECT_EQ(rule_after(init_entry({"frame_dummy"}, true, false)), "load_time_code")
      << "a second frame_dummy";
  EXPECT_EQ(rule_after(init_entry({})), "load_time_code") << "no function there";
  EXPECT_EQ(rule_after(init_entry({"_ZL24__sti____cudaRegisterAllv"}), Backend::kCpu),
            "load_time_code");
  EXPECT_EQ(rule_after(init_entry({"_ZL24__sti____cudaRegisterAllv"}), Backend::kCuda), "");
  EXPECT_EQ(rule_after(init_entry({"frame_dummy", "alias_of_it"})), "");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.load_time_calls[0].names = {"evil"}; }),
            "load_time_code")
      << "DT_INIT";
  EXPECT_EQ(rule_after([](ElfObject& o) { o.load_time_calls[1].names = {"_init"}; }),
            "load_time_code")
      << "DT_FINI";
  EXPECT_EQ(rule_after([](ElfObject& o) { o.load_time_calls[3].names = {"frame_dummy"}; }),
            "load_time_code")
      << "fini entry";
  EXPECT_EQ(rule_after([](ElfObject& o) {
              o.load_time_calls.push_back(
                  call(ElfCallKind::kPreinitArray, ".preinit_array[0]", {"frame_dummy"}));
            }),
            "load_time_code");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.has_symtab = false; }), "load_time_code");
  EXPECT_EQ(rule_after([](ElfObject& o) { o.unverified_relocations = true; }), "load_time_code");
  EXPECT_EQ(rule_after([](ElfObject& o) { section(o, ".init").size = 28; }), "load_time_code")
      << "a call added to .init";
  EXPECT_EQ(rule_after([](ElfObject& o) { section(o, ".fini").size = 14; }), "load_time_code");
  EXPECT_EQ(rule_after([](ElfObject& o) {
              section(o, ".init").size = 27;
              o.init_code = std::string("\xf3\x0f\x1e\xfa", 4);
            }),
            "")
      << "crti/crtn with endbr64";
}

// Several extensions linked into one object: each one's load-time functions carry `.ext<i>`
// (extension_load_time_name), in the torch profile only, and only on the names it renames.
TEST(ObjectGate, ExtensionCopiesOfLoadTimeFunctionsPassInTheTorchProfileOnly) {
  const auto with_init = [](const std::string& name, Backend backend, Profile profile) {
    ElfObject o = honest();
    o.load_time_calls.push_back(call(ElfCallKind::kInitArray, ".init_array[1]", {name}));
    const auto r = check_object_structure(o, backend, profile);
    return r ? r->rule : "";
  };
  const std::string registration = "_ZL24__sti____cudaRegisterAllv";
  EXPECT_TRUE(is_load_time_function(registration));
  EXPECT_TRUE(is_load_time_function("_GLOBAL__sub_I_main.cpp"));
  EXPECT_FALSE(is_load_time_function("frame_dummy"));
  EXPECT_EQ(extension_load_time_name(registration, 3), registration + ".ext3");
  const auto torch = Profile::kTorchExtension;
  EXPECT_EQ(with_init(registration + ".ext1", Backend::kCuda, torch), "");
  EXPECT_EQ(with_init("_GLOBAL__sub_I_main.cpp.ext0", Backend::kCuda, torch), "");
  EXPECT_EQ(with_init(registration + ".ext1", Backend::kCpu, torch), "load_time_code")
      << "no kernels to register on the CPU";
  EXPECT_EQ(with_init(registration + ".ext1", Backend::kCuda, Profile::kKevinAbi), "load_time_code")
      << "kevin's ABI links one unit";
  EXPECT_EQ(with_init(registration + ".extra", Backend::kCuda, torch), "load_time_code");
  EXPECT_EQ(with_init(registration + ".ext", Backend::kCuda, torch), "load_time_code");
  EXPECT_EQ(with_init("frame_dummy.ext1", Backend::kCuda, torch), "load_time_code")
      << "only renamed load-time functions carry the suffix";
}

TEST(ObjectGate, StoredObjectAndItsTruncations) {
  auto image =
      read_file(std::filesystem::path(KEVIN_SOURCE_DIR) / "tests/fuzz/corpus/elf/small_cpu.elf");
  ASSERT_TRUE(image.is_ok());
  auto object = read_elf_object(*image);
  ASSERT_TRUE(object.is_ok()) << object.status().to_string();
  EXPECT_TRUE(object->has_symtab);
  EXPECT_EQ(object->needed, std::vector<std::string>{"libm.so.6"});
  ASSERT_EQ(object->load_time_calls.size(), 4u);
  EXPECT_EQ(object->load_time_calls[2].names, std::vector<std::string>{"frame_dummy"});
  EXPECT_EQ(object->init_code.size(), 23u);
  EXPECT_FALSE(check_object_structure(*object, Backend::kCpu).has_value());
  for (size_t cut = 0; cut < image->size(); cut += 61) {
    const std::string_view part(image->data(), cut);
    (void)read_elf_object(part);
    (void)check_object(part, Backend::kCuda, 0);
  }
  std::string flipped = *image;
  for (size_t i = 0; i < flipped.size(); i += 7) {
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    (void)check_object(flipped, Backend::kCpu, 0);
  }
  EXPECT_EQ(check_object("", Backend::kCpu, 0)->rule, "import_not_allowed");
}

}  // namespace
}  // namespace kevin::engine
