// collective.cpp — the host-memory collective: a generation-counted barrier whose last
// arriving rank adds every rank's copy in rank order. NCCL's is in nccl_collective.cpp.
#include "train/parallel/collective.h"

#include "core/mutex.h"
#include "core/parallel.h"

namespace kevin::train {
namespace {

class HostCollective final : public Collective {
 public:
  explicit HostCollective(int world_size)
      : world_size_(world_size), slots_(static_cast<size_t>(world_size)) {}

  int world_size() const override { return world_size_; }

  Status all_reduce_sum(int rank, torch::Tensor& tensor) override {
    if (rank < 0 || rank >= world_size_)
      return invalid_argument("all_reduce_sum: rank " + std::to_string(rank) + " out of range");
    KEVIN_ASSIGN_OR_RETURN(const torch::Tensor sum, round_sum(rank, tensor.to(torch::kCPU)));
    tensor.copy_(sum);
    return Status::ok();
  }

  void abort() override {
    MutexLock lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  // Puts `host` in rank's slot and waits for every rank's: their sum. The last rank to arrive
  // adds them up. Held by value: the next round replaces sum_ only after all arrived again.
  Result<torch::Tensor> round_sum(int rank, const torch::Tensor& host) {
    MutexLock lock(mu_);
    if (aborted_) return unavailable("all_reduce_sum: the group was aborted");
    const uint64_t round = round_;
    slots_[static_cast<size_t>(rank)] = host;
    if (++arrived_ < world_size_) {
      while (round_ == round && !aborted_) cv_.wait(mu_);
      if (round_ == round) return unavailable("all_reduce_sum: the group was aborted");
      return sum_;
    }
    torch::Tensor sum = slots_[0].clone();
    for (size_t r = 1; r < slots_.size(); ++r) {
      if (slots_[r].sizes() != sum.sizes() || slots_[r].scalar_type() != sum.scalar_type()) {
        aborted_ = true;
        cv_.notify_all();
        return invalid_argument(
            "all_reduce_sum: ranks passed tensors of different shapes or types");
      }
      sum.add_(slots_[r]);
    }
    sum_ = sum;
    arrived_ = 0;
    ++round_;
    cv_.notify_all();
    return sum_;
  }

  const int world_size_;
  Mutex mu_;
  CondVar cv_;
  std::vector<torch::Tensor> slots_ GUARDED_BY(mu_);
  torch::Tensor sum_ GUARDED_BY(mu_);
  int arrived_ GUARDED_BY(mu_) = 0;
  uint64_t round_ GUARDED_BY(mu_) = 0;
  bool aborted_ GUARDED_BY(mu_) = false;
};

}  // namespace

Status run_ranks(int world_size, Collective* group,
                 const std::function<Status(int rank)>& rank_fn) {
  std::vector<Status> results(static_cast<size_t>(world_size));
  run_workers(results.size(), [&](size_t r) {
    results[r] = rank_fn(static_cast<int>(r));
    if (!results[r].is_ok() && group != nullptr) group->abort();
  });
  const Status* first_error = nullptr;
  for (const Status& result : results) {
    if (result.is_ok()) continue;
    const bool only_aborted =
        first_error != nullptr && first_error->code() == StatusCode::kUnavailable;
    if (first_error == nullptr || (only_aborted && result.code() != StatusCode::kUnavailable))
      first_error = &result;
  }
  return first_error ? *first_error : Status::ok();
}

std::unique_ptr<Collective> make_host_collective(int world_size) {
  return std::make_unique<HostCollective>(std::max(1, world_size));
}

}  // namespace kevin::train
