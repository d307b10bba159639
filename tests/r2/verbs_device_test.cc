// Device selection and the "no device" error of the verbs backend. On a
// machine without an RDMA device make_verbs_fabric must fail cleanly with a
// message naming --fabric=shm and the Soft-RoCE recipe.
#include "r2/verbs/verbs_device.h"

#include <gtest/gtest.h>

#include "r2/verbs/device_select.h"
#include "r2/verbs/verbs_fabric.h"

namespace drtmx::r2::verbs {
namespace {

bool mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

TEST(VerbsDevice, NoDevicesIsUnavailableWithRecipe) {
  auto r = choose_device({}, "");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_TRUE(mentions(r.status(), "--fabric=shm")) << r.status().message();
  EXPECT_TRUE(mentions(r.status(), "rdma link add rxe0 type rxe netdev IFACE"));
  auto named = choose_device({}, "mlx5_0");
  ASSERT_FALSE(named.is_ok());
  EXPECT_EQ(named.status().code(), Code::kUnavailable);
  EXPECT_TRUE(mentions(named.status(), "mlx5_0"));
}

TEST(VerbsDevice, FirstDeviceByDefault) {
  auto r = choose_device({"mlx5_0", "mlx5_1"}, "");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, 0u);
  auto n = choose_device({"mlx5_0", "rxe0"}, "rxe0");
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(*n, 1u);
}

TEST(VerbsDevice, UnknownDeviceListsTheFoundOnes) {
  auto r = choose_device({"mlx5_0", "mlx5_1"}, "rxe0");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_TRUE(mentions(r.status(), "--device=rxe0"));
  EXPECT_TRUE(mentions(r.status(), "mlx5_0, mlx5_1")) << r.status().message();
}

TEST(VerbsDevice, MtuBytes) {
  EXPECT_EQ(mtu_bytes(IBV_MTU_256), 256u);
  EXPECT_EQ(mtu_bytes(IBV_MTU_1024), 1024u);
  EXPECT_EQ(mtu_bytes(IBV_MTU_4096), 4096u);
}

FabricConfig verbs_config() {
  FabricConfig cfg;
  cfg.backend = "verbs";
  return cfg;
}

TEST(VerbsDevice, MakeFabricWithoutDeviceFailsClearly) {
  if (!probe_devices().names.empty()) GTEST_SKIP() << "an RDMA device exists on this machine";
  auto f = make_verbs_fabric(verbs_config());
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), Code::kUnavailable);
  EXPECT_TRUE(mentions(f.status(), "--fabric=shm")) << f.status().message();
  EXPECT_TRUE(mentions(f.status(), "rxe")) << f.status().message();
  EXPECT_TRUE(mentions(f.status(), "rdma link add rxe0 type rxe netdev IFACE"));
}

TEST(VerbsDevice, MakeFabricWithNamedMissingDevice) {
  auto cfg = verbs_config();
  cfg.device = "no_such_dev9";
  auto f = make_verbs_fabric(cfg);
  ASSERT_FALSE(f.is_ok());
  if (probe_devices().names.empty()) {
    EXPECT_EQ(f.status().code(), Code::kUnavailable);
    EXPECT_TRUE(mentions(f.status(), "--fabric=shm"));
  } else {
    EXPECT_EQ(f.status().code(), Code::kNotFound);
    EXPECT_TRUE(mentions(f.status(), "devices found"));
  }
  EXPECT_TRUE(mentions(f.status(), "no_such_dev9")) << f.status().message();
}

TEST(VerbsDevice, MakeFabricRefusesABadConfig) {
  auto cfg = verbs_config();
  cfg.threads = 0;
  auto f = make_verbs_fabric(cfg);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace drtmx::r2::verbs
