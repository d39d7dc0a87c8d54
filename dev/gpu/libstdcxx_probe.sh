#!/usr/bin/env bash
# libstdcxx_probe.sh — finds which C++ runtime call crashes in processes that load PyTorch's
# libtorch (the GPU machine's ctest: binaries linking libtorch segfault in tests that use
# iostreams on files). Builds a probe with and without libtorch loaded and runs each call
# alone; a crash prints its backtrace. Usage (on the GPU machine): bash dev/gpu/libstdcxx_probe.sh
set -uo pipefail
work=$(mktemp -d)
lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
cat > "$work/probe.cpp" <<'CPP'
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
static void on_segv(int) { void* frames[64]; int n = backtrace(frames, 64); backtrace_symbols_fd(frames, n, 2); _exit(139); }
int main(int, char** argv) {
  signal(SIGSEGV, on_segv);
  const std::string what = argv[1], dir = argv[2];
  if (what == "ostringstream") { std::ostringstream s; s << "x" << 1 << 2.5; std::printf("%s ", s.str().c_str()); }
  if (what == "ofstream_string") { std::ofstream(dir + "/a", std::ios::binary) << "bytes"; }
  if (what == "ofstream_path") { std::ofstream(std::filesystem::path(dir) / "b", std::ios::binary) << "bytes"; }
  if (what == "ifstream_rdbuf") { std::ofstream(dir + "/c") << "abc"; std::ifstream in(dir + "/c"); std::ostringstream s; s << in.rdbuf(); std::printf("%s ", s.str().c_str()); }
  if (what == "random_device") { std::random_device rd; std::printf("%u ", rd()); }
  if (what == "create_directories") { std::filesystem::create_directories(std::filesystem::path(dir) / "x" / "y"); }
  std::puts("ok");
  return 0;
}
CPP
g++ -std=c++20 -O1 -rdynamic "$work/probe.cpp" -o "$work/plain" || exit 1
g++ -std=c++20 -O1 -rdynamic "$work/probe.cpp" -o "$work/torch" -Wl,--no-as-needed -L"$lib" -ltorch -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 -Wl,-rpath,"$lib" || exit 1
ldd "$work/torch" | grep -E "libstdc|libgcc_s|libtorch_cpu"
# The same probe with the system libstdc++ preloaded ahead of everything (the workaround seen to
# help in session 3).
cp "$work/torch" "$work/torch_preloaded"
for variant in plain torch torch_preloaded; do
  for what in ostringstream ofstream_string ofstream_path ifstream_rdbuf random_device create_directories; do
    preload=""; [[ $variant == torch_preloaded ]] && preload=$(g++ -print-file-name=libstdc++.so.6)
    printf '%-16s %-20s ' "$variant" "$what"
    LD_PRELOAD="$preload" "$work/$variant" "$what" "$work" 2>&1 | head -14; echo "  rc=${PIPESTATUS[0]}"
  done
done
