// judge.cpp — the correctness and timing protocols (DESIGN.md §6) and the feedback text.
#include <cstdint>
#include "engine/judge.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <memory>
#include <numeric>
#include <random>

#include "core/file.h"
#include "core/log.h"
#include "engine/gate.h"
#include "engine/runner/host_kernels.h"
#include "engine/runner_session.h"
#include "engine/symbol_gate.h"
#include "sys/fd.h"

namespace kevin::engine {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// v with `digits` significant digits ("0.0123").
std::string fmt_g(double v, int digits) {
  std::ostringstream o;
  o << std::setprecision(digits) << v;
  return o.str();
}

// v with `decimals` digits after the point ("1.50").
std::string fmt_f(double v, int decimals) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(decimals) << v;
  return o.str();
}

// A candidate's fate, decided part-way: the verdict, its reason and the feedback body.
struct Decision {
  VerdictKind kind;
  std::string reason;
  std::string feedback;
};

Decision rejected(const Rejection& r) {
  return {VerdictKind::kRejected, r.rule,
          "Your kernel was rejected before it ran (rule " + r.rule + "): " + r.detail + "."};
}

std::string printed_suffix(const std::string& printed) {
  if (printed.empty()) return "";
  return "\nOutput printed by the kernel before it stopped:\n" + printed;
}

Decision runtime_error(const std::string& what, const std::string& printed) {
  return {VerdictKind::kRuntimeError, what,
          "Your kernel compiled but failed at run time: " + what + "." + printed_suffix(printed)};
}

Decision from_lost_runner(const RunnerSession::Reply& r, const std::string& printed,
                          std::chrono::milliseconds limit, const char* stage) {
  if (r.timed_out) {
    return {VerdictKind::kTimeout, std::string(stage) + " did not finish",
            "Your kernel did not finish within " + fmt_f(static_cast<double>(limit.count()) / 1000.0, 1) +
                " s during " + stage + " and was stopped (infinite loop or deadlock?)."};
  }
  std::string how = r.exit.describe();
  if (!r.exit.exited && r.exit.signal == SIGXFSZ) how = "it printed more output than allowed (1 MiB)";
  if (!r.exit.exited && r.exit.signal == SIGXCPU) how = "it exceeded its CPU-time limit";
  if (!r.exit.exited && r.exit.signal == SIGSYS) how = "it made a forbidden system call";
  return runtime_error("the process running it ended unexpectedly during " + std::string(stage) +
                           " (" + how + ")",
                       printed);
}

// The judge's private copy of one output set.
struct OutputCopy {
  std::unique_ptr<uint8_t[]> data;
  uint64_t size = 0;
};

// Expected outputs and host-side views of one output set.
struct OutputSet {
  std::vector<TensorSpec> specs;
  SetLayout layout;
};

struct ReferenceView {
  sys::SharedMemory inputs, expected;
  std::vector<uint64_t> input_hashes;
};

Result<sys::SharedMemory> map_readonly(const fs::path& file, uint64_t bytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found("cannot open " + file.string());
  return sys::SharedMemory::map_fd(fd, bytes, false);
}

// Hashes of each input set, cached beside the reference data (they depend only on it).
Result<std::vector<uint64_t>> input_set_hashes(const ReferenceSet& ref, const sys::SharedMemory& inputs,
                                               uint64_t set_bytes) {
  const fs::path cache = ref.dir / "input_hashes.json";
  if (auto text = read_file(cache); text.is_ok()) {
    if (auto j = parse_json(*text); j.is_ok() && j->is_array() && j->size() == ref.num_sets) {
      return j->get<std::vector<uint64_t>>();
    }
  }
  std::vector<uint64_t> hashes;
  for (size_t k = 0; k < ref.num_sets; ++k) hashes.push_back(runner::host_hash(inputs.data() + k * set_bytes, set_bytes));
  (void)write_file_atomic(cache, dump_json(Json(hashes)));
  return hashes;
}

struct Fingerprint {
  double weighted = 0, abs = 0;
};

Fingerprint fingerprint_outputs(const uint8_t* base, const OutputSet& outs, uint64_t seed) {
  Fingerprint f;
  uint64_t index = 0;
  for (size_t i = 0; i < outs.specs.size(); ++i) {
    const auto n = static_cast<uint64_t>(outs.specs[i].numel());
    const auto dtype = static_cast<int32_t>(outs.specs[i].dtype);
    const auto elem = dtype_size(outs.specs[i].dtype);
    std::vector<runner::Fingerprint> partial(chunk_parts(n));
    parallel_chunks(n, [&](uint64_t begin, uint64_t end, size_t part) {
      partial[part] = runner::host_fingerprint(base + outs.layout.offsets[i] + begin * elem, dtype, end - begin,
                                               seed, index + begin);
    });
    for (const auto& p : partial) {
      f.weighted += p.weighted_sum;
      f.abs += p.abs_sum;
    }
    index += n;
  }
  return f;
}

class Evaluation {
 public:
  Evaluation(const EvalConfig& config, const ReferenceSet& ref, EvalResult* result)
      : config_(config), ref_(ref), result_(result), rng_(std::random_device{}()) {
    outs_.specs = ref.outputs;
    outs_.layout = layout_of(ref.outputs);
  }

  // Runs correctness then timing; returns the final decision.
  Result<Decision> run(const fs::path& object);
  // What the candidate printed; then lets the runner exit (or kills it).
  std::string finish() {
    if (!session_) return "";
    std::string printed = session_->captured_output();
    session_->finish();
    return printed;
  }

 private:
  Result<std::optional<Decision>> check_call(RunnerSession& s, size_t set, const char* stage,
                                             OutputCopy* got);
  std::optional<Decision> compare_set(const uint8_t* got, size_t set);
  Result<Decision> time(RunnerSession& s);

  const EvalConfig& config_;
  const ReferenceSet& ref_;
  EvalResult* result_;
  std::mt19937_64 rng_;
  OutputSet outs_;
  ReferenceView view_;
  uint64_t weights_seed_ = 0;
  std::vector<Fingerprint> own_prints_;  // candidate's checked output per set
  double nondeterminism_l2_ = 0;  // between the two runs on set 0
  std::vector<double> call_wall_ms_;
  std::optional<RunnerSession> session_;
};

std::optional<Decision> Evaluation::compare_set(const uint8_t* got, size_t set) {
  const uint8_t* want = view_.expected.data() + set * outs_.layout.set_bytes;
  for (size_t i = 0; i < outs_.specs.size(); ++i) {
    const auto& spec = outs_.specs[i];
    const Tolerance tol = config_.tolerance.for_dtype(spec.dtype);
    const CompareStats s = compare_buffers(got + outs_.layout.offsets[i], want + outs_.layout.offsets[i],
                                           spec.dtype, static_cast<uint64_t>(spec.numel()), tol);
    result_->max_abs_error = std::max(result_->max_abs_error.value_or(0), s.max_abs_error);
    result_->max_rel_error = std::max(result_->max_rel_error.value_or(0), s.max_rel_error);
    if (s.ok()) continue;
    std::string detail = "output " + std::to_string(i) + " (" + spec.type_string() + ") differs from the reference in " +
                         std::to_string(s.mismatches) + " of " + std::to_string(s.count) + " elements";
    if (s.nonfinite > 0) detail += ", " + std::to_string(s.nonfinite) + " of them NaN/Inf";
    detail += "; max abs error " + fmt_g(s.max_abs_error, 4) + ", max rel error " + fmt_g(s.max_rel_error, 4);
    detail += "; first mismatch at index " + multi_index(s.first_bad, spec.shape) + ": got " +
              fmt_g(s.first_got, 6) + ", expected " + fmt_g(s.first_expected, 6);
    detail += " (tolerance atol=" + fmt_g(tol.atol, 6) + ", rtol=" + fmt_g(tol.rtol, 6) + ")";
    result_->mismatch = detail;
    return Decision{VerdictKind::kWrongAnswer, "output mismatch",
                    "Your kernel ran but its output is incorrect: " + detail + "."};
  }
  return std::nullopt;
}

// Outputs can be gigabytes: copying (and first-touching) them on one core would dominate
// the correctness phase, so the buffer is left uninitialised and filled on all cores.
void copy_parallel(const uint8_t* from, uint64_t bytes, OutputCopy* to) {
  if (to->size != bytes) {
    to->data.reset(new uint8_t[bytes]);
    to->size = bytes;
  }
  parallel_chunks(bytes, [&](uint64_t begin, uint64_t end, size_t) { std::memcpy(to->data.get() + begin, from + begin, end - begin); });
}

Result<std::optional<Decision>> Evaluation::check_call(RunnerSession& s, size_t set, const char* stage,
                                                       OutputCopy* got) {
  // `got` receives the candidate's output: a private copy of the staging area.
  const Json cmd = {{"cmd", "call"}, {"set", set}, {"poison", static_cast<uint32_t>(rng_())}};
  SharedDeviceLock shared(config_.gate);
  KEVIN_ASSIGN_OR_RETURN(auto reply, s.request(cmd, sys::Deadline::after(config_.call_timeout)));
  if (reply.died || reply.timed_out) {
    return std::optional<Decision>(from_lost_runner(reply, s.captured_output(), config_.call_timeout, stage));
  }
  if (!reply.body.value("ok", false)) {
    return std::optional<Decision>(runtime_error(reply.body.value("error", "unknown failure"), s.captured_output()));
  }
  const int rc = reply.body.value("rc", 0);
  if (rc != 0) {
    return std::optional<Decision>(runtime_error("kevin_forward returned " + std::to_string(rc) + " (0 means success)",
                                                 s.captured_output()));
  }
  call_wall_ms_.push_back(reply.body.value("wall_ms", 0.0));
  if (reply.body.value("input_hashes", std::vector<uint64_t>{}) != view_.input_hashes) {
    return std::optional<Decision>(Decision{
        VerdictKind::kWrongAnswer, "inputs modified",
        "Your kernel modified its input tensors, which are read-only; outputs must be written only to args->outputs."});
  }
  // A private copy first: candidate code still running in the runner (a host callback) could
  // rewrite the shared staging area between the comparison and the fingerprint.
  copy_parallel(s.staging(), outs_.layout.set_bytes, got);
  if (auto d = compare_set(got->data.get(), set)) return std::optional<Decision>(*d);
  return std::optional<Decision>();
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Result<Decision> Evaluation::run(const fs::path& object) {
  const auto load_start = Clock::now();
  const SetLayout in_layout = layout_of(ref_.input_tensors());
  KEVIN_ASSIGN_OR_RETURN(view_.inputs, map_readonly(ref_.inputs_file(), ref_.num_sets * in_layout.set_bytes));
  KEVIN_ASSIGN_OR_RETURN(view_.expected, map_readonly(ref_.expected_file(), ref_.num_sets * outs_.layout.set_bytes));
  KEVIN_ASSIGN_OR_RETURN(view_.input_hashes, input_set_hashes(ref_, view_.inputs, in_layout.set_bytes));

  RunnerSession::Start how{config_.runner_path, object, ref_.inputs_file(), outs_.layout.set_bytes, config_.device};
  KEVIN_ASSIGN_OR_RETURN(RunnerSession started, RunnerSession::start(how));
  session_.emplace(std::move(started));
  RunnerSession& session = *session_;
  Json inputs = Json::array(), outputs = Json::array();
  for (size_t i = 0; i < ref_.inputs.size(); ++i) {
    const auto& t = ref_.inputs[i].tensor;
    inputs.push_back({{"dtype", static_cast<int>(t.dtype)}, {"shape", t.shape}, {"offset", in_layout.offsets[i]}, {"bytes", t.bytes()}});
  }
  for (size_t i = 0; i < outs_.specs.size(); ++i) {
    const auto& t = outs_.specs[i];
    outputs.push_back({{"dtype", static_cast<int>(t.dtype)}, {"shape", t.shape}, {"offset", outs_.layout.offsets[i]}, {"bytes", t.bytes()}});
  }
  const Json init = {{"cmd", "init"},          {"backend", backend_name(config_.backend)},
                     {"object", "candidate.so"}, {"sets", ref_.num_sets},
                     {"set_bytes", in_layout.set_bytes}, {"output_bytes", outs_.layout.set_bytes},
                     {"scalars", ref_.scalars}, {"inputs", inputs}, {"outputs", outputs},
                     {"cpu_seconds", config_.cpu_seconds}, {"output_limit", config_.output_limit_bytes},
                     {"sandbox", config_.sandbox}};
  // The runner dlopens by path relative to its scratch working directory.
  Json init_cmd = init;
  init_cmd["object"] = "./candidate.so";
  auto ready_or = [&] {
    SharedDeviceLock shared(config_.gate);
    return session.request(init_cmd, sys::Deadline::after(config_.init_timeout));
  }();
  KEVIN_ASSIGN_OR_RETURN(auto ready, std::move(ready_or));
  if (ready.died || ready.timed_out) return from_lost_runner(ready, session.captured_output(), config_.init_timeout, "loading");
  if (!ready.body.value("ok", false)) {
    const std::string stage = ready.body.value("stage", "");
    const std::string error = ready.body.value("error", "unknown failure");
    if (stage == "harness") return internal_error("runner: " + error);
    return runtime_error(error, session.captured_output());
  }
  result_->device_name = ready.body.value("device", "");
  result_->sandbox_enforced = ready.body["sandbox"].value("enforced", std::vector<std::string>{});
  result_->sandbox_skipped = ready.body["sandbox"].value("skipped", std::vector<std::string>{});
  if (ready.body.value("input_hashes", std::vector<uint64_t>{}) != view_.input_hashes) {
    // Either a corrupted upload or candidate code (run at load time) forging the reply.
    return runtime_error("the process running the kernel reported inputs that differ from the ones sent", "");
  }

  result_->phases.load_ms = ms_since(load_start);

  // Correctness: every set once, then set 0 again under a different poison.
  const auto check_start = Clock::now();
  weights_seed_ = rng_();
  // Output buffers are reused across calls: first-touching gigabytes each time is not free.
  OutputCopy first, got;
  for (size_t k = 0; k < ref_.num_sets; ++k) {
    KEVIN_ASSIGN_OR_RETURN(auto bad, check_call(session, k, "the correctness check", k == 0 ? &first : &got));
    if (bad) return *bad;
    own_prints_.push_back(fingerprint_outputs(k == 0 ? first.data.get() : got.data.get(), outs_, weights_seed_));
  }
  KEVIN_ASSIGN_OR_RETURN(auto bad_again, check_call(session, 0, "the determinism check", &got));
  if (bad_again) return *bad_again;
  const uint8_t* again = got.data.get();
  for (size_t i = 0; i < outs_.specs.size(); ++i) {
    const auto& spec = outs_.specs[i];
    const uint64_t off = outs_.layout.offsets[i];
    const auto n = static_cast<uint64_t>(spec.numel());
    const CompareStats agree = compare_buffers(again + off, first.data.get() + off, spec.dtype, n,
                                               config_.tolerance.for_dtype(spec.dtype));
    if (!agree.ok()) {
      return Decision{VerdictKind::kWrongAnswer, "nondeterministic",
                      "Your kernel gave different results on two runs with the same inputs (" +
                          std::to_string(agree.mismatches) + " elements of output " + std::to_string(i) +
                          " differ): it depends on uninitialised memory, a race, or state kept between calls."};
    }
    const double d = l2_distance(again + off, first.data.get() + off, spec.dtype, n);
    nondeterminism_l2_ = std::sqrt(nondeterminism_l2_ * nondeterminism_l2_ + d * d);
  }
  result_->phases.check_ms = ms_since(check_start);
  const auto time_start = Clock::now();
  auto timed = time(session);
  result_->phases.time_ms = ms_since(time_start);
  return timed;
}

Result<Decision> Evaluation::time(RunnerSession& s) {
  std::vector<double> walls = call_wall_ms_;
  std::sort(walls.begin(), walls.end());
  const double per_call = std::max(0.001, walls[walls.size() / 2]);
  const int calls = std::clamp(static_cast<int>(config_.timing_budget_ms / per_call), config_.min_timed_calls,
                               config_.max_timed_calls);
  std::vector<size_t> order;
  while (order.size() < static_cast<size_t>(calls)) {
    std::vector<size_t> round(ref_.num_sets);
    std::iota(round.begin(), round.end(), 0);
    std::shuffle(round.begin(), round.end(), rng_);
    order.insert(order.end(), round.begin(), round.end());
  }
  order.resize(static_cast<size_t>(calls));
  // Generous for honest kernels, but bounded: a candidate that stalls holds the device alone.
  const double per_call_ms = std::min(3 * walls[walls.size() / 2] + 50, 10000.0);
  const auto limit = std::chrono::milliseconds(10000 + static_cast<int64_t>(
                         std::min((calls + config_.warmup_calls) * per_call_ms, 110000.0)));
  const Json cmd = {{"cmd", "time"}, {"warmup", config_.warmup_calls}, {"order", order},
                    {"poison", static_cast<uint32_t>(rng_())}, {"weights_seed", weights_seed_}};
  ExclusiveDeviceLock exclusive(config_.gate);
  const auto t0 = Clock::now();
  KEVIN_ASSIGN_OR_RETURN(auto reply, s.request(cmd, sys::Deadline::after(limit)));
  const double parent_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (reply.died || reply.timed_out) {
    return from_lost_runner(reply, s.captured_output(),
                            std::chrono::duration_cast<std::chrono::milliseconds>(limit), "timing");
  }
  const Json& b = reply.body;
  if (!b.value("ok", false)) return runtime_error(b.value("error", "unknown failure"), s.captured_output());
  if (b.value("nonzero_rc", 0) != 0) return runtime_error("kevin_forward returned non-zero during timing", s.captured_output());
  if (b.value("input_hashes", std::vector<uint64_t>{}) != view_.input_hashes) {
    return Decision{VerdictKind::kWrongAnswer, "inputs modified",
                    "Your kernel modified its input tensors during timed runs; inputs are read-only."};
  }
  const auto events = b.value("event_ms", std::vector<double>{});
  const auto walls_timed = b.value("wall_ms", std::vector<double>{});
  const auto prints = b.value("prints", std::vector<std::vector<double>>{});
  if (events.size() != order.size() || prints.size() != order.size() || walls_timed.size() != order.size()) {
    return runtime_error("the process running the kernel returned an incomplete timing record", s.captured_output());
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const Fingerprint& own = own_prints_[order[i]];
    // A ±1-weighted sum of an output difference d has spread ||d||₂, so the candidate's own
    // run-to-run noise (measured on set 0) bounds legitimate variation; the small relative
    // term covers double rounding of sums taken in different orders.
    const double bound = 8 * nondeterminism_l2_ + 1e-7 * own.abs + 1e-9;
    if (prints[i].size() != 3 || prints[i][2] != 0 || !(std::fabs(prints[i][0] - own.weighted) <= bound) ||
        !(std::fabs(prints[i][1] - own.abs) <= bound)) {
      KEVIN_LOG(debug) << "timed call " << i << " set " << order[i] << ": fingerprint " << (prints[i].empty() ? 0.0 : prints[i][0]) << " vs checked " << own.weighted << " (bound " << bound << ", nonfinite " << (prints[i].size() > 2 ? prints[i][2] : -1.0) << ")";
      return Decision{VerdictKind::kWrongAnswer, "timed output mismatch",
                      "Your kernel produced a different result in timed run " + std::to_string(i + 1) +
                          " than in the checked run on the same inputs (every timed output is verified; "
                          "results must not depend on call count, timing or state kept between calls)."};
    }
    if (events[i] < 0) return runtime_error("could not time a call (CUDA event error)", s.captured_output());
  }
  const TimingStats t = timing_stats(events);
  const TimingStats wall = timing_stats(walls_timed);
  double event_sum = 0;
  for (double e : events) event_sum += e;
  if (event_sum > parent_ms + 1.0) {
    return rejected({"timer_tampering", "the reported kernel times add up to more than the time the judge waited"});
  }
  if (config_.backend == Backend::kCuda && wall.median_ms > 1.3 * t.median_ms + 0.05) {
    return rejected({"off_stream_work",
                     "device-wide completion took " + fmt_f(wall.median_ms, 4) + " ms per call but the harness stream only " +
                         fmt_f(t.median_ms, 4) + " ms: all work must be enqueued on args->stream"});
  }
  result_->timing = t;
  result_->candidate_ms = t.median_ms;
  std::string feedback = "Your kernel is correct. It ran in " + fmt_g(t.median_ms, 4) + " ms (median of " +
                         std::to_string(t.calls) + " timed runs)";
  if (ref_.baseline && t.median_ms > 0) {
    result_->baseline_ms = ref_.baseline->median_ms;
    result_->speedup = ref_.baseline->median_ms / t.median_ms;
    feedback += " against " + fmt_g(ref_.baseline->median_ms, 4) + " ms for the PyTorch reference: a speedup of " +
                fmt_f(*result_->speedup, 2) + "x.";
    feedback += *result_->speedup < 1 ? " It is slower than the reference; look for a faster approach."
                                      : " See whether it can be made faster still.";
  } else {
    feedback += ".";
  }
  return Decision{VerdictKind::kCorrect, "", feedback};
}

}  // namespace

Json to_json(const EvalResult& r) {
  const auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(); };
  Json j = {{"verdict", verdict_name(r.verdict)},
            {"correct", r.correct()},
            {"reason", r.reason},
            {"feedback", r.feedback},
            {"candidate_ms", opt(r.candidate_ms)},
            {"baseline_ms", opt(r.baseline_ms)},
            {"speedup", opt(r.speedup)},
            {"compile_ms", r.compile_ms},
            {"cache_hit", r.cache_hit},
            {"max_abs_error", opt(r.max_abs_error)},
            {"max_rel_error", opt(r.max_rel_error)},
            {"device", r.device_name},
            {"total_ms", r.total_ms},
            {"phases_ms",
             {{"prepare", r.phases.prepare_ms}, {"load", r.phases.load_ms}, {"check", r.phases.check_ms},
              {"time", r.phases.time_ms}}},
            {"sandbox", {{"enforced", r.sandbox_enforced}, {"skipped", r.sandbox_skipped}}}};
  if (r.device_ordinal >= 0) j["device_ordinal"] = r.device_ordinal;
  if (r.timing) j["timing"] = to_json(*r.timing);
  if (r.baseline) j["baseline"] = to_json(*r.baseline);
  if (!r.mismatch.empty()) j["mismatch"] = r.mismatch;
  if (!r.runner_output.empty()) j["printed"] = r.runner_output;
  return j;
}

Result<EvalResult> Judge::evaluate(std::string_view source, const ReferenceSet& ref) const {
  const auto start = Clock::now();
  EvalResult result;
  if (config_.backend == Backend::kCuda) result.device_ordinal = config_.device;
  result.baseline = ref.baseline;
  if (ref.baseline) result.baseline_ms = ref.baseline->median_ms;
  const auto finish = [&](Decision d) {
    result.verdict = d.kind;
    result.reason = d.reason;
    result.feedback = d.feedback;
    result.total_ms = ms_since(start);
    if (d.kind != VerdictKind::kCorrect) result.speedup.reset();
    return result;
  };
  if (auto r = check_source(source, config_.backend)) return finish(rejected(*r));
  KEVIN_ASSIGN_OR_RETURN(BuildResult build, compiler_.build(source));
  result.compile_ms = build.compile_ms;
  result.cache_hit = build.cache_hit;
  if (!build.ok) {
    return finish({VerdictKind::kCompileError, "compilation failed",
                   "Your kernel failed to compile. Compiler output:\n" + build.log});
  }
  constexpr size_t kMaxObjectBytes = size_t{256} << 20;
  std::error_code size_error;
  if (std::filesystem::file_size(build.object, size_error) > kMaxObjectBytes && !size_error) {
    return finish(rejected({"static_storage_too_large", "the built kernel is larger than 256 MiB (large static data)"}));
  }
  KEVIN_ASSIGN_OR_RETURN(std::string image, read_file(build.object, kMaxObjectBytes));
  auto symbols = read_elf_symbols(image);
  if (!symbols.is_ok()) return finish(rejected({"import_not_allowed", "the built object is unreadable: " + symbols.status().message()}));
  if (auto r = check_symbols(*symbols, config_.backend, build.device_global_bytes)) return finish(rejected(*r));

  result.phases.prepare_ms = ms_since(start);
  Evaluation evaluation(config_, ref, &result);
  Result<Decision> decided = internal_error("not run");
  try {
    decided = evaluation.run(build.object);
  } catch (const std::exception& e) {
    // Only the runner's replies (which candidate code can forge) can make JSON access throw.
    decided = runtime_error(std::string("the process running the kernel sent a malformed reply (") + e.what() + ")", "");
  }
  KEVIN_ASSIGN_OR_RETURN(Decision d, std::move(decided));
  result.runner_output = evaluation.finish();
  return finish(std::move(d));
}

}  // namespace kevin::engine
