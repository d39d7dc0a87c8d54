// collective_test.cpp — the host collective sums in rank order and hands every rank the same
// bits, keeps rounds apart, rejects mismatched tensors, and abort() (or run_ranks, for a failed
// rank) frees waiting ranks; the NCCL collective (when built, on the visible GPUs) sums the same
// way.
#include "train/parallel/collective.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

namespace kevin::train {
namespace {

// Runs fn(rank) on `world` threads and returns their statuses.
std::vector<Status> on_ranks(int world, const std::function<Status(int)>& fn) {
  std::vector<Status> out(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] { out[static_cast<size_t>(r)] = fn(r); });
  for (auto& t : threads) t.join();
  return out;
}

TEST(HostCollectiveTest, EveryRankGetsTheSumOverManyRounds) {
  constexpr int kWorld = 3, kRounds = 50;
  auto group = make_host_collective(kWorld);
  std::vector<torch::Tensor> last(kWorld);
  const auto statuses = on_ranks(kWorld, [&](int rank) {
    for (int round = 0; round < kRounds; ++round) {
      torch::Tensor t =
          torch::full({5}, static_cast<float>(rank + 1) * static_cast<float>(round + 1));
      KEVIN_RETURN_IF_ERROR(group->all_reduce_sum(rank, t));
      // 1 + 2 + 3 times the round: a rank that mixed up rounds would see another multiple.
      if (!torch::equal(t, torch::full({5}, 6.0f * static_cast<float>(round + 1))))
        return internal_error("wrong sum");
      last[static_cast<size_t>(rank)] = t;
    }
    return Status::ok();
  });
  for (const auto& s : statuses) EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(torch::equal(last[0], last[1]) && torch::equal(last[1], last[2]));
}

TEST(HostCollectiveTest, SumsInRankOrderSoAllRanksAgreeBitForBit) {
  auto group = make_host_collective(2);
  torch::manual_seed(3);
  const std::vector<torch::Tensor> given = {torch::randn({1000}) * 1e6,
                                            torch::randn({1000}) * 1e-3};
  std::vector<torch::Tensor> got = {given[0].clone(), given[1].clone()};
  on_ranks(2,
           [&](int rank) { return group->all_reduce_sum(rank, got[static_cast<size_t>(rank)]); });
  EXPECT_TRUE(torch::equal(got[0], got[1]));
  EXPECT_TRUE(torch::equal(got[0], given[0] + given[1]));
}

TEST(HostCollectiveTest, MismatchedShapesAreAnErrorForEveryRank) {
  auto group = make_host_collective(2);
  const auto statuses = on_ranks(2, [&](int rank) {
    torch::Tensor t = torch::ones({rank + 1});
    return group->all_reduce_sum(rank, t);
  });
  // The rank that arrives last finds the mismatch; the other is freed by the abort it causes.
  int mismatches = 0, aborted = 0;
  for (const Status& s : statuses) {
    if (s.code() == StatusCode::kInvalidArgument &&
        s.message().find("ranks passed tensors of different shapes or types") != std::string::npos)
      ++mismatches;
    if (s.code() == StatusCode::kUnavailable &&
        s.message().find("the group was aborted") != std::string::npos)
      ++aborted;
  }
  EXPECT_EQ(mismatches, 1) << statuses[0].to_string() << " / " << statuses[1].to_string();
  EXPECT_EQ(aborted, 1) << statuses[0].to_string() << " / " << statuses[1].to_string();
}

TEST(HostCollectiveTest, AbortFreesRanksWaitingForAFailedOne) {
  auto group = make_host_collective(3);
  const auto statuses = on_ranks(3, [&](int rank) {
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      group->abort();  // rank 2 failed before its all-reduce
      return internal_error("rank 2 failed");
    }
    torch::Tensor t = torch::ones({4});
    return group->all_reduce_sum(rank, t);
  });
  for (const Status& s : {statuses[0], statuses[1]}) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
    EXPECT_NE(s.message().find("the group was aborted"), std::string::npos) << s.to_string();
  }
  torch::Tensor t = torch::ones({4});
  const Status after = group->all_reduce_sum(0, t);
  EXPECT_EQ(after.code(), StatusCode::kUnavailable);
  EXPECT_NE(after.message().find("the group was aborted"), std::string::npos) << after.to_string();
}

// run_ranks aborts the group for a failed rank itself, and reports that rank's failure rather
// than the kUnavailable of the ranks it freed, whatever their order.
TEST(RunRanksTest, AFailedRankFreesTheOthersAndItsErrorIsReported) {
  for (int failing = 0; failing < 3; ++failing) {
    auto group = make_host_collective(3);
    const Status status = run_ranks(3, group.get(), [&](int rank) {
      if (rank == failing) return internal_error("rank failed");
      torch::Tensor t = torch::ones({4});
      return group->all_reduce_sum(rank, t);
    });
    EXPECT_EQ(status.code(), StatusCode::kInternal)
        << "failing rank " << failing << ": " << status.to_string();
    EXPECT_EQ(status.message(), "rank failed") << "failing rank " << failing;
  }
  auto group = make_host_collective(2);
  std::vector<float> sums(2);
  EXPECT_TRUE(run_ranks(2, group.get(), [&](int rank) {
                torch::Tensor t = torch::full({1}, static_cast<float>(rank + 1));
                KEVIN_RETURN_IF_ERROR(group->all_reduce_sum(rank, t));
                sums[static_cast<size_t>(rank)] = t.item<float>();
                return Status::ok();
              }).is_ok());
  EXPECT_EQ(sums, (std::vector<float>{3.0f, 3.0f}));
}

TEST(HostCollectiveTest, BadRankIsAnError) {
  auto group = make_host_collective(2);
  torch::Tensor t = torch::ones({2});
  const Status st = group->all_reduce_sum(2, t);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("rank 2 out of range"), std::string::npos) << st.to_string();
}

TEST(NcclCollectiveTest, SumsOverTheVisibleGpus) {
  if (!nccl_available()) {
    EXPECT_EQ(make_nccl_collective({0}).status().code(), StatusCode::kFailedPrecondition);
    GTEST_SKIP() << "built without NCCL";
  }
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const int world = static_cast<int>(torch::cuda::device_count());
  std::vector<int> devices;
  for (int d = 0; d < world; ++d) devices.push_back(d);
  auto group = make_nccl_collective(devices);
  ASSERT_TRUE(group.is_ok()) << group.status().message();
  EXPECT_EQ(make_nccl_collective({0, 0}).status().code(), StatusCode::kInvalidArgument);
  std::vector<torch::Tensor> got(static_cast<size_t>(world));
  const auto statuses = on_ranks(world, [&](int rank) {
    const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(rank));
    for (auto type : {torch::kFloat32, torch::kBFloat16, torch::kFloat64}) {
      torch::Tensor t =
          torch::full({1 << 20}, rank + 1, torch::TensorOptions().dtype(type).device(device));
      KEVIN_RETURN_IF_ERROR((*group)->all_reduce_sum(rank, t));
      const double want = world * (world + 1) / 2.0;
      if (t.to(torch::kFloat64).cpu().ne(want).any().item<bool>())
        return internal_error("wrong NCCL sum");
      got[static_cast<size_t>(rank)] = t.cpu();
    }
    torch::Tensor host = torch::ones({4});
    if ((*group)->all_reduce_sum(rank, host).code() != StatusCode::kInvalidArgument)
      return internal_error("a CPU tensor was taken");
    return Status::ok();
  });
  for (const auto& s : statuses) EXPECT_TRUE(s.is_ok()) << s.message();
}

}  // namespace
}  // namespace kevin::train
