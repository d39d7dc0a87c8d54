// compare.cpp — tolerance checks, parallel over chunks for large outputs.
#include <cstdint>
#include "engine/judge/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "engine/runner/host_kernels.h"

namespace kevin::engine {

Result<ToleranceProfile> ToleranceProfile::parse(std::string_view text) {
  ToleranceProfile p;
  if (text.empty() || text == "default") return p;
  if (text == "kevin") {
    p.name_ = "kevin";
    p.fixed_ = Tolerance{1e-2, 1e-2};
    return p;
  }
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos) {
    return invalid_argument("tolerance must be default, kevin or ATOL,RTOL (got '" +
                            std::string(text) + "')");
  }
  const std::string a(text.substr(0, comma)), r(text.substr(comma + 1));
  char* end_a = nullptr;
  char* end_r = nullptr;
  const double atol = std::strtod(a.c_str(), &end_a);
  const double rtol = std::strtod(r.c_str(), &end_r);
  if (a.empty() || r.empty() || *end_a != '\0' || *end_r != '\0' || !(atol >= 0) || !(rtol >= 0) ||
      !std::isfinite(atol) || !std::isfinite(rtol)) {
    return invalid_argument("tolerance ATOL,RTOL needs two non-negative numbers (got '" +
                            std::string(text) + "')");
  }
  p.name_ = std::string(text);
  p.fixed_ = Tolerance{atol, rtol};
  return p;
}

Tolerance ToleranceProfile::for_dtype(DType dtype) const {
  if (!is_floating(dtype)) return {0, 0};
  if (fixed_) return *fixed_;
  if (dtype == DType::kF16 || dtype == DType::kBF16) return {1e-2, 1e-2};
  return {1e-4, 1e-4};
}

std::string ToleranceProfile::describe() const { return name_; }

namespace {

void compare_range(const void* out, const void* ref, DType dtype, uint64_t begin, uint64_t end,
                   Tolerance tol, CompareStats* s) {
  const auto d = static_cast<int32_t>(dtype);
  const size_t elem = dtype_size(dtype);
  const bool exact = !is_floating(dtype);
  // Below this magnitude the tolerance is mostly absolute (CompareStats::max_rel_error).
  const double relative_floor = tol.rtol > 0 ? tol.atol / tol.rtol : 0;
  for (uint64_t i = begin; i < end; ++i) {
    if (exact) {
      // Integers and booleans compare bit for bit (doubles would merge values above 2^53).
      if (std::memcmp(static_cast<const uint8_t*>(out) + i * elem,
                      static_cast<const uint8_t*>(ref) + i * elem, elem) != 0) {
        if (s->first_bad < 0) {
          s->first_bad = static_cast<int64_t>(i);
          s->first_got = runner::load_as_double(out, d, i);
          s->first_expected = runner::load_as_double(ref, d, i);
        }
        ++s->mismatches;
      }
      continue;
    }
    const double got = runner::load_as_double(out, d, i);
    const double want = runner::load_as_double(ref, d, i);
    bool bad;
    if (!std::isfinite(want)) {
      // The reference is NaN/Inf here: the output must be the same kind of value.
      bad = std::isnan(want) ? !std::isnan(got) : got != want;
    } else if (!std::isfinite(got)) {
      bad = true;
      ++s->nonfinite;
    } else {
      const double err = std::fabs(got - want);
      ++s->finite;
      s->max_abs_error = std::max(s->max_abs_error, err);
      if (std::fabs(want) >= relative_floor && want != 0)
        s->max_rel_error = std::max(s->max_rel_error, err / std::fabs(want));
      bad = err > tol.atol + tol.rtol * std::fabs(want);
    }
    if (bad) {
      if (s->first_bad < 0) {
        s->first_bad = static_cast<int64_t>(i);
        s->first_got = got;
        s->first_expected = want;
      }
      ++s->mismatches;
    }
  }
}

}  // namespace

CompareStats compare_buffers(const void* out, const void* ref, DType dtype, uint64_t count,
                             Tolerance tol) {
  std::vector<CompareStats> partial(chunk_parts(count));
  parallel_chunks(count, [&](uint64_t begin, uint64_t end, size_t part) {
    compare_range(out, ref, dtype, begin, end, tol, &partial[part]);
  });
  CompareStats total;
  total.count = count;
  for (const auto& s : partial) {
    total.mismatches += s.mismatches;
    total.nonfinite += s.nonfinite;
    total.finite += s.finite;
    total.max_abs_error = std::max(total.max_abs_error, s.max_abs_error);
    total.max_rel_error = std::max(total.max_rel_error, s.max_rel_error);
    if (total.first_bad < 0 && s.first_bad >= 0) {
      total.first_bad = s.first_bad;
      total.first_got = s.first_got;
      total.first_expected = s.first_expected;
    }
  }
  return total;
}

std::string multi_index(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t extent = std::max<int64_t>(1, shape[d]);
    idx[d] = flat % extent;
    flat /= extent;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

}  // namespace kevin::engine
