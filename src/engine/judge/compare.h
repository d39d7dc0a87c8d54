// compare.h — the judge's element-wise check of candidate outputs against expected ones:
// |out - ref| <= atol + rtol*|ref| for floating dtypes, exact equality otherwise; NaN/Inf in
// the output never pass unless the reference holds the same non-finite value there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/tensor.h"

namespace kevin::engine {

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

// Tolerance profiles: "default" (fp32/fp64 1e-4/1e-4, fp16/bf16 1e-2/1e-2), "kevin" (1e-2
// for every floating dtype, the paper's setting) or "ATOL,RTOL" for every floating dtype.
class ToleranceProfile {
 public:
  static Result<ToleranceProfile> parse(std::string_view text);
  Tolerance for_dtype(DType dtype) const;
  std::string describe() const;

 private:
  std::string name_ = "default";
  std::optional<Tolerance> fixed_;
};

struct CompareStats {
  uint64_t count = 0;        // elements compared
  uint64_t mismatches = 0;   // elements outside tolerance (non-finite ones included)
  uint64_t nonfinite = 0;    // NaN/Inf in the output where the reference is finite
  uint64_t finite = 0;       // elements where both are finite: what the errors below cover
  double max_abs_error = 0;  // over finite elements
  // Over finite elements whose expected value is at least atol/rtol in magnitude, where the
  // tolerance is mostly relative: near zero a tiny absolute error is a huge relative one
  // (0.5 for 1e-9 against 2e-9) and says nothing the absolute error does not.
  double max_rel_error = 0;
  int64_t first_bad = -1;  // flat index of the first mismatch
  double first_got = 0, first_expected = 0;
  bool ok() const { return mismatches == 0; }
};

// Compares `count` elements of `dtype`. Uses several threads for large tensors.
CompareStats compare_buffers(const void* out, const void* ref, DType dtype, uint64_t count,
                             Tolerance tol);

// "[3, 17]" — the multi-index of flat index `flat` in `shape`.
std::string multi_index(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace kevin::engine
