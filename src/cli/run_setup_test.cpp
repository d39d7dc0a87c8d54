// run_setup_test.cpp — the device selection of the engine settings: --devices values, the
// "devices"/"device" JSON keys, and the errors for bad ones.
#include "cli/run_setup.h"

#include <gtest/gtest.h>

namespace kevin::cli {
namespace {

TEST(ParseDevicesTest, AllIsEveryVisibleGpu) {
  auto all = parse_devices("all");
  ASSERT_TRUE(all.is_ok());
  EXPECT_TRUE(all->empty());
}

TEST(ParseDevicesTest, ListsOrdinals) {
  auto d = parse_devices("0,2, 3");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(*d, (std::vector<int>{0, 2, 3}));
}

TEST(ParseDevicesTest, RejectsWhatIsNotAnOrdinal) {
  for (const char* bad : {"", "gpu0", "1.5", "-1", "0,,x", ","}) {
    auto d = parse_devices(bad);
    ASSERT_FALSE(d.is_ok()) << '"' << bad << "\" was accepted";
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ResolveEngineJsonTest, DefaultsToEveryGpu) {
  auto e = resolve_engine_json(Json::object());
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_EQ((*e)["devices"], "all");
}

TEST(ResolveEngineJsonTest, AcceptsAnOrdinalAListOrTheOlderDeviceKey) {
  auto list = resolve_engine_json({{"devices", {0, 1}}});
  ASSERT_TRUE(list.is_ok()) << list.status().message();
  EXPECT_EQ((*list)["devices"], Json({0, 1}));
  auto one = resolve_engine_json({{"device", 3}});
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  EXPECT_EQ((*one)["devices"], 3);
  EXPECT_TRUE(resolve_engine_json({{"devices", "1,2"}}).is_ok());
}

TEST(ResolveEngineJsonTest, RejectsBadDeviceSettings) {
  EXPECT_FALSE(resolve_engine_json({{"devices", "some"}}).is_ok());
  EXPECT_FALSE(resolve_engine_json({{"devices", Json::array()}}).is_ok());
  EXPECT_FALSE(resolve_engine_json({{"devices", {0, -1}}}).is_ok());
  EXPECT_FALSE(resolve_engine_json({{"device", 0}, {"devices", "all"}}).is_ok());
}

TEST(EngineJson, AQueueChoosesTheBackendByItsModelAndRefusesMismatches) {
  auto cuda = resolve_engine_json({{"queue", "redis://127.0.0.1:6379"}});
  ASSERT_TRUE(cuda.is_ok()) << cuda.status().to_string();
  EXPECT_EQ((*cuda)["backend"], "cuda") << "workers judge: this machine's GPUs do not decide";
  auto cpu = resolve_engine_json({{"queue", "redis://127.0.0.1:6379"}, {"queue_model", "CPU"}});
  ASSERT_TRUE(cpu.is_ok());
  EXPECT_EQ((*cpu)["backend"], "cpu");
  EXPECT_EQ(resolve_engine_json({{"queue_model", "cpu"}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolve_engine_json({{"queue", "redis://h"}, {"backend", "cpu"}, {"queue_model", "NVIDIA H200"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(resolve_engine_json({{"queue", "redis://h"}, {"backend", "cuda"}, {"queue_model", "cpu"}}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kevin::cli
