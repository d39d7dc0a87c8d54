// runner_main.cpp — the candidate runner: a small process (no libtorch) that loads one
// untrusted candidate and runs it on the judge's command, over a framed JSON channel.
// Descriptors (set up by the judge): 3 commands in, 4 replies out, 5 the correctness input
// sets (read-only), 6 output staging and 7 the timing-set slot (shared memfds); 1 and 2 go to
// a size-limited capture file. Expected outputs never enter this process, and the judge
// believes nothing it reports once the candidate is loaded (docs/sandbox.md): replies before
// `load` are the harness's, replies after it may be the candidate's.
#include <cstdint>
#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cfenv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/json.h"
#include "engine/abi/kevin_abi.h"
#include "engine/harness_math.h"
#include "engine/runner/device.h"
#include "engine/runner/protocol.h"
#include "engine/runner/sandbox.h"
#include "engine/runner/static_guard.h"
#include "sys/fd.h"

namespace kevin::runner {
namespace {
namespace proto = runner_protocol;

constexpr int kCommandFd = 3, kReplyFd = 4, kInputsFd = 5, kStagingFd = 6, kSlotFd = 7;
// After a timed call the next command follows within microseconds: wait for it spinning,
// so the judge's clock does not also measure this process waking up.
constexpr auto kSpinAfterTimedCall = std::chrono::milliseconds(20);
constexpr const char* kObject = "candidate.so";
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
using Forward = int (*)(const kevin_args*);
using Clock = std::chrono::steady_clock;

struct TensorSlot {
  int32_t dtype;
  std::vector<int64_t> shape, strides;            // the harness's own copy
  std::vector<int64_t> view_shape, view_strides;  // what the candidate sees (it could write them)
  uint64_t offset, bytes;
};

std::vector<TensorSlot> slots_of(const std::vector<proto::TensorPlacement>& placements) {
  std::vector<TensorSlot> slots;
  for (const auto& t : placements) {
    TensorSlot s{t.dtype, t.shape, {}, {}, {}, t.offset, t.bytes};
    s.strides.assign(s.shape.size(), 1);
    for (size_t d = s.shape.size(); d-- > 1;) s.strides[d - 1] = s.strides[d] * s.shape[d];
    s.view_shape = s.shape;
    s.view_strides = s.strides;
    slots.push_back(std::move(s));
  }
  return slots;
}

uint32_t workspace_poison(uint32_t seed) { return harness::poison_word(0, seed ^ 0x5bd1e995u); }

// Maps `fd` and closes it: with the descriptor gone, the candidate cannot map the same
// (writable, shared) pages a second time, e.g. executable.
Result<uint8_t*> map_and_close(int fd, uint64_t bytes, bool writable) {
  const size_t length = bytes == 0 ? 1 : bytes;
  void* p = ::mmap(nullptr, length, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    return io_error("cannot map descriptor " + std::to_string(fd) + ": " + std::strerror(errno));
  return static_cast<uint8_t*>(p);
}

class Runner {
 public:
  Runner(bool sandbox, SandboxReport report, Status startup)
      : sandbox_(sandbox), report_(std::move(report)), startup_(std::move(startup)) {}

  // Each command's work; a failure the candidate or the device caused is a Failure reply,
  // an error Status is the harness's (sent as a Failure of stage "harness").
  Status setup(const proto::Setup& cmd, proto::Reply* reply);
  Status load(const proto::Load& cmd, proto::Reply* reply);
  Status call(const proto::Call& cmd, proto::Reply* reply);
  Status time_call(const proto::TimeCall& cmd, proto::Reply* reply);
  // After a call's reply is sent: puts back everything the candidate could have left behind
  // (its static storage and device-side globals, the stack below the serving loop, freed heap
  // pages, the floating-point environment) and poisons the outputs and workspace for the
  // next call with `next_poison`. Done outside the exchange the judge times, whose harness
  // overhead is calibrated with calls that leave nothing to clean.
  Status reset_after_call(uint32_t next_poison);
  // Whether to wait for the next command spinning after a timed call: on the GPU the judge
  // times the exchange with its wall clock, and a sleeping runner would add its wake-up; on
  // the CPU it counts this process's CPU time, which spinning would add to.
  bool spins() const { return cuda_; }

 private:
  // Loads the shared libraries a candidate object may need, before the root is emptied.
  Status load_candidate_libraries();
  // Fills the outputs and the workspace with poison derived from `next_poison`.
  Status poison_for_next_call(uint32_t next_poison);
  // One invocation of the candidate (or, before it is loaded, of nothing: calibration) on
  // argument set `index` with fresh argument structures; outputs were poisoned beforehand.
  int invoke(size_t index, bool flush, double* event_ms, Status* device_error);
  // Rebuilds every structure the candidate can reach (kevin_args, tensor views, shape and
  // stride arrays) from the harness's copies, so nothing it scribbled there survives.
  void reset_views();
  std::vector<uint64_t> input_hashes();
  size_t slot_index() const { return set_base_.size() - 1; }

  const bool sandbox_;
  SandboxReport report_;
  const Status startup_;
  std::unique_ptr<Device> device_;
  std::vector<TensorSlot> inputs_, outputs_;
  std::vector<uint8_t*> set_base_;  // the K correctness sets, then the timing slot
  uint64_t set_bytes_ = 0;
  uint8_t* out_base_ = nullptr;
  uint64_t out_bytes_ = 0;
  void* workspace_ = nullptr;
  uint8_t* staging_ = nullptr;
  uint8_t* slot_host_ = nullptr;
  std::vector<std::vector<double>> scalars_, scalar_views_;
  std::vector<std::vector<kevin_tensor>> in_views_;
  std::vector<kevin_tensor> out_views_;
  std::vector<kevin_args> args_;
  uint64_t cpu_seconds_ = 0, output_limit_ = 0;
  bool cuda_ = false;
  Forward forward_ = nullptr;
  std::unique_ptr<StaticGuard> guard_;
};

Status Runner::setup(const proto::Setup& cmd, proto::Reply* reply) {
  if (!startup_.is_ok()) {
    *reply = proto::Failure{"sandbox", startup_.message()};
    return Status::ok();
  }
  const size_t sets = cmd.sets;
  set_bytes_ = cmd.set_bytes;
  out_bytes_ = cmd.output_bytes;
  scalars_ = cmd.scalars;
  cpu_seconds_ = cmd.cpu_seconds;
  output_limit_ = cmd.output_limit;
  inputs_ = slots_of(cmd.inputs);
  outputs_ = slots_of(cmd.outputs);
  if (sets == 0 || scalars_.size() != sets) return invalid_argument("bad set count");
  scalars_.push_back(scalars_.front());  // the timing slot's, replaced by each timed call
  cuda_ = cmd.backend == "cuda";
#if defined(KEVIN_RUNNER_CUDA)
  device_ = cuda_ ? make_cuda_device(0) : make_cpu_device();
#else
  if (cuda_) return unavailable("this runner was built without CUDA");
  device_ = make_cpu_device();
#endif
  KEVIN_RETURN_IF_ERROR(device_->init());

  // The correctness sets are uploaded once; the timing slot is filled before each timed call.
  KEVIN_ASSIGN_OR_RETURN(uint8_t * inputs_map, map_and_close(kInputsFd, sets * set_bytes_, false));
  for (size_t k = 0; k <= sets; ++k) {
    KEVIN_ASSIGN_OR_RETURN(void* base, device_->alloc(set_bytes_));
    if (k < sets)
      KEVIN_RETURN_IF_ERROR(device_->upload(base, inputs_map + k * set_bytes_, set_bytes_));
    set_base_.push_back(static_cast<uint8_t*>(base));
  }
  ::munmap(inputs_map, sets * set_bytes_ == 0 ? 1 : sets * set_bytes_);
  KEVIN_ASSIGN_OR_RETURN(void* out, device_->alloc(out_bytes_));
  out_base_ = static_cast<uint8_t*>(out);
  KEVIN_ASSIGN_OR_RETURN(workspace_, device_->alloc(device_->workspace_bytes()));
  KEVIN_ASSIGN_OR_RETURN(staging_, map_and_close(kStagingFd, out_bytes_, true));
  KEVIN_ASSIGN_OR_RETURN(slot_host_, map_and_close(kSlotFd, set_bytes_, true));
  device_->pin_host(staging_, out_bytes_);
  device_->pin_host(slot_host_, set_bytes_);

  in_views_.assign(sets + 1, std::vector<kevin_tensor>(inputs_.size()));
  out_views_.assign(outputs_.size(), kevin_tensor{});
  args_.assign(sets + 1, kevin_args{});
  scalar_views_ = scalars_;
  reset_views();
  KEVIN_RETURN_IF_ERROR(device_->synchronize());
  KEVIN_RETURN_IF_ERROR(load_candidate_libraries());
  if (sandbox_) {
    // The CUDA driver reserves address space by the terabyte, and so do the sanitizers:
    // only the CPU runner of an ordinary build gets a cap.
    const uint64_t address_space = cuda_ || kSanitized ? 0
                                                       : (set_base_.size() + 2) * set_bytes_ +
                                                             3 * out_bytes_ + (uint64_t{3} << 30);
    const Status closed = close_doors(cpu_seconds_, output_limit_, address_space, 0, &report_);
    if (!closed.is_ok()) {
      *reply = proto::Failure{"sandbox", closed.message()};
      return Status::ok();
    }
  }
  KEVIN_RETURN_IF_ERROR(poison_for_next_call(cmd.next_poison));
  *reply = proto::SetupReply{device_->name(), device_->workspace_bytes(), input_hashes(),
                             report_.enforced, report_.skipped};
  return Status::ok();
}

Status Runner::load_candidate_libraries() {
  // The object gate lets a candidate need only these (and libc, and the CUDA runtime this
  // runner already uses); loaded while the filesystem is still in view, the loader later
  // finds them by name from inside the empty root.
  for (const char* library : {"libstdc++.so.6", "libgcc_s.so.1", "libm.so.6"}) {
    if (::dlopen(library, RTLD_NOW | RTLD_LOCAL) == nullptr) {
      return unavailable(std::string("cannot load ") + library + ": " + ::dlerror());
    }
  }
  return Status::ok();
}

Status Runner::load(const proto::Load& cmd, proto::Reply* reply) {
  if (!device_) return failed_precondition("load before setup");
  // Under the sandbox the scratch folder is the root; the object lies at its top.
  const std::string path = std::string(sandbox_ ? "/" : "./") + kObject;
  if (sandbox_) {
    // The loader will get the lowest free descriptor for the object: the only file the
    // loader's allowlist lets it map executable.
    const int probe = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (probe < 0)
      return io_error(std::string("cannot open the candidate object: ") + std::strerror(errno));
    ::close(probe);
    KEVIN_RETURN_IF_ERROR(allow_loading(probe, SyscallNeeds{cuda_}));
  }
  // From here on, candidate code may run (the object gate admits no load-time code, but the
  // loader's allowlist is already in place should one get through).
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *reply = proto::Failure{"load", std::string("cannot load the kernel: ") + ::dlerror()};
    return Status::ok();
  }
  forward_ = reinterpret_cast<Forward>(::dlsym(handle, "kevin_forward"));
  if (forward_ == nullptr) {
    *reply = proto::Failure{"load", "kevin_forward is not exported (declare it extern \"C\")"};
    return Status::ok();
  }
  KEVIN_ASSIGN_OR_RETURN(StaticGuard guard, StaticGuard::snapshot(path));
  guard_ = std::make_unique<StaticGuard>(std::move(guard));
  // The judge named the object's writable data symbols; the device keeps those that are
  // device variables.
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr)
    return internal_error("dlinfo failed");
  std::vector<const void*> shadows;
  for (uint64_t offset : cmd.data_symbols)
    shadows.push_back(reinterpret_cast<const void*>(map->l_addr + offset));
  KEVIN_RETURN_IF_ERROR(device_->snapshot_candidate_globals(shadows));
  if (sandbox_) KEVIN_RETURN_IF_ERROR(seal(SyscallNeeds{cuda_}, &report_));
  KEVIN_RETURN_IF_ERROR(poison_for_next_call(cmd.next_poison));
  *reply = proto::LoadReply{guard_->bytes()};
  return Status::ok();
}

void Runner::reset_views() {
  const auto view = [](TensorSlot& t, uint8_t* base) {
    t.view_shape = t.shape;
    t.view_strides = t.strides;
    return kevin_tensor{base + t.offset, t.dtype, static_cast<int32_t>(t.shape.size()),
                        t.view_shape.data(), t.view_strides.data()};
  };
  for (size_t i = 0; i < outputs_.size(); ++i) out_views_[i] = view(outputs_[i], out_base_);
  for (size_t k = 0; k < set_base_.size(); ++k) {
    // Input slots are shared by all sets, so every set's views point at the same fresh arrays.
    for (size_t i = 0; i < inputs_.size(); ++i) in_views_[k][i] = view(inputs_[i], set_base_[k]);
    scalar_views_[k] = scalars_[k];
    args_[k] = {in_views_[k].data(),
                static_cast<int32_t>(inputs_.size()),
                out_views_.data(),
                static_cast<int32_t>(outputs_.size()),
                scalar_views_[k].data(),
                static_cast<int32_t>(scalars_[k].size()),
                workspace_,
                device_->workspace_bytes(),
                device_->stream()};
  }
}

std::vector<uint64_t> Runner::input_hashes() {
  std::vector<uint64_t> h;
  for (size_t k = 0; k < slot_index(); ++k) h.push_back(device_->hash(set_base_[k], set_bytes_));
  return h;
}

Status Runner::reset_after_call(uint32_t next_poison) {
  if (guard_) guard_->restore();
  device_->restore_candidate_globals();
  ::malloc_trim(0);
  scrub_stack_below_here();
  std::fesetenv(FE_DFL_ENV);
  return poison_for_next_call(next_poison);
}

Status Runner::poison_for_next_call(uint32_t poison) {
  for (const auto& out : outputs_) {
    device_->fill32(out_base_ + out.offset, harness::poison_word(out.dtype, poison),
                    (out.bytes + 3) / 4 * 4);
  }
  device_->fill32(workspace_, workspace_poison(poison), device_->workspace_bytes());
  return device_->synchronize();
}

int Runner::invoke(size_t index, bool flush, double* event_ms, Status* device_error) {
  reset_views();
  if (flush) device_->flush_cache({{set_base_[index], set_bytes_}, {out_base_, out_bytes_}});
  *device_error = device_->synchronize();
  if (!device_error->is_ok()) return 0;
  device_->mark_start();
  const int rc = forward_ != nullptr ? forward_(&args_[index]) : 0;
  device_->mark_end();
  // Ordered after the call on the harness stream only: work the candidate left on other
  // streams races this copy and shows up as poison in the checked output.
  *device_error = device_->download_async(staging_, out_base_, out_bytes_);
  if (device_error->is_ok()) *device_error = device_->synchronize();
  *event_ms = device_->elapsed_ms();
  return rc;
}

Status Runner::call(const proto::Call& cmd, proto::Reply* reply) {
  if (!device_) return failed_precondition("call before setup");
  if (cmd.set >= slot_index()) return invalid_argument("set out of range");
  double event_ms = 0;
  Status error;
  const int rc = invoke(cmd.set, false, &event_ms, &error);
  if (!error.is_ok()) {
    *reply = proto::Failure{"call", error.message()};
    return Status::ok();
  }
  *reply = proto::CallReply{rc, input_hashes()};
  return Status::ok();
}

Status Runner::time_call(const proto::TimeCall& cmd, proto::Reply* reply) {
  if (!device_) return failed_precondition("time_call before setup");
  size_t index = 0;
  if (cmd.on_slot()) {
    // A timing set, which the judge has just written into the slot.
    index = slot_index();
    if (cmd.slot_scalars.size() != scalars_.front().size())
      return invalid_argument("slot scalar count");
    scalars_[index] = cmd.slot_scalars;
    KEVIN_RETURN_IF_ERROR(device_->upload(set_base_[index], slot_host_, set_bytes_));
  } else {
    index = *cmd.set;
    if (index >= slot_index()) return invalid_argument("set out of range");
  }
  double event_ms = 0;
  Status error;
  const int rc = invoke(index, true, &event_ms, &error);
  if (!error.is_ok()) {
    *reply = proto::Failure{"time", error.message()};
    return Status::ok();
  }
  *reply = proto::TimeCallReply{rc, event_ms};
  return Status::ok();
}

// Waits until `fd` is readable: spinning until `spin_until`, then sleeping in poll().
void wait_readable(int fd, Clock::time_point spin_until) {
  pollfd p{fd, POLLIN, 0};
  while (Clock::now() < spin_until) {
    if (::poll(&p, 1, 0) != 0) return;
  }
  while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
}

// The reply `runner` gives `command`; resume and exit are not commands of this turn.
proto::Reply answer(Runner& runner, const proto::Command& command) {
  proto::Reply reply = proto::Failure{};
  const Status status = std::visit(
      [&](const auto& c) -> Status {
        using C = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<C, proto::Setup>) return runner.setup(c, &reply);
        if constexpr (std::is_same_v<C, proto::Load>) return runner.load(c, &reply);
        if constexpr (std::is_same_v<C, proto::Call>) return runner.call(c, &reply);
        if constexpr (std::is_same_v<C, proto::TimeCall>) return runner.time_call(c, &reply);
        return invalid_argument("'" + std::string(proto::command_name(command)) + "' out of turn");
      },
      command);
  if (!status.is_ok()) reply = proto::Failure{"harness", status.to_string()};
  return reply;
}

Result<proto::Command> read_command() {
  auto frame = sys::read_frame(kCommandFd, sys::Deadline::never());
  if (!frame.is_ok()) ::_exit(0);  // the judge closed the channel
  KEVIN_ASSIGN_OR_RETURN(Json json, parse_json(*frame));
  return proto::decode_command(json);
}

void send(const Json& frame) {
  if (!sys::write_frame(kReplyFd, dump_json(frame), sys::Deadline::never()).is_ok()) ::_exit(0);
}

[[noreturn]] void serve(Runner& runner) {
  auto spin_until = Clock::now();
  while (true) {
    wait_readable(kCommandFd, spin_until);
    const auto command = read_command();
    if (command.is_ok() && std::holds_alternative<proto::Exit>(*command))
      ::_exit(0);  // skip the CUDA runtime's teardown; the context dies with the process
    const proto::Reply reply = command.is_ok()
                                   ? answer(runner, *command)
                                   : proto::Failure{"harness", command.status().to_string()};
    send(proto::encode(reply));
    // A failed device cannot be trusted with another call (sticky CUDA errors).
    if (std::holds_alternative<proto::Failure>(reply)) ::_exit(0);
    const auto* timed = std::get_if<proto::TimeCall>(&*command);
    if (proto::is_call(*command)) {
      // On the CPU the judge counts this process's CPU time up to the moment it next sleeps:
      // sleep until the judge has read it, so the clean-up below is not counted with the call.
      if (timed != nullptr && !runner.spins()) {
        wait_readable(kCommandFd, Clock::now());
        const auto resume = read_command();
        if (!resume.is_ok() || !std::holds_alternative<proto::Resume>(*resume)) ::_exit(0);
      }
      // The judge waits for this second frame before its next command.
      const uint32_t poison =
          timed != nullptr ? timed->next_poison : std::get<proto::Call>(*command).next_poison;
      const Status reset = runner.reset_after_call(poison);
      send(proto::encode(proto::Ready{reset.is_ok(), reset.is_ok() ? "" : reset.message()}));
      if (!reset.is_ok()) ::_exit(0);
    }
    spin_until =
        timed != nullptr && runner.spins() ? Clock::now() + kSpinAfterTimedCall : Clock::now();
  }
}

bool has_flag(int argc, char** argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    if (flag == argv[i]) return true;
  }
  return false;
}

// The three words after `--python` (interpreter, kernelbench_runner.py, the support library),
// or nullptr when the flag is absent.
char** python_runner_args(int argc, char** argv) {
  for (int i = 1; i + 3 < argc; ++i) {
    if (std::string_view(argv[i]) == "--python") return argv + i + 1;
  }
  return nullptr;
}

// KernelBench answers run in Python: the same namespaces, then the interpreter takes this
// process over and applies the later stages itself through libkevin-runner-support.so
// (kernelbench_runner.py). What happened here travels in its environment.
[[noreturn]] void exec_python_runner(char** words, bool sandbox, const SandboxReport& report,
                                     const Status& startup) {
  std::string enforced;
  for (const auto& e : report.enforced) enforced += (enforced.empty() ? "" : ",") + e;
  ::setenv("KEVIN_SANDBOX_ENFORCED", enforced.c_str(), 1);
  ::setenv("KEVIN_SANDBOX", sandbox ? "1" : "0", 1);
  if (!startup.is_ok()) ::setenv("KEVIN_SANDBOX_ERROR", startup.message().c_str(), 1);
  ::setenv("KEVIN_LIFELINE_FD", std::to_string(lifeline_for_exec()).c_str(), 1);
  char* const args[] = {
      words[0], const_cast<char*>("-s"), const_cast<char*>("-u"), words[1], words[2], nullptr};
  ::execv(words[0], args);
  ::_exit(127);
}

}  // namespace
}  // namespace kevin::runner

// Usage (by the judge only): kevin-runner [--sandbox [--pid-namespace]]
// [--python INTERPRETER kernelbench_runner.py libkevin-runner-support.so], with
// KEVIN_PARENT_PID naming the judge.
int main(int argc, char** argv) {
  using namespace kevin::runner;
  const char* parent = std::getenv("KEVIN_PARENT_PID");
  die_with_parent(parent != nullptr ? std::atoi(parent) : 0);
  const bool sandbox = has_flag(argc, argv, "--sandbox");
  SandboxReport report;
  kevin::Status startup;
  if (sandbox) startup = enter_namespaces(has_flag(argc, argv, "--pid-namespace"), &report);
  if (!sandbox) report.skipped.push_back("all confinement (--no-sandbox)");
  if (char** python = python_runner_args(argc, argv))
    exec_python_runner(python, sandbox, report, startup);
  Runner runner(sandbox, std::move(report), std::move(startup));
  serve(runner);
}
