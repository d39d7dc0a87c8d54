// grpo_test.cpp — the GRPO loss against hand-computed values: clipping on both sides,
// the k3 KL term, the three normalisations, and exact gradient accumulation.
#include "train/grpo/grpo.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kevin::train {
namespace {

GrpoInputs inputs(std::vector<float> delta, std::vector<float> advantages, std::vector<float> mask,
                  int64_t n) {
  const int64_t t = static_cast<int64_t>(delta.size()) / n;
  GrpoInputs in;
  in.old_logprobs = torch::full({n, t}, -1.0f);
  in.logprobs = (in.old_logprobs + torch::tensor(delta).view({n, t})).detach().requires_grad_(true);
  in.ref_logprobs = in.old_logprobs.clone();
  in.advantages = torch::tensor(advantages);
  in.mask = torch::tensor(mask).view({n, t});
  return in;
}

TEST(Grpo, ClipsEachSideAsConfigured) {
  // ratios 1.5 (A = +1 → capped at 1.28), 0.5 (A = −1 → min(−0.5, −0.8) = −0.8),
  // 1.1 (A = +1 → 1.1), 0.9 (A = −1 → −0.9).
  auto in = inputs({std::log(1.5f), std::log(0.5f), std::log(1.1f), std::log(0.9f)}, {1, -1, 1, -1},
                   {1, 1, 1, 1}, 4);
  const auto r = grpo_loss(in, {}, {4, 4, 1});
  EXPECT_NEAR(r.loss.item<double>(), -(1.28 - 0.8 + 1.1 - 0.9) / 4.0, 1e-6);
  EXPECT_NEAR(r.clipped_fraction, 0.5, 1e-12);
}

TEST(Grpo, NormalisationsDivideAsDocumented) {
  // Two sequences, T = 3: lengths 1 and 3, ratio 1, advantages 2 and −1: per-token l = A.
  auto in = inputs({0, 0, 0, 0, 0, 0}, {2, -1}, {1, 0, 0, 1, 1, 1}, 2);
  const BatchShape batch{2, 4, 8};
  GrpoConfig c;
  c.norm = LengthNorm::kConstant;
  EXPECT_NEAR(grpo_loss(in, c, batch).loss.item<double>(), -(2.0 - 3.0) / 16.0, 1e-7);
  c.norm = LengthNorm::kPerSequence;
  EXPECT_NEAR(grpo_loss(in, c, batch).loss.item<double>(), -(2.0 / 1 + -3.0 / 3) / 2.0, 1e-7);
  c.norm = LengthNorm::kTokenMean;
  EXPECT_NEAR(grpo_loss(in, c, batch).loss.item<double>(), -(2.0 - 3.0) / 4.0, 1e-7);
}

TEST(Grpo, KlTermIsK3) {
  auto in = inputs({0.5f}, {0}, {1}, 1);
  GrpoConfig c;
  c.kl_beta = 0.1;
  c.norm = LengthNorm::kTokenMean;
  const auto r = grpo_loss(in, c, {1, 1, 1});
  const double d = -0.5;  // ref − logp
  const double k3 = std::exp(d) - d - 1;
  EXPECT_NEAR(r.kl, k3, 1e-6);
  EXPECT_NEAR(r.loss.item<double>(), 0.1 * k3, 1e-6);
}

TEST(Grpo, MicroBatchesAccumulateTheWholeBatchGradient) {
  for (const LengthNorm norm :
       {LengthNorm::kConstant, LengthNorm::kPerSequence, LengthNorm::kTokenMean}) {
    GrpoConfig c;
    c.norm = norm;
    torch::manual_seed(7);
    const auto delta = torch::randn({4, 5}) * 0.3;
    const auto adv = torch::randn({4});
    const auto mask = (torch::rand({4, 5}) > 0.3).to(torch::kFloat32);
    const BatchShape batch{4, mask.sum().item<int64_t>(), 5};
    const auto run = [&](int64_t begin, int64_t count, torch::Tensor* grad) {
      GrpoInputs in;
      in.old_logprobs = torch::full({count, 5}, -2.0f);
      in.logprobs = (in.old_logprobs + delta.narrow(0, begin, count)).detach().requires_grad_(true);
      in.advantages = adv.narrow(0, begin, count);
      in.mask = mask.narrow(0, begin, count);
      auto r = grpo_loss(in, c, batch);
      r.loss.backward();
      *grad = in.logprobs.grad();
      return r.loss.item<double>();
    };
    torch::Tensor whole_grad, g1, g2;
    const double whole = run(0, 4, &whole_grad);
    const double parts = run(0, 2, &g1) + run(2, 2, &g2);
    EXPECT_NEAR(whole, parts, 1e-6);
    EXPECT_TRUE(torch::allclose(whole_grad, torch::cat({g1, g2}), 1e-6, 1e-7));
  }
}

TEST(Grpo, NormNames) {
  EXPECT_EQ(length_norm_from_name("constant"), LengthNorm::kConstant);
  EXPECT_EQ(length_norm_from_name("sequence"), LengthNorm::kPerSequence);
  EXPECT_EQ(length_norm_from_name("token"), LengthNorm::kTokenMean);
  EXPECT_FALSE(length_norm_from_name("mean").has_value());
  for (const LengthNormName& n : kLengthNormNames)  // every row reads back as itself
    EXPECT_EQ(length_norm_from_name(length_norm_name(n.norm)), n.norm) << n.name;
  EXPECT_EQ(length_norm_names(), "constant, sequence or token");
}

}  // namespace
}  // namespace kevin::train
