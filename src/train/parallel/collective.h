// collective.h — summing tensors over the replicas of data-parallel training. Replicas are
// threads of one process, one per device (rank r drives device r of the group); every rank
// calls all_reduce_sum with a tensor of the same shape, and all of them get the same sum, bit
// for bit, so replicas that apply the same optimizer step stay identical.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"

namespace kevin::train {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int world_size() const = 0;
  // Replaces `tensor` (contiguous; on rank `rank`'s device) by the sum over all ranks of their
  // tensors. Blocks until every rank has called. Errors: kUnavailable after abort() (here or while
  // waiting), kInternal when the transport fails, kInvalidArgument for a tensor the
  // transport cannot take. After an error the group is unusable.
  virtual Status all_reduce_sum(int rank, torch::Tensor& tensor) = 0;
  // Ends the group: calls waiting now or made later return kUnavailable. Lets the other ranks
  // of a failed rank stop instead of waiting for it forever. Thread-safe.
  virtual void abort() = 0;
};

// Runs rank_fn(r) for every rank r in [0, world_size) on a thread of its own and waits for
// all of them. A rank whose call fails aborts `group` (when not null) so that the others stop
// waiting for it. Returns ok, or the first failure that is not merely kUnavailable from such
// an abort (a kUnavailable one only when every failure is). rank_fn must not throw.
Status run_ranks(int world_size, Collective* group, const std::function<Status(int rank)>& rank_fn);

// Ranks exchange through host memory: tensors on any device, summed on the CPU in rank order
// (deterministic). For data-parallel training on the CPU, tests, and GPUs without NCCL.
std::unique_ptr<Collective> make_host_collective(int world_size);

// Whether this build has NCCL (make_nccl_collective works).
bool nccl_available();

// NCCL over CUDA devices `devices` (rank r on devices[r]), one communicator per device in
// this process; all-reduces run on each device's current stream. NCCL's NVLink multicast is
// switched off (NCCL_NVLS_ENABLE=0). Errors: kFailedPrecondition (built without NCCL),
// kInvalidArgument (no devices, a device twice), kInternal (NCCL could not start).
Result<std::unique_ptr<Collective>> make_nccl_collective(const std::vector<int>& devices);

}  // namespace kevin::train
