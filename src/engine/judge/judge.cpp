// judge.cpp — the correctness and timing protocols (docs/eval.md) and the judge's checks of
// everything the runner reports (docs/sandbox.md). The wording of rejections, build and
// run-time failures is in judge_feedback.cpp; the texts that report a measurement (a mismatch,
// nondeterminism, modified inputs, the timing summary) are written here, where it is taken.
#include <cstdint>
#include "engine/judge/judge.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <thread>
#include <variant>

#include "core/file.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/parallel.h"
#include "engine/judge/degenerate.h"
#include "engine/gates/elf.h"
#include "engine/gates/gate.h"
#include "engine/gates/hack_rules.h"
#include "engine/judge/judge_feedback.h"
#include "engine/runner/exit_codes.h"
#include "engine/runner/host_kernels.h"
#include "engine/run/runner_session.h"
#include "sys/fd.h"
#include "sys/gpu_memory.h"

namespace kevin::engine {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
// The decisions and their wording (judge_feedback.h).
using judge_feedback::build_outcome;
using judge_feedback::Decision;
using judge_feedback::fmt_f;
using judge_feedback::fmt_g;
using judge_feedback::from_lost_runner;
using judge_feedback::refused_answer;
using judge_feedback::rejected;
using judge_feedback::rejected_when_run;
using judge_feedback::rejected_when_timed;
using judge_feedback::runtime_error;
using judge_feedback::wrong_answer;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median_of(std::vector<double> v) { return timing_stats(std::move(v)).median_ms; }

// What the result and the feedback keep of what a candidate printed.
constexpr size_t kPrintedBytes = 2048;

// The judge's private copy of one output set.
struct OutputCopy {
  std::unique_ptr<uint8_t[]> data;
  uint64_t size = 0;
};

// Outputs can be gigabytes: the buffer is left uninitialised and filled on all cores.
void copy_parallel(const uint8_t* from, uint64_t bytes, OutputCopy* to) {
  if (to->size != bytes) {
    to->data.reset(new uint8_t[bytes]);
    to->size = bytes;
  }
  kevin::copy_parallel(from, bytes, to->data.get());
}

Result<sys::SharedMemory> map_readonly(const fs::path& file, uint64_t bytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found("cannot open " + file.string());
  return sys::SharedMemory::map_fd(fd, bytes, false);
}

// Hashes of each correctness input set, cached beside the reference data (they depend only on it).
Result<std::vector<uint64_t>> input_set_hashes(const ReferenceSet& ref,
                                               const sys::SharedMemory& inputs,
                                               uint64_t set_bytes) {
  // A cache that does not read back as one hash per set (damaged, or an older layout) is
  // computed again, never trusted or thrown on.
  const fs::path cache = ref.dir / "input_hashes.json";
  if (auto text = read_file(cache); text.is_ok()) {
    if (auto j = parse_json(*text); j.is_ok()) {
      auto cached = json_get<std::vector<uint64_t>>(*j, "input_hashes");
      if (cached.is_ok() && cached->size() == ref.num_sets) return cached;
    }
  }
  std::vector<uint64_t> hashes;
  for (size_t k = 0; k < ref.num_sets; ++k)
    hashes.push_back(runner::host_hash(inputs.data() + k * set_bytes, set_bytes));
  (void)write_file_atomic(cache, dump_json(Json{{"input_hashes", hashes}}));
  return hashes;
}

// The reference data one evaluation reads: correctness and timing sets, mapped read-only.
struct ReferenceView {
  SetLayout in, out;
  sys::SharedMemory inputs, expected, timing_inputs, timing_expected;
  std::vector<uint64_t> input_hashes;

  const uint8_t* expected_set(size_t k) const { return expected.data() + k * out.set_bytes; }
  std::span<const uint8_t> timing_set(size_t j) const {
    return {timing_inputs.data() + j * in.set_bytes, in.set_bytes};
  }
  const uint8_t* timing_expected_set(size_t j) const {
    return timing_expected.data() + j * out.set_bytes;
  }
};

Result<ReferenceView> map_reference(const ReferenceSet& ref) {
  ReferenceView v;
  v.in = layout_of(ref.input_tensors());
  v.out = layout_of(ref.outputs);
  if (ref.num_timing_sets == 0 || ref.timing_scalars.size() != ref.num_timing_sets) {
    return failed_precondition("reference data of " + ref.task_name + " has no timing sets");
  }
  KEVIN_ASSIGN_OR_RETURN(v.inputs, map_readonly(ref.inputs_file(), ref.num_sets * v.in.set_bytes));
  KEVIN_ASSIGN_OR_RETURN(v.expected,
                         map_readonly(ref.expected_file(), ref.num_sets * v.out.set_bytes));
  KEVIN_ASSIGN_OR_RETURN(v.timing_inputs, map_readonly(ref.timing_inputs_file(),
                                                       ref.num_timing_sets * v.in.set_bytes));
  KEVIN_ASSIGN_OR_RETURN(v.timing_expected, map_readonly(ref.timing_expected_file(),
                                                         ref.num_timing_sets * v.out.set_bytes));
  KEVIN_ASSIGN_OR_RETURN(v.input_hashes, input_set_hashes(ref, v.inputs, v.in.set_bytes));
  return v;
}

std::vector<runner_protocol::TensorPlacement> placements(const std::vector<TensorSpec>& specs,
                                                         const SetLayout& layout) {
  std::vector<runner_protocol::TensorPlacement> list;
  for (size_t i = 0; i < specs.size(); ++i) {
    list.push_back({static_cast<int32_t>(specs[i].dtype), specs[i].shape, layout.offsets[i],
                    specs[i].bytes()});
  }
  return list;
}

// Watches one runner's GPU memory from outside it (NVML) while candidate code may run, and
// kills the runner the moment it holds more than its cap: memory a candidate takes through
// allocation functions it found by itself would otherwise starve the evaluations beside it.
class MemoryWatch {
 public:
  MemoryWatch(pid_t runner, uint64_t cap)
      : runner_(runner), pids_(processes_of(runner)), cap_(cap), thread_([this] { watch(); }) {}
  ~MemoryWatch() {
    stop_.notify();
    thread_.join();
  }
  MemoryWatch(const MemoryWatch&) = delete;
  MemoryWatch& operator=(const MemoryWatch&) = delete;

  // What the runner held when it was killed for it.
  std::optional<uint64_t> exceeded() const {
    MutexLock lock(mu_);
    return exceeded_;
  }
  uint64_t cap() const { return cap_; }

  // The runner's processes: it, and its child in its own PID namespace.
  static std::vector<pid_t> processes_of(pid_t runner) {
    std::vector<pid_t> pids = sys::child_processes(runner);
    pids.push_back(runner);
    return pids;
  }

 private:
  void watch() {
    while (!stop_.wait_for(std::chrono::milliseconds(25))) {
      const auto used = sys::gpu_memory_of(pids_);
      if (used && *used > cap_) {
        MutexLock lock(mu_);
        exceeded_ = *used;
        ::kill(-runner_, SIGKILL);
        return;
      }
    }
  }

  const pid_t runner_;
  const std::vector<pid_t> pids_;
  const uint64_t cap_;
  Notification stop_;
  mutable Mutex mu_;
  std::optional<uint64_t> exceeded_ GUARDED_BY(mu_);
  std::thread thread_;
};

// The device gate as one step of an evaluation holds it: shared with other evaluations, or
// alone (`alone`: calibration, the timing phase, or an evaluation retried with the device to
// itself). The time spent waiting for it is added to phases->gate_wait_ms and, held alone, the
// time it was held to phases->alone_ms: where an evaluation waits, and what it costs every
// other evaluation of the device, are reported.
class GateHold {
 public:
  GateHold(DeviceGate* gate, bool alone, EvalResult::Phases* phases)
      : shared_(alone ? nullptr : gate),
        alone_(alone ? gate : nullptr),
        held_alone_(alone ? &phases->alone_ms : nullptr) {
    phases->gate_wait_ms += ms_since(asked_);
  }
  ~GateHold() {
    if (held_alone_) *held_alone_ += ms_since(held_);
  }
  GateHold(const GateHold&) = delete;
  GateHold& operator=(const GateHold&) = delete;
  // The device time (ms) other holders took during this hold so far (0 when held alone).
  double ms_taken_by_others() const { return shared_.ms_taken_by_others(); }

 private:
  // Initialised before the locks are taken (asked_) and after (held_): members initialise in
  // declaration order.
  Clock::time_point asked_ = Clock::now();
  SharedDeviceLock shared_;
  ExclusiveDeviceLock alone_;
  Clock::time_point held_ = Clock::now();
  double* held_alone_;
};

// One timed call as the runner and the judge saw it.
struct TimedCall {
  double event_ms;  // the runner's measurement (the candidate can rewrite it)
  double judge_ms;  // the judge's wall clock: command sent to reply read
  double work_ms;   // the judge's measure of the work in that exchange: its wall clock on the
                    // GPU; on the CPU the runner's CPU time by the kernel's accounting, which
                    // time spent waiting for a core (on a loaded machine) does not blur
};

// A timed call's outcome: its two times, or the candidate's fate.
using CallOutcome = std::variant<TimedCall, Decision>;

class Evaluation {
 public:
  // `pid_namespace_works` is shared by every evaluation of one judge: cleared (for good) the
  // first time the GPU cannot be used inside a runner's PID namespace.
  // `format` picks the runner (kevin-runner, or the Python runner for KernelBench answers).
  Evaluation(const EvalConfig& config, const RunnerFactory& start_runner, const ReferenceSet& ref,
             const EvalHooks& hooks, CandidateFormat format, bool exclusive,
             std::atomic<bool>* pid_namespace_works, EvalResult* result)
      : config_(config),
        format_(format),
        start_runner_(start_runner),
        ref_(ref),
        hooks_(hooks),
        exclusive_(exclusive),
        pid_namespace_works_(pid_namespace_works),
        result_(result),
        rng_(std::random_device{}()) {}

  // Starts the runner and sets it up (reference data mapped, inputs uploaded, the sandbox's
  // doors closed) before the candidate exists: called while the candidate builds on another
  // thread, so the two overlap, or by run() when not called before. Call it at most once, on
  // the thread that calls run() (the runner dies with the thread that spawned it). Errors:
  // the harness's; they are kept, and run() returns them too.
  Status ready();
  // Calibrates the ready runner (readying one first if ready() was not called), stages
  // `object` in it and loads it, runs correctness then timing; returns the final decision.
  // `failed_phase` names the phase a non-correct decision came from ("load", "check",
  // "time"). Errors: the harness's, ready()'s included.
  Result<Decision> run(const fs::path& object);
  const char* failed_phase() const { return phase_; }
  // The share of its time limit that other holders of the device took from the exchange the
  // runner did not answer in time (load or a correctness call); 0 when it had the device alone.
  double timeout_share_taken() const { return timeout_share_taken_; }
  // The object's writable data symbols (offsets from its load base): the runner resets those
  // that turn out to be device variables before every call.
  void set_data_symbols(std::vector<uint64_t> offsets) { data_symbols_ = std::move(offsets); }
  // A KernelBench answer's text and the names of the extensions its object holds (the
  // evaluation was made for CandidateFormat::kKernelBench).
  void set_kernelbench(std::string_view answer, std::vector<std::string> extensions) {
    answer_ = std::string(answer);
    extensions_ = std::move(extensions);
  }
  // What the candidate printed; then lets the runner exit (or kills it).
  std::string finish() {
    watch_.reset();
    if (!session_) return stopped_output_.value_or("");
    std::string printed = stopped_output_.value_or(session_->captured_output(kPrintedBytes));
    session_->finish();
    return printed;
  }

 private:
  Status start();
  Status start_on_a_healthy_device();
  Result<double> calibrate();
  // Stages `object` in the runner and loads it: the decision when loading fails.
  Result<std::optional<Decision>> load(const fs::path& object);
  Result<std::optional<Decision>> check_call(size_t set, const char* stage, OutputCopy* got);
  Result<std::optional<Decision>> check_correctness();
  // The timing phase's calls (with the device held alone), or the answer's fate there in
  // `decided`.
  Result<std::vector<TimedCall>> measure_times(std::optional<Decision>* decided);
  Result<Decision> time();
  // Ends the runner (the answer's, or a harness-only one), keeping what the answer printed.
  void stop_runner();
  // Stops the answer's runner and calibrates a fresh one; overhead_ms_ becomes the larger
  // measure. Errors: the fresh runner's failures (the harness's, not the answer's).
  Status recalibrate();
  // For a close or noisy comparison (noisy()): the baseline timed again once the answer's
  // runner is stopped, under the exclusive lock. A re-time slower than the cached baseline by
  // more than EvalConfig::baseline_drift is repeated (baseline_retimes in all); the fastest
  // within that bound is returned, nullopt when none is (the cached baseline then stands) or
  // no re-time was wanted. Errors: the hook's.
  Result<std::optional<TimingStats>> retime_baseline(const std::vector<TimedCall>& calls);
  // The clock allowance A (EvalConfig::clock_slack_ms).
  double clock_allowance() const;
  // Statistics of the time charged to each call: max(event time, the judge's time − overhead −
  // A), the event times being the candidate's to rewrite.
  TimingStats charged_stats(const std::vector<TimedCall>& calls) const;
  // The calls' median time beyond their event windows, their median window, and whether the
  // first exceeds max(4 A, half the second): work outside the window.
  struct WindowExcess {
    double median_ms, events_ms;
    bool refused;
  };
  WindowExcess window_excess(const std::vector<TimedCall>& calls) const;
  // One timed call on timing set `j` (or, with `warmup`, on correctness set `j`). A timing
  // set's output is copied out at once, and compared with the expected one later, by
  // check_timed_outputs() (with the device no longer held alone), while the copies waiting
  // stay within EvalConfig::unchecked_output_bytes; past that, at once.
  Result<CallOutcome> timed_call(size_t j, bool warmup, sys::Deadline phase_end);
  // Compares the timed outputs copied out and not yet compared, in the order they were made:
  // the first that differs from its set's expected output decides (a wrong answer).
  std::optional<Decision> check_timed_outputs();
  Result<std::vector<TimedCall>> timed_block(const std::vector<size_t>& sets,
                                             sys::Deadline phase_end,
                                             std::optional<Decision>* decided);
  std::optional<Decision> compare_set(const uint8_t* got, const uint8_t* want,
                                      const std::string& where);
  Decision judge_times(const std::vector<TimedCall>& calls,
                       std::optional<TimingStats> retimed_baseline);
  // An untimed exchange, within `limit`.
  Result<Runner::Reply> ask(const runner_protocol::Command& cmd, std::chrono::milliseconds limit);
  // A timed exchange on `set` (a timing set, or empty for a correctness set named in `cmd`):
  // the judge spins for the reply on the GPU and reads the runner's CPU time on the CPU
  // backend, where TimedCall::work_ms comes from.
  Result<Runner::Reply> ask_timed(const runner_protocol::Command& cmd,
                                  std::chrono::milliseconds limit, std::span<const uint8_t> set);
  // The judge's measure of the work in a timed exchange (TimedCall::work_ms). Call it after
  // the outputs have been copied out of the staging area.
  double work_ms(const Runner::Reply& reply);
  std::string printed() { return session_->captured_output(kPrintedBytes); }
  // A fresh poison word for the outputs of the call after the next command.
  uint32_t poison() { return static_cast<uint32_t>(rng_()); }
  // Starts watching the runner's GPU memory (CUDA, where NVML sees the runner).
  void watch_memory();
  // The decision for a call the runner answered with ok false: PyTorch computing (a
  // KernelBench answer's operator log) is `rejected`, anything else a runtime error.
  Decision failed_call(const runner_protocol::Failure& failure);
  // Notes what neighbours took from an exchange, held under `hold`, that went unanswered
  // within `limit` (timeout_share_taken).
  void note_unanswered(const GateHold& hold, std::chrono::milliseconds limit) {
    timeout_share_taken_ = hold.ms_taken_by_others() / static_cast<double>(limit.count());
  }
  // The decision for a runner that did not answer properly during `stage`.
  Decision lost(const Runner::Reply& reply, std::chrono::milliseconds limit, const char* stage);

  const EvalConfig& config_;
  const CandidateFormat format_;
  const RunnerFactory& start_runner_;
  const ReferenceSet& ref_;
  const EvalHooks& hooks_;
  const bool
      exclusive_;  // hold the device alone in every phase (a retry after a neighbour's fault)
  std::atomic<bool>* pid_namespace_works_;
  EvalResult* result_;
  std::mt19937_64 rng_;
  ReferenceView view_;
  std::vector<double> call_judge_ms_;  // correctness calls, the judge's clock
  // Timed outputs copied out and not yet compared: (timing set, its output).
  std::vector<std::pair<size_t, OutputCopy>> unchecked_;
  uint64_t unchecked_bytes_ = 0;
  double overhead_ms_ = 0;  // harness time per timed call, measured before loading
  double timeout_share_taken_ = 0;
  std::optional<Status> readied_;  // ready()'s outcome, once called
  // What the answer printed, kept when its runner was stopped before the end (stop_runner).
  std::optional<std::string> stopped_output_;
  std::vector<uint64_t> data_symbols_;
  bool kernelbench() const { return format_ == CandidateFormat::kKernelBench; }
  std::string answer_;                   // a KernelBench answer
  std::vector<std::string> extensions_;  // its extensions (none: kevin's ABI)
  const char* phase_ = "load";
  std::unique_ptr<Runner> session_;
  std::unique_ptr<MemoryWatch> watch_;  // stopped before the session ends (declared after it)
};

void Evaluation::watch_memory() {
  const pid_t runner = session_->pid();
  if (config_.backend != Backend::kCuda || runner < 0) return;
  // Right after setup, before any candidate code: what the harness itself holds.
  const auto base = sys::gpu_memory_of(MemoryWatch::processes_of(runner));
  if (!base) {
    KEVIN_LOG(debug) << "NVML does not list the runner; its GPU memory is not watched";
    return;
  }
  // A KernelBench answer allocates its outputs (and PyTorch caches what it frees): it may hold
  // a few output and input sets beyond the harness's slack.
  const uint64_t answer_allocations =
      kernelbench() ? 4 * view_.out.set_bytes + 2 * view_.in.set_bytes : 0;
  watch_ = std::make_unique<MemoryWatch>(
      runner, *base + config_.device_memory_slack_bytes + answer_allocations);
}

Decision Evaluation::failed_call(const runner_protocol::Failure& failure) {
  const std::string error = failure.error.empty() ? "unknown failure" : failure.error;
  constexpr std::string_view kComputed = "pytorch_compute: ";
  if (kernelbench() && error.rfind(kComputed, 0) == 0)
    return rejected_when_run({rules::kPytorchCompute, error.substr(kComputed.size())});
  return runtime_error(error, printed());
}

Decision Evaluation::lost(const Runner::Reply& reply, std::chrono::milliseconds limit,
                          const char* stage) {
  if (kernelbench() && reply.died && reply.exit.exited &&
      reply.exit.code == runner::kIntrospectionExit) {
    // The Python runner's audit hook ended it, and said why on its last line.
    std::string said = printed();
    const size_t at = said.rfind("kevin-runner: ");
    said = at == std::string::npos ? "it reached into the interpreter" : said.substr(at + 14);
    while (!said.empty() && said.back() == '\n') said.pop_back();
    return rejected_when_run({rules::kIntrospection, said});
  }
  if (watch_) {
    if (auto used = watch_->exceeded()) {
      const auto mib = [](uint64_t b) { return std::to_string(b >> 20) + " MiB"; };
      return runtime_error("it held " + mib(*used) + " of GPU memory during " + stage +
                               ", more than the " + mib(watch_->cap()) +
                               " the harness allows (kernels allocate no device memory; use "
                               "args->workspace)",
                           printed());
    }
  }
  return from_lost_runner(reply, printed(), limit, stage);
}

Result<Runner::Reply> Evaluation::ask(const runner_protocol::Command& cmd,
                                      std::chrono::milliseconds limit) {
  return session_->request(cmd, sys::Deadline::after(limit), false, false, {});
}

Result<Runner::Reply> Evaluation::ask_timed(const runner_protocol::Command& cmd,
                                            std::chrono::milliseconds limit,
                                            std::span<const uint8_t> set) {
  const bool gpu = config_.backend == Backend::kCuda;
  return session_->request(cmd, sys::Deadline::after(limit), gpu, !gpu, set);
}

double Evaluation::work_ms(const Runner::Reply& reply) {
  if (config_.backend == Backend::kCuda || !reply.cpu_before_ns) return reply.judge_ms;
  return session_->cpu_ms_since(*reply.cpu_before_ns, sys::Deadline::after(config_.call_timeout))
      .value_or(reply.judge_ms);
}

std::optional<Decision> Evaluation::compare_set(const uint8_t* got, const uint8_t* want,
                                                const std::string& where) {
  for (size_t i = 0; i < ref_.outputs.size(); ++i) {
    const auto& spec = ref_.outputs[i];
    const Tolerance tol = config_.tolerance.for_dtype(spec.dtype);
    const uint64_t off = view_.out.offsets[i];
    const CompareStats s = compare_buffers(got + off, want + off, spec.dtype,
                                           static_cast<uint64_t>(spec.numel()), tol);
    // Errors are only known where both sides are finite: an all-NaN output has none, not 0.
    if (s.finite > 0 || !is_floating(spec.dtype)) {
      result_->max_abs_error = std::max(result_->max_abs_error.value_or(0), s.max_abs_error);
      result_->max_rel_error = std::max(result_->max_rel_error.value_or(0), s.max_rel_error);
    }
    if (s.ok()) continue;
    std::string detail = "output " + std::to_string(i) + " (" + spec.type_string() +
                         ") differs from the reference in " + std::to_string(s.mismatches) +
                         " of " + std::to_string(s.count) + " elements";
    if (s.nonfinite > 0) detail += ", " + std::to_string(s.nonfinite) + " of them NaN/Inf";
    detail += s.finite == 0 && is_floating(spec.dtype)
                  ? "; no element of it is finite where the reference is"
                  : "; max abs error " + fmt_g(s.max_abs_error, 4) + ", max rel error " +
                        fmt_g(s.max_rel_error, 4) +
                        (s.nonfinite > 0 ? " (over its finite elements)" : "");
    detail += "; first mismatch at index " + multi_index(s.first_bad, spec.shape) + ": got " +
              fmt_g(s.first_got, 6) + ", expected " + fmt_g(s.first_expected, 6);
    detail += " (tolerance atol=" + fmt_g(tol.atol, 6) + ", rtol=" + fmt_g(tol.rtol, 6) + ")";
    result_->mismatch = where + ": " + detail;
    return wrong_answer(where == "correctness check" ? "output mismatch" : "timed output mismatch",
                        "Your kernel ran but its output is incorrect" +
                            (where == "correctness check" ? std::string() : " in " + where) + ": " +
                            detail + ".");
  }
  return std::nullopt;
}

Status Evaluation::start() {
  const bool pid_namespace = config_.pid_namespace && pid_namespace_works_->load();
  Runner::Start how;
  how.runner = config_.runner_path;
  how.inputs_file = ref_.inputs_file();
  how.staging_bytes = view_.out.set_bytes;
  how.slot_bytes = view_.in.set_bytes;
  how.device = config_.device;
  how.sandbox = config_.sandbox;
  how.pid_namespace = pid_namespace;
  if (kernelbench()) {
    how.python = config_.kernelbench->python;
    how.python_runner = config_.kernelbench->runner_script;
    how.support_library = config_.kernelbench->support_library;
  }
  KEVIN_ASSIGN_OR_RETURN(session_, start_runner_(how));
  runner_protocol::Setup setup;
  setup.backend = backend_name(config_.backend);
  setup.sets = ref_.num_sets;
  setup.set_bytes = view_.in.set_bytes;
  setup.output_bytes = view_.out.set_bytes;
  setup.scalars = ref_.scalars;
  setup.inputs = placements(ref_.input_tensors(), view_.in);
  setup.outputs = placements(ref_.outputs, view_.out);
  setup.cpu_seconds = config_.cpu_seconds;
  setup.output_limit = config_.output_limit_bytes;
  setup.next_poison = poison();
  if (kernelbench()) {
    setup.op_log_library = config_.kernelbench->op_log_library.string();
    setup.op_log_torch = config_.kernelbench->op_log_torch_version;
  }
  Runner::Reply ready;
  {
    const GateHold hold(config_.gate, exclusive_, &result_->phases);
    KEVIN_ASSIGN_OR_RETURN(ready, ask(setup, config_.init_timeout));
  }
  // No candidate code has run yet: whatever went wrong is the harness's (or the GPU's).
  if (!ready.answered()) {
    return unavailable("the runner failed to start (" + ready.exit.describe() +
                       "): " + session_->captured_output(kPrintedBytes));
  }
  if (const auto* failure = std::get_if<runner_protocol::Failure>(&ready.body)) {
    const std::string why = failure->error.empty() ? "unknown failure" : failure->error;
    if (pid_namespace && config_.backend == Backend::kCuda &&
        why.find("cuda") != std::string::npos && pid_namespace_works_->exchange(false)) {
      // Some GPU drivers refuse a process in a PID namespace of its own (seen as
      // cudaErrorOperatingSystem): the runner then goes without one, and says so.
      KEVIN_LOG(warn) << "the GPU cannot be used from a runner in its own PID namespace here ("
                      << why << "); runners go without one";
      return unavailable("the GPU refused a runner in a PID namespace: " + why);
    }
    if (failure->stage == "sandbox") {
      return failed_precondition(
          "the sandbox could not be applied: " + why +
          " (run as root or where user namespaces are allowed, or pass --no-sandbox)");
    }
    return unavailable("runner setup failed: " + why);
  }
  const auto& done = std::get<runner_protocol::SetupReply>(ready.body);
  if (done.input_hashes != view_.input_hashes) {
    return unavailable("the runner's copy of the input sets differs from the reference data");
  }
  result_->device_name = done.device;
  result_->sandbox_enforced = done.enforced;
  result_->sandbox_skipped = done.skipped;
  if (config_.sandbox && config_.pid_namespace && !pid_namespace) {
    result_->sandbox_skipped.push_back("pidns (the GPU driver does not work inside one here)");
  }
  return Status::ok();
}

Status Evaluation::start_on_a_healthy_device() {
  // No candidate code has run when start() fails: a GPU still busy tearing down a killed
  // runner's context, or short of memory for a moment, must not fail this candidate.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    Status started = start();
    if (started.is_ok() || started.code() != StatusCode::kUnavailable || attempt == kAttempts)
      return started;
    KEVIN_LOG(warn) << "runner start failed (attempt " << attempt << " of " << kAttempts
                    << "): " << started.message();
    session_.reset();
    std::this_thread::sleep_for(config_.restart_pause * (2 * attempt - 1));
  }
}

Result<double> Evaluation::calibrate() {
  // Harness-only timed calls before the candidate exists in the process: what a timed call
  // costs the judge's clock beyond the event window (fills, flush, uploads, copies,
  // messages). Measured as the timed calls run, with the device held alone: shared with other
  // evaluations' correctness runs and reference preparation it came out 2-11 ms on an H100
  // instead of about 1, and every call is charged only its time beyond this overhead (and a
  // quarter of it), so a kernel's work on another stream hid inside the excess.
  const GateHold hold(config_.gate, true, &result_->phases);
  std::vector<double> overhead;
  for (int i = 0; i < config_.calibration_calls; ++i) {
    const size_t j = static_cast<size_t>(i) % ref_.num_timing_sets;
    const runner_protocol::TimeCall cmd{std::nullopt, ref_.timing_scalars[j], poison()};
    KEVIN_ASSIGN_OR_RETURN(auto reply, ask_timed(cmd, config_.call_timeout, view_.timing_set(j)));
    if (!reply.answered())
      return unavailable("the runner failed while calibrating: " + reply.exit.describe());
    if (const auto* failure = std::get_if<runner_protocol::Failure>(&reply.body)) {
      return unavailable("the runner failed while calibrating: " +
                         (failure->error.empty() ? "unknown failure" : failure->error));
    }
    const auto& timed = std::get<runner_protocol::TimeCallReply>(reply.body);
    overhead.push_back(work_ms(reply) - timed.event_ms.value_or(0.0));
  }
  std::sort(overhead.begin(), overhead.end());
  return overhead[overhead.size() / 5];
}

Result<std::optional<Decision>> Evaluation::load(const fs::path& object) {
  // Placed only now: the runner was started and calibrated without it, perhaps before it
  // was built.
  KEVIN_RETURN_IF_ERROR(session_->stage(object, answer_));
  const GateHold hold(config_.gate, exclusive_, &result_->phases);
  runner_protocol::Load cmd;
  cmd.next_poison = poison();
  cmd.data_symbols = data_symbols_;
  if (kernelbench()) {
    for (const auto& a : ref_.inputs) cmd.args.push_back({a.tensor.name, arg_role_name(a.role)});
    cmd.extensions = extensions_;
    cmd.forward_args = ref_.forward_args;
    cmd.scalar_kinds = ref_.scalar_kinds;
    cmd.init_inputs = ref_.init_inputs;
  }
  KEVIN_ASSIGN_OR_RETURN(auto loaded, ask(cmd, config_.init_timeout));
  if (!loaded.answered()) {
    note_unanswered(hold, config_.init_timeout);
    return std::optional<Decision>(lost(loaded, config_.init_timeout, "loading"));
  }
  if (const auto* failure = std::get_if<runner_protocol::Failure>(&loaded.body)) {
    return std::optional<Decision>(
        runtime_error(failure->error.empty() ? "loading failed" : failure->error, printed()));
  }
  if (config_.sandbox) result_->sandbox_enforced.push_back("seccomp allowlist");
  if (kernelbench()) result_->sandbox_enforced.push_back("interpreter audit hook");
  return std::optional<Decision>();
}

Result<std::optional<Decision>> Evaluation::check_call(size_t set, const char* stage,
                                                       OutputCopy* got) {
  const runner_protocol::Call cmd{set, poison()};
  const GateHold hold(config_.gate, exclusive_, &result_->phases);
  KEVIN_ASSIGN_OR_RETURN(auto reply, ask(cmd, config_.call_timeout));
  if (!reply.answered()) {
    note_unanswered(hold, config_.call_timeout);
    return std::optional<Decision>(lost(reply, config_.call_timeout, stage));
  }
  if (const auto* failure = std::get_if<runner_protocol::Failure>(&reply.body))
    return std::optional<Decision>(failed_call(*failure));
  const auto& called = std::get<runner_protocol::CallReply>(reply.body);
  const int64_t rc = called.rc;
  if (rc != 0) {
    return std::optional<Decision>(runtime_error(
        "kevin_forward returned " + std::to_string(rc) + " (0 means success)", printed()));
  }
  call_judge_ms_.push_back(reply.judge_ms);
  if (called.input_hashes != view_.input_hashes) {
    return std::optional<Decision>(wrong_answer(
        "inputs modified",
        !kernelbench()
            ? "Your kernel modified its input tensors, which are read-only; outputs must be "
              "written "
              "only to args->outputs."
            : "Your answer modified its input tensors (or the model's parameters), which are "
              "read-only; return new tensors from forward instead."));
  }
  // A private copy first: the staging area is shared with the runner, which may still change it.
  copy_parallel(session_->staging(), view_.out.set_bytes, got);
  return std::optional<Decision>(
      compare_set(got->data.get(), view_.expected_set(set), "correctness check"));
}

Result<std::optional<Decision>> Evaluation::check_correctness() {
  // Every set once, then set 0 again under a different poison.
  OutputCopy first, got;
  for (size_t k = 0; k < ref_.num_sets; ++k) {
    KEVIN_ASSIGN_OR_RETURN(auto bad,
                           check_call(k, "the correctness check", k == 0 ? &first : &got));
    if (bad) return bad;
  }
  KEVIN_ASSIGN_OR_RETURN(auto bad_again, check_call(0, "the determinism check", &got));
  if (bad_again) return bad_again;
  for (size_t i = 0; i < ref_.outputs.size(); ++i) {
    const auto& spec = ref_.outputs[i];
    const uint64_t off = view_.out.offsets[i];
    const CompareStats agree = compare_buffers(got.data.get() + off, first.data.get() + off,
                                               spec.dtype, static_cast<uint64_t>(spec.numel()),
                                               config_.tolerance.for_dtype(spec.dtype));
    if (!agree.ok()) {
      return std::optional<Decision>(wrong_answer(
          "nondeterministic",
          "Your kernel gave different results on two runs with the same inputs (" +
              std::to_string(agree.mismatches) + " elements of output " + std::to_string(i) +
              " differ): it depends on uninitialised memory, a race, or state kept between "
              "calls."));
    }
  }
  return std::optional<Decision>();
}

Result<CallOutcome> Evaluation::timed_call(size_t j, bool warmup, sys::Deadline phase_end) {
  runner_protocol::TimeCall cmd;
  cmd.next_poison = poison();
  // The timing set enters the runner's reach only inside this call's exchange (request).
  std::span<const uint8_t> set;
  if (warmup) {
    cmd.set = j;
  } else {
    set = view_.timing_set(j);
    cmd.slot_scalars = ref_.timing_scalars[j];
  }
  // What is left of the phase, but at least a millisecond: the limit the call gets and is told of.
  const auto limit =
      std::max(std::chrono::milliseconds(1),
               std::min(config_.call_timeout, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  phase_end.at() - Clock::now())));
  KEVIN_ASSIGN_OR_RETURN(auto reply, ask_timed(cmd, limit, set));
  if (!reply.answered()) return CallOutcome(lost(reply, limit, "timing"));
  if (const auto* failure = std::get_if<runner_protocol::Failure>(&reply.body))
    return CallOutcome(failed_call(*failure));
  const auto& timed = std::get<runner_protocol::TimeCallReply>(reply.body);
  if (timed.rc != 0)
    return CallOutcome(runtime_error("kevin_forward returned non-zero during timing", printed()));
  const std::optional<double> event = timed.event_ms;
  if (!event || !std::isfinite(*event) || *event < 0) {
    return CallOutcome(runtime_error(
        "the process running the kernel returned a malformed timing record", printed()));
  }
  // The output is copied out before anything else: it must exist when the reply does.
  OutputCopy got;
  if (!warmup) copy_parallel(session_->staging(), view_.out.set_bytes, &got);
  const TimedCall call{*event, reply.judge_ms, work_ms(reply)};
  // Every timed output is compared in full with the expected output of its set: after the
  // phase, since comparing gigabytes on the host holds every other evaluation off an idle
  // device, unless the copies waiting would take too much memory.
  if (!warmup) {
    unchecked_bytes_ += got.size;
    unchecked_.emplace_back(j, std::move(got));
    if (unchecked_bytes_ > config_.unchecked_output_bytes) {
      if (auto bad = check_timed_outputs()) return CallOutcome(*bad);
    }
  }
  return CallOutcome(call);
}

std::optional<Decision> Evaluation::check_timed_outputs() {
  std::vector<std::pair<size_t, OutputCopy>> outputs = std::exchange(unchecked_, {});
  unchecked_bytes_ = 0;
  for (const auto& [set, got] : outputs) {
    if (auto bad = compare_set(got.data.get(), view_.timing_expected_set(set), "a timed run"))
      return bad;
  }
  return std::nullopt;
}

Result<std::vector<TimedCall>> Evaluation::timed_block(const std::vector<size_t>& sets,
                                                       sys::Deadline phase_end,
                                                       std::optional<Decision>* decided) {
  std::vector<TimedCall> calls;
  for (size_t j : sets) {
    KEVIN_ASSIGN_OR_RETURN(auto call, timed_call(j, false, phase_end));
    if (auto* d = std::get_if<Decision>(&call)) {
      *decided = *d;
      return calls;
    }
    calls.push_back(std::get<TimedCall>(call));
  }
  return calls;
}

// The speedup's 95 % interval from the two medians' intervals: the slowest baseline over the
// slowest candidate and the fastest over the fastest (each bound holds with the others' at
// 95 %, so the pair is conservative). A baseline cached without its interval counts as exact.
std::pair<double, double> speedup_interval(const TimingStats& baseline,
                                           const TimingStats& candidate) {
  const double base_lo = baseline.has_interval() ? baseline.median_lo_ms : baseline.median_ms;
  const double base_hi = baseline.has_interval() ? baseline.median_hi_ms : baseline.median_ms;
  return {base_lo / candidate.median_hi_ms, base_hi / std::max(candidate.median_lo_ms, 1e-9)};
}

// Whether the comparison with the cached baseline is close or shaky enough to re-time the
// baseline once the candidate is gone, rather than trust a baseline measured earlier.
// Re-timing costs a baseline run, so it is spent where the machine's state could change the
// answer: a close comparison, or a spread-out one within 2x either way. Far from 1x, a spread
// of 1.5x in the candidate's times cannot change which side is faster.
bool noisy(const TimingStats& candidate, const std::optional<TimingStats>& baseline) {
  if (!baseline || candidate.median_ms <= 0) return false;
  const double speedup = baseline->median_ms / candidate.median_ms;
  const bool close_call = speedup > 0.8 && speedup < 1.25;
  const bool shaky = candidate.p90_ms > 1.5 * candidate.median_ms && speedup > 0.5 && speedup < 2;
  return close_call || shaky;
}

Result<std::vector<TimedCall>> Evaluation::measure_times(std::optional<Decision>* decided) {
  const double per_call = std::max(0.001, median_of(call_judge_ms_) - overhead_ms_);
  const int by_budget = std::clamp(static_cast<int>(config_.timing_budget_ms / per_call),
                                   config_.min_timed_calls, config_.max_timed_calls);
  const size_t calls = std::min(ref_.num_timing_sets, static_cast<size_t>(by_budget));
  std::vector<size_t> order(ref_.num_timing_sets);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng_);
  order.resize(calls);

  const GateHold alone(config_.gate, true, &result_->phases);
  const auto phase_end = sys::Deadline::after(config_.timing_phase_limit);
  for (int w = 0; w < config_.warmup_calls; ++w) {
    KEVIN_ASSIGN_OR_RETURN(auto call,
                           timed_call(static_cast<size_t>(w) % ref_.num_sets, true, phase_end));
    if (auto* d = std::get_if<Decision>(&call)) {
      *decided = *d;
      return std::vector<TimedCall>{};
    }
  }
  // Rounds of calls: half of them first (with an interval target, the minimum), then the rest
  // (with a target, a minimum at a time until the median's interval is tight enough). The
  // judge's own work per call (uploads, copies, full comparisons) grows with the data: the
  // rounds stop once the phase would outgrow its budget, keeping at least the minimum.
  const bool adaptive = config_.timing_ci > 0;
  const auto minimum = static_cast<size_t>(std::max(1, config_.min_timed_calls));
  const auto rounds_start = Clock::now();
  std::vector<TimedCall> timed;
  size_t next = 0, limit = calls;
  size_t round = adaptive ? std::min(calls, minimum) : (calls + 1) / 2;
  while (next < limit) {
    const size_t end = std::min(limit, next + round);
    const std::vector<size_t> sets(order.begin() + static_cast<long>(next),
                                   order.begin() + static_cast<long>(end));
    KEVIN_ASSIGN_OR_RETURN(std::vector<TimedCall> more, timed_block(sets, phase_end, decided));
    timed.insert(timed.end(), more.begin(), more.end());
    if (*decided) return timed;
    next = end;
    const double per_exchange =
        ms_since(rounds_start) / static_cast<double>(std::max<size_t>(1, timed.size()));
    const auto affordable = static_cast<size_t>(
        std::max(static_cast<double>(minimum),
                 config_.timing_phase_budget_ms / std::max(per_exchange, 1e-3)));
    limit = std::min(limit, std::max(affordable, next));
    if (adaptive && timed.size() >= minimum &&
        charged_stats(timed).relative_half_width() <= config_.timing_ci)
      break;
    round = adaptive ? minimum : limit - next;
  }
  return timed;
}

Result<Decision> Evaluation::time() {
  std::optional<Decision> decided;
  KEVIN_ASSIGN_OR_RETURN(std::vector<TimedCall> calls, measure_times(&decided));
  // Outputs made before whatever ended the phase come first: a wrong one decides.
  if (auto bad = check_timed_outputs()) return *bad;
  if (decided) return *decided;
  // The overhead was calibrated before the answer loaded, under that moment's load; a machine
  // busier since (a neighbour's compile) makes an honest answer's calls look longer than their
  // windows. Before refusing the answer for that, the overhead is measured again, now, where
  // the answer cannot touch it (recalibrate), and the larger of the two is the harness's.
  if (window_excess(calls).refused) KEVIN_RETURN_IF_ERROR(recalibrate());
  KEVIN_ASSIGN_OR_RETURN(std::optional<TimingStats> retimed, retime_baseline(calls));
  return judge_times(calls, retimed);
}

void Evaluation::stop_runner() {
  if (!session_) return;
  watch_.reset();
  // What the answer printed is kept from its own runner, not from a later harness-only one.
  if (!stopped_output_) stopped_output_ = session_->captured_output(kPrintedBytes);
  session_->finish();
  session_.reset();
}

Status Evaluation::recalibrate() {
  // None of the answer's code runs while a fresh runner, which never loads it, times the
  // harness alone.
  stop_runner();
  KEVIN_RETURN_IF_ERROR(start_on_a_healthy_device());
  KEVIN_ASSIGN_OR_RETURN(const double now, calibrate());
  result_->recalibrated_overhead_ms = now;
  overhead_ms_ = std::max(overhead_ms_, now);
  return Status::ok();
}

Result<std::optional<TimingStats>> Evaluation::retime_baseline(
    const std::vector<TimedCall>& calls) {
  std::vector<double> events;
  for (const TimedCall& c : calls) events.push_back(c.event_ms);
  if (!hooks_.retime_baseline || !noisy(timing_stats(events), ref_.baseline))
    return std::optional<TimingStats>();
  // The candidate's runner, and any GPU work it left behind, are gone before the baseline is
  // timed; the device is held alone for its calls (other runners on it are stopped by the
  // hook's timer), and shared while the hook builds the sets.
  stop_runner();
  const double ceiling = ref_.baseline->median_ms * (1 + config_.baseline_drift);
  std::optional<TimingStats> fastest;
  for (int attempt = 0; attempt < config_.baseline_retimes; ++attempt) {
    std::optional<GateHold> hold;
    const TwoStepHold steps{[&] { hold.emplace(config_.gate, false, &result_->phases); },
                            [&] {
                              hold.reset();
                              hold.emplace(config_.gate, true, &result_->phases);
                            }};
    KEVIN_ASSIGN_OR_RETURN(TimingStats b, hooks_.retime_baseline(steps));
    if (!fastest || b.median_ms < fastest->median_ms) fastest = b;
    if (fastest->median_ms <= ceiling) return fastest;
  }
  // Every re-time came out far slower than the cached baseline: noise (or a machine made
  // busy on purpose), never a reason for a larger speedup.
  result_->baseline_retimes_refused = config_.baseline_retimes;
  return std::optional<TimingStats>();
}

TimingStats Evaluation::charged_stats(const std::vector<TimedCall>& calls) const {
  const double allowance = clock_allowance();
  std::vector<double> charged;
  for (const TimedCall& c : calls)
    charged.push_back(std::max(c.event_ms, c.work_ms - overhead_ms_ - allowance));
  return timing_stats(std::move(charged));
}

double Evaluation::clock_allowance() const {
  // The judge's clock resolves no better than the spread of the harness's own work per
  // call (uploads, copies, flushes): allow that much before charging or rejecting.
  return std::max(config_.clock_slack_ms, 0.25 * overhead_ms_);
}

Evaluation::WindowExcess Evaluation::window_excess(const std::vector<TimedCall>& calls) const {
  std::vector<double> unaccounted, events;
  for (const TimedCall& c : calls) {
    unaccounted.push_back(c.work_ms - overhead_ms_ - c.event_ms);
    events.push_back(c.event_ms);
  }
  WindowExcess w{median_of(unaccounted), median_of(events), false};
  w.refused = !calls.empty() && w.median_ms > std::max(4 * clock_allowance(), 0.5 * w.events_ms);
  return w;
}

Decision Evaluation::judge_times(const std::vector<TimedCall>& calls,
                                 std::optional<TimingStats> retimed_baseline) {
  // The runner's event times are the candidate's to rewrite. The judge's own clock bounds each
  // from above (an event window cannot outlast the exchange around it) and from below: what
  // the judge waited beyond the harness's calibrated overhead was spent by the candidate
  // somewhere — on other streams, after the window, in the harness's own code paths — and is
  // charged to it.
  for (size_t i = 0; i < calls.size(); ++i) {
    const TimedCall& c = calls[i];
    if (c.event_ms > c.judge_ms + 0.05) {
      return rejected_when_timed(
          {rules::kTimerTampering, "timed run " + std::to_string(i + 1) + " reported " +
                                       fmt_g(c.event_ms, 4) + " ms, longer than the " +
                                       fmt_g(c.judge_ms, 4) + " ms the judge waited for it"});
    }
  }
  const TimingStats t = charged_stats(calls);
  const WindowExcess excess = window_excess(calls);
  result_->harness_overhead_ms = overhead_ms_;
  result_->unaccounted_ms = excess.median_ms;
  if (excess.refused) {
    return rejected_when_timed(
        {rules::kOffStreamWork,
         "each timed run took the judge " + fmt_f(excess.median_ms, 4) +
             " ms longer than the harness's overhead plus the " + fmt_f(excess.events_ms, 4) +
             " ms measured on the harness stream: all work must be enqueued on args->stream "
             "and finish inside the call"});
  }
  result_->timing = t;
  result_->candidate_ms = t.median_ms;
  std::string feedback = "Your kernel is correct. It ran in " + fmt_g(t.median_ms, 4) +
                         " ms (median of " + std::to_string(t.calls) +
                         " timed runs, each on inputs it had not seen)";
  const std::optional<TimingStats> baseline = retimed_baseline ? retimed_baseline : ref_.baseline;
  if (baseline && t.median_ms > 0) {
    result_->baseline = baseline;
    result_->baseline_source = retimed_baseline ? "retimed" : "cached";
    result_->baseline_ms = baseline->median_ms;
    result_->speedup = baseline->median_ms / t.median_ms;
    result_->speedup_ci = speedup_interval(*baseline, t);
    const std::string low = fmt_f(result_->speedup_ci->first, 2),
                      high = fmt_f(result_->speedup_ci->second, 2);
    // The interval is worth a model's attention only where it is wider than the rounding.
    const std::string interval = low == high ? "" : " (95% interval " + low + "-" + high + "x)";
    const bool compiled = ref_.baseline_kind == BaselineKind::kCompile;
    feedback += " against " + fmt_g(baseline->median_ms, 4) + " ms for the PyTorch reference" +
                (compiled ? " under torch.compile" : "") + ": a speedup of " +
                fmt_f(*result_->speedup, 2) + "x" + interval;
    if (ref_.eager_baseline && ref_.eager_baseline->median_ms > 0) {
      result_->speedup_vs_eager = ref_.eager_baseline->median_ms / t.median_ms;
      feedback += " (" + fmt_f(*result_->speedup_vs_eager, 2) + "x against eager PyTorch's " +
                  fmt_g(ref_.eager_baseline->median_ms, 4) + " ms)";
    }
    feedback += ".";
    feedback += *result_->speedup < 1
                    ? " It is slower than the reference; look for a faster approach."
                    : " See whether it can be made faster still.";
  } else {
    feedback += ".";
  }
  if (ref_.work && ref_.peaks) {
    result_->speed_of_light =
        speed_of_light(*ref_.work, *ref_.peaks, t.median_ms,
                       baseline ? std::optional(baseline->median_ms) : std::nullopt);
    if (result_->speed_of_light)
      feedback += " " + judge_feedback::speed_of_light_sentence(*result_->speed_of_light);
  }
  return Decision{VerdictKind::kCorrect, "", feedback};
}

Status Evaluation::ready() {
  const auto start = Clock::now();
  readied_ = [this]() -> Status {
    KEVIN_ASSIGN_OR_RETURN(view_, map_reference(ref_));
    return start_on_a_healthy_device();
  }();
  result_->phases.start_ms = ms_since(start);
  return *readied_;
}

Result<Decision> Evaluation::run(const fs::path& object) {
  KEVIN_RETURN_IF_ERROR(readied_ ? *readied_ : ready());
  const auto load_start = Clock::now();
  KEVIN_ASSIGN_OR_RETURN(overhead_ms_, calibrate());
  watch_memory();
  KEVIN_ASSIGN_OR_RETURN(auto load_failed, load(object));
  result_->phases.load_ms = ms_since(load_start);
  if (load_failed) return *load_failed;

  phase_ = "check";
  const auto check_start = Clock::now();
  KEVIN_ASSIGN_OR_RETURN(auto wrong, check_correctness());
  result_->phases.check_ms = ms_since(check_start);
  if (wrong) return *wrong;

  phase_ = "time";
  const auto time_start = Clock::now();
  auto timed = time();
  result_->phases.time_ms = ms_since(time_start);
  return timed;
}

// A failure another candidate sharing the GPU could have caused (it took the memory, or the
// time): worth one more try with the GPU held alone. Memory is held by any runner alive, so an
// out-of-memory error is always retried. Time is taken only by holders during the exchange that
// ran out of it: a retry holds the device alone for up to another time limit, with every other
// evaluation waiting, so it is owed only when neighbours took a tenth of the limit or more (a
// call that needs over 90 % of its limit alone is a timeout all the same).
bool neighbour_could_cause(const Decision& d, const Evaluation& evaluation) {
  constexpr double kShareOwedARetry = 0.1;
  if (std::string_view(evaluation.failed_phase()) == "time")
    return false;  // timing already holds the GPU alone
  if (d.kind == VerdictKind::kTimeout) return evaluation.timeout_share_taken() >= kShareOwedARetry;
  return d.kind == VerdictKind::kRuntimeError &&
         (d.reason.find("out of memory") != std::string::npos ||
          d.reason.find("OutOfMemory") != std::string::npos ||
          d.reason.find("MemoryAllocation") != std::string::npos);
}

}  // namespace

Judge::Judge(const CompileDriver& compiler, EvalConfig config)
    : Judge([&compiler](std::string_view source) { return compiler.build(source); },
            [](const Runner::Start& how) -> Result<std::unique_ptr<Runner>> {
              KEVIN_ASSIGN_OR_RETURN(RunnerSession session, RunnerSession::start(how));
              return std::unique_ptr<Runner>(std::make_unique<RunnerSession>(std::move(session)));
            },
            std::move(config)) {}

Result<std::vector<std::string>> Judge::degeneracy(const ReferenceSet& ref) const {
  const std::string key = ref.dir.string();
  {
    MutexLock lock(mu_);
    if (auto it = degeneracy_.find(key); it != degeneracy_.end()) return it->second;
  }
  KEVIN_ASSIGN_OR_RETURN(auto reasons, degenerate_outputs(ref, config_.tolerance));
  MutexLock lock(mu_);
  degeneracy_[key] = reasons;
  return reasons;
}

struct Judge::Prepared {
  std::optional<Decision> decided;  // set: the candidate ends here (rejected, compile error)
  BuildResult build;
  std::vector<uint64_t> data_symbols;
  std::vector<std::string> extensions;  // a KernelBench answer's extensions' names
};

Result<Judge::Prepared> Judge::prepare_kevin(std::string_view source, EvalResult* result,
                                             const std::function<void()>& before_build) const {
  Prepared p;
  if (auto r = check_source(source, config_.backend)) {
    p.decided = rejected(*r);
    return p;
  }
  before_build();
  KEVIN_ASSIGN_OR_RETURN(p.build, build_(source));
  p.decided = build_outcome(p.build, result);
  if (p.decided) return p;
  KEVIN_ASSIGN_OR_RETURN(std::string image, read_file(p.build.object, size_t{256} << 20));
  KEVIN_ASSIGN_OR_RETURN(ElfObject elf, read_elf_object(image));
  p.data_symbols = elf.writable_data_objects;
  return p;
}

Result<Judge::Prepared> Judge::prepare_kernelbench(
    std::string_view source, const ReferenceSet& ref, EvalResult* result,
    const std::function<void()>& before_build) const {
  if (!config_.kernelbench) {
    return failed_precondition(
        "this is a KernelBench answer (class ModelNew), and this evaluator judges kevin's ABI "
        "only: pass --format kernelbench or --format auto");
  }
  if (!ref.init_inputs.is_array()) {
    return failed_precondition("task " + ref.task_name +
                               ": get_init_inputs() returns values that are not JSON "
                               "(tensors?), so ModelNew cannot be built from it");
  }
  const KernelBenchSupport& kb = *config_.kernelbench;
  Prepared p;
  KEVIN_ASSIGN_OR_RETURN(AnswerCheck check, kb.check(source));
  if (!check.findings.empty()) {
    p.decided = refused_answer(check.findings);
    return p;
  }
  if (check.extensions.empty() || check.extensions.size() > kMaxExtensions) {
    p.decided = rejected({rules::kExtensionCount, "an answer builds 1 to " +
                                                      std::to_string(kMaxExtensions) +
                                                      " load_inline extensions; this one builds " +
                                                      std::to_string(check.extensions.size())});
    return p;
  }
  std::vector<ExtensionUnits> extensions;
  for (const ExtensionSpec& ext : check.extensions) {
    if (config_.backend == Backend::kCpu && !ext.cuda_sources.empty()) {
      p.decided = Decision{VerdictKind::kCompileError, "cuda sources on the cpu backend",
                           "Your answer has cuda_sources, and this evaluation runs on the CPU: "
                           "only cpp_sources are built."};
      return p;
    }
    ExtensionUnits units = extension_units(ext);
    for (const std::string* unit : {&units.host, &units.device}) {
      if (unit->empty()) continue;
      if (auto r = check_source(*unit, config_.backend, Profile::kTorchExtension)) {
        p.decided = rejected(*r);
        return p;
      }
    }
    p.extensions.push_back(ext.name);
    extensions.push_back(std::move(units));
  }
  before_build();
  KEVIN_ASSIGN_OR_RETURN(p.build, kb.build(extensions));
  p.decided = build_outcome(p.build, result);
  return p;
}

Result<EvalResult> Judge::evaluate(std::string_view source, const ReferenceSet& ref,
                                   const EvalHooks& hooks, CandidateFormat format) const {
  const auto start = Clock::now();
  EvalResult result;
  if (config_.backend == Backend::kCuda) result.device_ordinal = config_.device;
  result.baseline = ref.baseline;
  if (ref.baseline) result.baseline_ms = ref.baseline->median_ms;
  result.baseline_kind = ref.baseline_kind;
  if (ref.eager_baseline) result.eager_baseline_ms = ref.eager_baseline->median_ms;
  const auto finish = [&](const Decision& d) {
    result.verdict = d.kind;
    result.reason = d.reason;
    result.feedback = d.feedback;
    result.total_ms = ms_since(start);
    if (d.kind != VerdictKind::kCorrect) {
      result.speedup.reset();
      result.speedup_vs_eager.reset();
    }
    return result;
  };
  KEVIN_ASSIGN_OR_RETURN(auto degenerate, degeneracy(ref));
  if (!degenerate.empty() && !config_.allow_degenerate_tasks) {
    std::string why;
    for (const auto& d : degenerate) why += (why.empty() ? "" : "; ") + d;
    return failed_precondition(
        "task " + ref.task_name + " is degenerate on its reference data (" + why + ", tolerance " +
        config_.tolerance.describe() +
        "): a kernel could pass without doing the work, so it is not evaluated. Fix the task "
        "(docs/tasks.md) or pass --allow-degenerate-tasks");
  }
  // The first attempt's runner starts once the candidate is known to need one (it passed the
  // text gate) and readies itself while the candidate builds: a runner start, its CUDA context
  // and the input upload overlap the compiler instead of following it. It is used by this
  // candidate only, and finished unused when the build decides the candidate's fate. The
  // build, not the runner, goes to another thread: a runner dies with the thread that spawned
  // it (PR_SET_PDEATHSIG), and this one outlives the evaluation.
  std::optional<Evaluation> attempt;
  const auto new_attempt = [&](bool exclusive) {
    attempt.emplace(config_, start_runner_, ref, hooks, format, exclusive, &pid_namespace_works_,
                    &result);
  };
  new_attempt(false);
  const auto prepare = [&](const std::function<void()>& before_build) {
    auto prepared = format == CandidateFormat::kKernelBench
                        ? prepare_kernelbench(source, ref, &result, before_build)
                        : prepare_kevin(source, &result, before_build);
    result.phases.prepare_ms = ms_since(start);
    return prepared;
  };
  Result<Prepared> prepared = internal_error("not prepared");
  if (config_.start_runner_ahead) {
    std::promise<bool> building;  // true: the build begins; false: prepare ended without one
    std::future<bool> builds = building.get_future();
    auto prepare_elsewhere = std::async(std::launch::async, [&] {
      bool told = false;
      auto p = prepare([&] {
        told = true;
        building.set_value(true);
      });
      if (!told) building.set_value(false);
      return p;
    });
    // Its failure is ready()'s to keep: run() returns it once the build is done.
    if (builds.get()) (void)attempt->ready();
    prepared = prepare_elsewhere.get();
  } else {
    prepared = prepare([] {});
  }
  if (!prepared.is_ok() || prepared->decided) attempt->finish();  // no candidate code ran in it
  KEVIN_RETURN_IF_ERROR(prepared.status());
  if (prepared->decided) return finish(*prepared->decided);

  Result<Decision> decided = internal_error("not run");
  for (bool exclusive : {false, true}) {
    if (exclusive) new_attempt(true);
    Evaluation& evaluation = *attempt;
    evaluation.set_data_symbols(prepared->data_symbols);
    if (format == CandidateFormat::kKernelBench)
      evaluation.set_kernelbench(source, prepared->extensions);
    decided = evaluation.run(prepared->build.object);
    result.runner_output = evaluation.finish();
    if (!decided.is_ok() || exclusive || config_.gate == nullptr ||
        !neighbour_could_cause(*decided, evaluation)) {
      break;
    }
    KEVIN_LOG(info) << "retrying an evaluation with the GPU held alone after: " << decided->reason;
    result.max_abs_error.reset();
    result.max_rel_error.reset();
    result.mismatch.clear();
  }
  KEVIN_ASSIGN_OR_RETURN(Decision d, std::move(decided));
  return finish(d);
}

}  // namespace kevin::engine
