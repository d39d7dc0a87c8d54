// tiny_model.cpp — writes the tests' tiny "scorable" Qwen2 folder (train/test_models.h) to a
// directory, so a script can run `kevin train` end to end with a real engine: the model samples
// code fences and text, which the engine compiles and judges like any model's answer.
// Usage: tiny_model DIR   (exit 0 on success; 1 with a message when the folder cannot be written)
#include <cstdio>

#include "train/test_models.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tiny_model DIR\n");
    return 2;
  }
  const kevin::Status written = kevin::train::write_scorable_model(argv[1]);
  if (!written.is_ok()) {
    std::fprintf(stderr, "tiny_model: %s\n", written.to_string().c_str());
    return 1;
  }
  return 0;
}
