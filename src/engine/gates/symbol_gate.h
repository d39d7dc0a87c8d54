// symbol_gate.h — the gate after compiling (the object gate): a built candidate may import
// only what the ABI needs (CUDA launch/registration and a few runtime calls, libm, memory
// copies, C++ runtime support), export only kevin_forward (plus C++ inline instantiations),
// hold limited writable static storage and no thread-local storage (the runner resets static
// storage between calls; TLS would escape that), and have the structure g++/nvcc give an
// honest kernel with our flags: no hand-placed code, no code the loader runs by itself.
// Rules:
//   import_not_allowed, export_not_allowed, static_storage_too_large, thread_local_storage;
//   banned_construct      a section not on the list of what g++/nvcc emit for our flags:
//                         .text* .init .fini .plt .plt.got .plt.sec .rodata* .data* .bss*
//                         .init_array .fini_array .eh_frame .eh_frame_hdr .gcc_except_table
//                         .dynamic .got .got.plt .dynsym .dynstr .gnu.hash .hash .gnu.version*
//                         .rela.* .note.* .comment .symtab .strtab .shstrtab .tm_clone_table
//                         .nv_fatbin .nvFatBinSegment __nv_module_id .nv.* .debug_*
//                         .gnu_debuglink (".x*" = .x and .x.<anything>);
//   code_outside_text     an executable section other than .init, .plt*, .text*, .fini, or
//                         any other section mapped into an executable segment;
//   writable_code         a segment or section both writable and executable, or text
//                         relocations (DT_TEXTREL, DF_TEXTREL);
//   executable_stack      PT_GNU_STACK missing or executable;
//   indirect_function     STT_GNU_IFUNC symbols or R_X86_64_IRELATIVE relocations (their
//                         resolvers run inside the loader);
//   library_not_allowed   DT_NEEDED beyond libc, libm, libstdc++, libgcc_s, ld-linux (and
//                         libcudart.so.* on CUDA), or DT_RPATH/RUNPATH/AUXILIARY/FILTER/AUDIT;
//   load_time_code        anything the loader would run besides the toolchain's own: every
//                         .init_array entry must resolve (R_X86_64_RELATIVE) to .symtab's
//                         unique frame_dummy (or nvcc's _ZL24__sti____cudaRegisterAllv on
//                         CUDA), every .fini_array entry to __do_global_dtors_aux, DT_INIT to
//                         _init and DT_FINI to _fini; no .preinit_array; .init/.fini no longer
//                         than crti+crtn make them; a .symtab is required. A C++ global with
//                         a dynamic initialiser (_GLOBAL__sub_I_...) is refused here.
// The torch-extension profile (KernelBench answers, docs/kernelbench.md) differs where a
// PyTorch extension must: it may import PyTorch's C++ API (c10, at, torch, pybind11, the C++
// library) except the families torch_import_allowed refuses, ATen operators only when they
// allocate, view or copy, and the Python C API except what imports or runs code; it may link
// libtorch/libc10, export PyInit_*, hold thread-local storage, and run its own unit's dynamic
// initialisers (_GLOBAL__sub_I_*) at load, under the runner's loader allowlist.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/gates/backend.h"
#include "engine/gates/elf.h"
#include "engine/gates/gate.h"

namespace kevin::engine {

inline constexpr uint64_t kMaxWritableStaticBytes = 64ull << 20;
// __device__ globals are not reset between calls (host statics are), so they are kept small:
// enough for counters and flags, too small to cache outputs of realistic size.
inline constexpr uint64_t kMaxDeviceGlobalBytes = 1ull << 20;

// Several extensions of one answer linked into one object (CompileDriver::build_extensions):
// each brings its own load-time functions (nvcc's registration of its kernels, g++'s dynamic
// initialisers), under the same names. Before the link, extension `i`'s copies are renamed
// extension_load_time_name(name, i): a suffix `.ext<i>` that C++ cannot spell, so each name
// is still the name of one function, and the load-time check accepts them by that suffix.
bool is_load_time_function(std::string_view name);
std::string extension_load_time_name(std::string_view name, size_t extension);

// True if a candidate for `backend` may import `symbol` (version suffix already removed).
bool import_allowed(const std::string& symbol, Backend backend,
                    Profile profile = Profile::kKevinAbi);

// nullopt when the built object passes; otherwise the first rule that fired.
// `device_global_bytes` is the CUDA __device__ storage reported by ptxas (0 on CPU).
std::optional<Rejection> check_symbols(const ElfSymbols& symbols, Backend backend,
                                       uint64_t device_global_bytes,
                                       Profile profile = Profile::kKevinAbi);

// The structural rules (banned_construct for sections, code_outside_text, writable_code,
// executable_stack, indirect_function, library_not_allowed, load_time_code) over an object
// already read. nullopt when it passes; otherwise the first rule that fired.
std::optional<Rejection> check_object_structure(const ElfObject& object, Backend backend,
                                                Profile profile = Profile::kKevinAbi);

// The whole object gate over a built shared object's bytes (`image`, untrusted, not kept):
// reads the ELF, applies check_symbols, then check_object_structure. nullopt when it passes;
// an unreadable object is rejected (rule import_not_allowed), never an error.
std::optional<Rejection> check_object(std::string_view image, Backend backend,
                                      uint64_t device_global_bytes,
                                      Profile profile = Profile::kKevinAbi);

}  // namespace kevin::engine
