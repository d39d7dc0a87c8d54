// replay_main.cpp — runs a fuzz target without libFuzzer: every file of its seed corpus, then
// a fixed number of deterministic mutations of them (byte flips, truncations, splices,
// random bytes). Lets CI exercise the targets with the ordinary compiler; with clang,
// -DKEVIN_FUZZ=ON builds real libFuzzer binaries from the same sources.
// Usage: <target>_replay CORPUS_DIR [ITERATIONS]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string mutate(std::string s, std::mt19937_64& rng, const std::vector<std::string>& corpus) {
  const auto pick = [&rng](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  switch (rng() % 5) {
    case 0:
      for (int i = 0; i < 8 && !s.empty(); ++i) s[pick(s.size())] = static_cast<char>(rng());
      break;
    case 1:
      s.resize(pick(s.size() + 1));
      break;
    case 2:
      if (!corpus.empty()) {
        const std::string& other = corpus[pick(corpus.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
      }
      break;
    case 3:
      s.insert(pick(s.size() + 1), std::string(1 + pick(64), static_cast<char>(rng())));
      break;
    default: {
      std::string r(pick(512), '\0');
      for (auto& c : r) c = static_cast<char>(rng());
      s = r;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [ITERATIONS]\n", argv[0]);
    return 2;
  }
  const long iterations = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 5000;
  std::vector<std::string> corpus;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    std::ifstream in(entry.path(), std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const auto& s : corpus)
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  std::mt19937_64 rng(20261202);
  for (long i = 0; i < iterations; ++i) {
    std::string base =
        corpus.empty() ? std::string() : corpus[static_cast<size_t>(rng() % corpus.size())];
    const std::string input = mutate(std::move(base), rng, corpus);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  std::printf("%zu corpus files and %ld mutations ran without a crash\n", corpus.size(),
              iterations);
  return 0;
}
