// nccl_collective.cpp — make_nccl_collective: one NCCL communicator per device, created
// together in this process (ncclCommInitAll); each rank's thread all-reduces on its device's
// current stream. Built only with KEVIN_TRAIN_NCCL; otherwise the stubs at the end say so.
#include "train/parallel/collective.h"

#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#if KEVIN_TRAIN_NCCL
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nccl.h>

#include "core/mutex.h"
#endif

namespace kevin::train {

#if KEVIN_TRAIN_NCCL
namespace {

std::optional<ncclDataType_t> nccl_type(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat32:
      return ncclFloat32;
    case torch::kFloat64:
      return ncclFloat64;
    case torch::kBFloat16:
      return ncclBfloat16;
    case torch::kHalf:
      return ncclFloat16;
    default:
      return std::nullopt;
  }
}

class NcclCollective final : public Collective {
 public:
  NcclCollective(std::vector<int> devices, std::vector<ncclComm_t> comms)
      : devices_(std::move(devices)), comms_(std::move(comms)) {}
  ~NcclCollective() override {
    MutexLock lock(mu_);
    if (aborted_) return;
    for (ncclComm_t comm : comms_) ncclCommDestroy(comm);
  }

  int world_size() const override { return static_cast<int>(devices_.size()); }

  Status all_reduce_sum(int rank, torch::Tensor& tensor) override {
    if (rank < 0 || rank >= world_size())
      return invalid_argument("all_reduce_sum: rank " + std::to_string(rank) + " out of range");
    const int device = devices_[static_cast<size_t>(rank)];
    if (!tensor.is_cuda() || tensor.get_device() != device || !tensor.is_contiguous()) {
      return invalid_argument("all_reduce_sum: rank " + std::to_string(rank) +
                              " needs a contiguous tensor on cuda:" + std::to_string(device));
    }
    const auto type = nccl_type(tensor.scalar_type());
    if (!type) return invalid_argument("all_reduce_sum: NCCL cannot sum this element type");
    {
      MutexLock lock(mu_);
      if (aborted_) return unavailable("all_reduce_sum: the group was aborted");
    }
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    const cudaStream_t stream =
        c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
    const ncclResult_t r =
        ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                      *type, ncclSum, comms_[static_cast<size_t>(rank)], stream);
    if (r != ncclSuccess)
      return internal_error(std::string("ncclAllReduce: ") + ncclGetErrorString(r));
    return Status::ok();
  }

  void abort() override {
    MutexLock lock(mu_);
    if (aborted_) return;
    aborted_ = true;
    for (ncclComm_t comm : comms_) ncclCommAbort(comm);
  }

 private:
  const std::vector<int> devices_;
  const std::vector<ncclComm_t> comms_;
  Mutex mu_;  // also keeps abort() and the destructor from using the communicators at once
  bool aborted_ GUARDED_BY(mu_) = false;
};

}  // namespace

bool nccl_available() { return true; }

Result<std::unique_ptr<Collective>> make_nccl_collective(const std::vector<int>& devices) {
  if (devices.empty()) return invalid_argument("make_nccl_collective: no devices");
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size()) {
    return invalid_argument("make_nccl_collective: a device is listed twice");
  }
  // NVLink multicast (NVLS) is off in everything kevin starts (docs/trainer.md, "Several GPUs: data
  // parallel").
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  std::vector<ncclComm_t> comms(devices.size());
  const ncclResult_t r =
      ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data());
  if (r != ncclSuccess)
    return internal_error(std::string("ncclCommInitAll: ") + ncclGetErrorString(r));
  return std::unique_ptr<Collective>(std::make_unique<NcclCollective>(devices, std::move(comms)));
}

#else

bool nccl_available() { return false; }

Result<std::unique_ptr<Collective>> make_nccl_collective(const std::vector<int>&) {
  return failed_precondition(
      "this kevin was built without NCCL (needs nvcc, libtorch with CUDA and nccl.h)");
}

#endif

}  // namespace kevin::train
