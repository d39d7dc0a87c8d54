// runner_main.cpp — the candidate runner: a small process (no libtorch) that loads one
// untrusted candidate and runs it on the judge's command, over a framed JSON channel.
// Descriptors (set up by the judge): 3 commands in, 4 replies out, 5 input sets (read-only
// memfd), 6 output staging (shared memfd); 1 and 2 go to a size-limited capture file.
// Expected outputs never enter this process; it only reports raw results.
#include <cstdint>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "engine/abi/kevin_abi.h"
#include "engine/harness_math.h"
#include "engine/runner/device.h"
#include "engine/runner/sandbox.h"
#include "engine/runner/static_guard.h"
#include "sys/fd.h"

namespace kevin::runner {
namespace {

constexpr int kCommandFd = 3, kReplyFd = 4, kInputsFd = 5, kStagingFd = 6;
using Forward = int (*)(const kevin_args*);
using Clock = std::chrono::steady_clock;

struct TensorSlot {
  int32_t dtype;
  std::vector<int64_t> shape, strides;          // the harness's own copy
  std::vector<int64_t> view_shape, view_strides;  // what the candidate sees (it could write them)
  uint64_t offset, bytes, numel;
};

Result<std::vector<TensorSlot>> parse_slots(const Json& list) {
  std::vector<TensorSlot> slots;
  if (!list.is_array()) return invalid_argument("tensor list expected");
  for (const auto& t : list) {
    TensorSlot s;
    KEVIN_ASSIGN_OR_RETURN(s.dtype, json_get<int32_t>(t, "dtype"));
    KEVIN_ASSIGN_OR_RETURN(s.shape, json_get<std::vector<int64_t>>(t, "shape"));
    KEVIN_ASSIGN_OR_RETURN(s.offset, json_get<uint64_t>(t, "offset"));
    KEVIN_ASSIGN_OR_RETURN(s.bytes, json_get<uint64_t>(t, "bytes"));
    s.strides.assign(s.shape.size(), 1);
    for (size_t d = s.shape.size(); d-- > 1;) s.strides[d - 1] = s.strides[d] * s.shape[d];
    s.numel = 1;
    for (int64_t d : s.shape) s.numel *= static_cast<uint64_t>(d);
    s.view_shape = s.shape;
    s.view_strides = s.strides;
    slots.push_back(std::move(s));
  }
  return slots;
}

uint32_t workspace_poison(uint32_t seed) { return harness::poison_word(0, seed ^ 0x5bd1e995u); }

class Runner {
 public:
  Status init(const Json& cmd, Json* reply);
  Status call(const Json& cmd, Json* reply);
  Status time(const Json& cmd, Json* reply);

 private:
  // One invocation on input set `set` with fresh poison; returns the candidate's code.
  int invoke(size_t set, uint32_t poison, bool flush, bool stage_outputs, double* wall_ms,
             Status* device_error);
  // Rebuilds every structure the candidate can reach (kevin_args, tensor views, shape and
  // stride arrays) from the harness's copies, so nothing it scribbled there survives.
  void reset_views();
  std::vector<uint64_t> input_hashes();

  std::unique_ptr<Device> device_;
  std::vector<TensorSlot> inputs_, outputs_;
  std::vector<uint8_t*> set_base_;
  uint64_t set_bytes_ = 0;
  uint8_t* out_base_ = nullptr;
  uint64_t out_bytes_ = 0;
  void* workspace_ = nullptr;
  std::vector<std::vector<double>> scalars_, scalar_views_;
  std::vector<std::vector<kevin_tensor>> in_views_;
  std::vector<kevin_tensor> out_views_;
  std::vector<kevin_args> args_;
  sys::SharedMemory staging_;
  Forward forward_ = nullptr;
  std::unique_ptr<StaticGuard> guard_;
};

Status Runner::init(const Json& cmd, Json* reply) {
  KEVIN_ASSIGN_OR_RETURN(std::string backend, json_get<std::string>(cmd, "backend"));
  KEVIN_ASSIGN_OR_RETURN(std::string object, json_get<std::string>(cmd, "object"));
  KEVIN_ASSIGN_OR_RETURN(size_t sets, json_get<size_t>(cmd, "sets"));
  KEVIN_ASSIGN_OR_RETURN(set_bytes_, json_get<uint64_t>(cmd, "set_bytes"));
  KEVIN_ASSIGN_OR_RETURN(out_bytes_, json_get<uint64_t>(cmd, "output_bytes"));
  KEVIN_ASSIGN_OR_RETURN(scalars_, json_get<std::vector<std::vector<double>>>(cmd, "scalars"));
  KEVIN_ASSIGN_OR_RETURN(uint64_t cpu_seconds, json_get<uint64_t>(cmd, "cpu_seconds"));
  KEVIN_ASSIGN_OR_RETURN(uint64_t output_limit, json_get<uint64_t>(cmd, "output_limit"));
  KEVIN_ASSIGN_OR_RETURN(bool sandbox, json_get<bool>(cmd, "sandbox"));
  KEVIN_ASSIGN_OR_RETURN(inputs_, parse_slots(cmd.value("inputs", Json::array())));
  KEVIN_ASSIGN_OR_RETURN(outputs_, parse_slots(cmd.value("outputs", Json::array())));
  if (sets == 0 || scalars_.size() != sets) return invalid_argument("bad set count");

  SandboxReport report;
  if (sandbox) isolate_network(&report);
#if defined(KEVIN_RUNNER_CUDA)
  device_ = backend == "cuda" ? make_cuda_device(0) : make_cpu_device();
#else
  if (backend == "cuda") return unavailable("this runner was built without CUDA");
  device_ = make_cpu_device();
#endif
  KEVIN_RETURN_IF_ERROR(device_->init());

  // Inputs: every set uploaded once; the judge's copy stays in the read-only memfd.
  KEVIN_ASSIGN_OR_RETURN(auto inputs_map, sys::SharedMemory::map_fd(kInputsFd, sets * set_bytes_, false));
  for (size_t k = 0; k < sets; ++k) {
    KEVIN_ASSIGN_OR_RETURN(void* base, device_->alloc(set_bytes_));
    KEVIN_RETURN_IF_ERROR(device_->upload(base, inputs_map.data() + k * set_bytes_, set_bytes_));
    set_base_.push_back(static_cast<uint8_t*>(base));
  }
  KEVIN_ASSIGN_OR_RETURN(void* out, device_->alloc(out_bytes_));
  out_base_ = static_cast<uint8_t*>(out);
  KEVIN_ASSIGN_OR_RETURN(workspace_, device_->alloc(device_->workspace_bytes()));
  KEVIN_ASSIGN_OR_RETURN(staging_, sys::SharedMemory::map_fd(kStagingFd, out_bytes_, true));
  device_->pin_host(staging_.data(), staging_.size());

  in_views_.assign(sets, std::vector<kevin_tensor>(inputs_.size()));
  out_views_.assign(outputs_.size(), kevin_tensor{});
  args_.assign(sets, kevin_args{});
  scalar_views_ = scalars_;
  reset_views();
  KEVIN_RETURN_IF_ERROR(device_->synchronize());

  if (sandbox) {
    drop_privileges(&report);
    KEVIN_RETURN_IF_ERROR(apply_limits(cpu_seconds, output_limit, &report));
    KEVIN_RETURN_IF_ERROR(install_seccomp(&report));
  }
  // From here on, candidate code may run (static initialisers run inside dlopen).
  void* handle = ::dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *reply = {{"ok", false}, {"stage", "load"}, {"error", std::string("cannot load the kernel: ") + ::dlerror()}};
    return Status::ok();
  }
  forward_ = reinterpret_cast<Forward>(::dlsym(handle, "kevin_forward"));
  if (forward_ == nullptr) {
    *reply = {{"ok", false}, {"stage", "load"}, {"error", "kevin_forward is not exported (declare it extern \"C\")"}};
    return Status::ok();
  }
  KEVIN_ASSIGN_OR_RETURN(StaticGuard guard, StaticGuard::snapshot(object));
  guard_ = std::make_unique<StaticGuard>(std::move(guard));
  *reply = {{"ok", true},
            {"device", device_->name()},
            {"static_bytes", guard_->bytes()},
            {"workspace_bytes", device_->workspace_bytes()},
            {"input_hashes", input_hashes()},
            {"sandbox", {{"enforced", report.enforced}, {"skipped", report.skipped}}}};
  return Status::ok();
}

void Runner::reset_views() {
  const auto view = [](TensorSlot& t, uint8_t* base) {
    t.view_shape = t.shape;
    t.view_strides = t.strides;
    return kevin_tensor{base + t.offset, t.dtype, static_cast<int32_t>(t.shape.size()), t.view_shape.data(),
                        t.view_strides.data()};
  };
  for (size_t i = 0; i < outputs_.size(); ++i) out_views_[i] = view(outputs_[i], out_base_);
  for (size_t k = 0; k < set_base_.size(); ++k) {
    // Input slots are shared by all sets, so every set's views point at the same fresh arrays.
    for (size_t i = 0; i < inputs_.size(); ++i) in_views_[k][i] = view(inputs_[i], set_base_[k]);
    scalar_views_[k] = scalars_[k];
    args_[k] = {in_views_[k].data(), static_cast<int32_t>(inputs_.size()), out_views_.data(),
                static_cast<int32_t>(outputs_.size()), scalar_views_[k].data(), static_cast<int32_t>(scalars_[k].size()),
                workspace_, device_->workspace_bytes(), device_->stream()};
  }
}

std::vector<uint64_t> Runner::input_hashes() {
  std::vector<uint64_t> h;
  for (uint8_t* base : set_base_) h.push_back(device_->hash(base, set_bytes_));
  return h;
}

int Runner::invoke(size_t set, uint32_t poison, bool flush, bool stage_outputs, double* wall_ms,
                   Status* device_error) {
  guard_->restore();
  reset_views();
  for (size_t i = 0; i < outputs_.size(); ++i) {
    device_->fill32(out_base_ + outputs_[i].offset, harness::poison_word(outputs_[i].dtype, poison),
                    (outputs_[i].bytes + 3) / 4 * 4);
  }
  device_->fill32(workspace_, workspace_poison(poison), device_->workspace_bytes());
  if (flush) device_->flush_cache();
  *device_error = device_->synchronize();
  if (!device_error->is_ok()) return 0;
  const auto t0 = Clock::now();
  device_->mark_start();
  const int rc = forward_(&args_[set]);
  device_->mark_end();
  if (stage_outputs) {
    // Ordered after the call on the harness stream only: work the candidate left on other
    // streams races this copy and shows up as poison in the checked output.
    *device_error = device_->download_async(staging_.data(), out_base_, out_bytes_);
    if (!device_error->is_ok()) return 0;
  }
  *device_error = device_->synchronize();
  *wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return rc;
}

Status Runner::call(const Json& cmd, Json* reply) {
  KEVIN_ASSIGN_OR_RETURN(size_t set, json_get<size_t>(cmd, "set"));
  KEVIN_ASSIGN_OR_RETURN(uint32_t poison, json_get<uint32_t>(cmd, "poison"));
  if (set >= args_.size()) return invalid_argument("set out of range");
  double wall_ms = 0;
  Status error;
  const int rc = invoke(set, poison, false, true, &wall_ms, &error);
  if (!error.is_ok()) {
    *reply = {{"ok", false}, {"stage", "call"}, {"error", error.message()}};
    return Status::ok();
  }
  *reply = {{"ok", true}, {"rc", rc}, {"wall_ms", wall_ms}, {"input_hashes", input_hashes()}};
  return Status::ok();
}

Status Runner::time(const Json& cmd, Json* reply) {
  KEVIN_ASSIGN_OR_RETURN(size_t warmup, json_get<size_t>(cmd, "warmup"));
  KEVIN_ASSIGN_OR_RETURN(auto order, json_get<std::vector<size_t>>(cmd, "order"));
  KEVIN_ASSIGN_OR_RETURN(uint32_t poison, json_get<uint32_t>(cmd, "poison"));
  KEVIN_ASSIGN_OR_RETURN(uint64_t weights_seed, json_get<uint64_t>(cmd, "weights_seed"));
  if (order.empty()) return invalid_argument("empty timing order");
  for (size_t k : order) {
    if (k >= args_.size()) return invalid_argument("set out of range");
  }
  KEVIN_RETURN_IF_ERROR(device_->reset_fingerprints(order.size()));
  std::vector<double> event_ms, wall_ms;
  size_t nonzero = 0;
  for (size_t i = 0; i < warmup + order.size(); ++i) {
    const bool timed = i >= warmup;
    const size_t set = timed ? order[i - warmup] : order[i % order.size()];
    double wall = 0;
    Status error;
    const int rc = invoke(set, poison + static_cast<uint32_t>(i), true, false, &wall, &error);
    if (!error.is_ok()) {
      *reply = {{"ok", false}, {"stage", "time"}, {"error", error.message()}};
      return Status::ok();
    }
    if (!timed) continue;
    nonzero += rc != 0;
    event_ms.push_back(device_->elapsed_ms());
    wall_ms.push_back(wall);
    const size_t slot = i - warmup;
    uint64_t index = 0;
    for (size_t o = 0; o < outputs_.size(); ++o) {
      device_->fingerprint(out_base_ + outputs_[o].offset, outputs_[o].dtype, outputs_[o].numel, weights_seed,
                           index, slot);
      index += outputs_[o].numel;
    }
  }
  KEVIN_RETURN_IF_ERROR(device_->synchronize());
  KEVIN_ASSIGN_OR_RETURN(auto prints, device_->fingerprints(order.size()));
  Json print_list = Json::array();
  for (const auto& f : prints) print_list.push_back({f.weighted_sum, f.abs_sum, f.nonfinite});
  *reply = {{"ok", true},        {"event_ms", event_ms},     {"wall_ms", wall_ms},
            {"prints", print_list}, {"nonzero_rc", nonzero}, {"input_hashes", input_hashes()}};
  return Status::ok();
}

int serve() {
  Runner runner;
  const auto never = sys::Deadline::never();
  while (true) {
    auto frame = sys::read_frame(kCommandFd, never);
    if (!frame.is_ok()) return 0;  // the judge closed the channel
    auto cmd = parse_json(*frame);
    Json reply;
    Status status;
    if (!cmd.is_ok()) {
      status = cmd.status();
    } else {
      const std::string op = cmd->value("cmd", "");
      if (op == "init") {
        status = runner.init(*cmd, &reply);
      } else if (op == "call") {
        status = runner.call(*cmd, &reply);
      } else if (op == "time") {
        status = runner.time(*cmd, &reply);
      } else if (op == "exit") {
        return 0;
      } else {
        status = invalid_argument("unknown command '" + op + "'");
      }
    }
    if (!status.is_ok()) reply = {{"ok", false}, {"stage", "harness"}, {"error", status.to_string()}};
    if (!sys::write_frame(kReplyFd, dump_json(reply), never).is_ok()) return 0;
    // A failed device cannot be trusted with another call (sticky CUDA errors).
    if (!reply.value("ok", false)) return 0;
  }
}

}  // namespace
}  // namespace kevin::runner

int main() { return kevin::runner::serve(); }
