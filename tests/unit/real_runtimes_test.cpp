// What real runtimes produced in the runtimes VM (tests/vm/run-runtimes.sh:
// Debian 12's podman 4.3.1, docker.io 20.10.24, containerd 1.6.20,
// systemd 252's nspawn), replayed: the cgroup paths they created and what
// podman's createRuntime hook received (state on stdin, the bundle's
// config.json), captured by a second hook next to the package's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "plugin/runtime/identity.h"
#include "plugin/runtime/oci_record.h"

namespace memcg::runtime {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(MEMCG_FIXTURE_DIR) + "/runtimes/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

struct RealPath {
  const char* path;
  const char* runtime;
  const char* id;
};

// Paths as the VM's cgroupfs showed them, with the ids the runtimes reported
// (podman ps --no-trunc, docker ps --no-trunc, ctr c ls, machinectl list).
constexpr RealPath kRealPaths[] = {
    {"machine.slice/libpod-4e7da2efcf19a0f30ba347e128b16cacae621fe522bb9c205d745f0cfda4de87.scope", "podman",
     "4e7da2efcf19a0f30ba347e128b16cacae621fe522bb9c205d745f0cfda4de87"},
    {"libpod_parent/libpod-136738ba961e00ac0949b50d16238144e8eec00e303a7f80235c30e2f7f8e86a", "podman",
     "136738ba961e00ac0949b50d16238144e8eec00e303a7f80235c30e2f7f8e86a"},
    {"user.slice/user-1000.slice/user@1000.service/user.slice/"
     "libpod-007f86594b72434681e3a72b37d8b8fe1f1a0c818106d304009380a991ede2ef.scope",
     "podman", "007f86594b72434681e3a72b37d8b8fe1f1a0c818106d304009380a991ede2ef"},  // rootless
    {"default/ctr-memcg-test", "containerd", "ctr-memcg-test"},                         // ctr run, its default cgroup
    {"system.slice/cri-containerd-5566a66b601e66aef48522b0f6cb8f96d107313f3bcc5e1e98a856224df19d35.scope",
     "containerd", "5566a66b601e66aef48522b0f6cb8f96d107313f3bcc5e1e98a856224df19d35"},  // ctr --runc-systemd-cgroup
    {"machine.slice/machine-memcg\\x2dscope.scope", "systemd-nspawn", "memcg-scope"},
    {"machine.slice/systemd-nspawn@memcg-service.service/payload", "systemd-nspawn", "memcg-service"},
};

TEST(RealRuntimes, PathsTheRuntimesCreatedAreRecognised) {
  for (const auto& p : kRealPaths) {
    const Identity id = identify(p.path);
    EXPECT_EQ(id.runtime, p.runtime) << p.path;
    EXPECT_EQ(id.container_id, p.id) << p.path;
  }
  // What sits next to them is not a container.
  for (const char* other : {"machine.slice/systemd-nspawn@memcg-service.service/supervisor", "libpod_parent",
                            "machine.slice", "system.slice/containerd.service", "system.slice/docker.service",
                            "default", "default/a/b", "default/-x", "default/a..b", "other/ctr-memcg-test"})
    EXPECT_EQ(identify(other).container_id, "") << other;
}

TEST(RealRuntimes, PodmansHookInputBindsTheRecordToItsCgroupOnly) {
  struct Case {
    const char* driver;
    const char* cgroup;
  } cases[] = {{"systemd", kRealPaths[0].path}, {"cgroupfs", kRealPaths[1].path}};
  for (const auto& c : cases) {
    const std::string state_json = fixture(std::string("podman-4.3-") + c.driver + "-state.json");
    const std::string config_json = fixture(std::string("podman-4.3-") + c.driver + "-config.json");
    std::string err;
    auto state = parse_oci_state(state_json, err);
    ASSERT_TRUE(state) << c.driver << ": " << err;
    EXPECT_EQ(state->status, "created");
    EXPECT_GT(state->pid, 0);
    auto rec = record_from_config(*state, config_json, err);
    ASSERT_TRUE(rec) << c.driver << ": " << err;
    EXPECT_EQ(rec->id, identify(c.cgroup).container_id) << c.driver;
    // podman 4.3 puts neither the name nor the image in the OCI state or
    // config.json (its annotations are io.podman.annotations.*): names come
    // from the Engine API (containers.podman_socket).
    EXPECT_EQ(rec->name, "") << c.driver;
    EXPECT_EQ(rec->image, "") << c.driver;
    EXPECT_TRUE(cgroups_path_names(rec->cgroups_path, c.cgroup)) << c.driver << " " << rec->cgroups_path;
    EXPECT_FALSE(cgroups_path_names(rec->cgroups_path, std::string(c.cgroup) + "/libpod-" + rec->id + ".scope"))
        << c.driver;

    // The hook itself, fed the real input with the bundle moved to a temp dir.
    const fs::path dir = fs::temp_directory_path() / ("memcg-real-hook-" + std::to_string(::getpid()) + c.driver);
    fs::remove_all(dir);
    fs::create_directories(dir / "bundle");
    std::ofstream(dir / "bundle" / "config.json") << config_json;
    std::string moved = state_json;
    const size_t b = moved.find(state->bundle);
    ASSERT_NE(b, std::string::npos);
    moved.replace(b, state->bundle.size(), (dir / "bundle").string());
    EXPECT_EQ(run_hook("createRuntime", moved, (dir / "records").string()), "");
    std::string rerr;
    std::ifstream in(dir / "records" / (rec->id + ".json"));
    std::stringstream ss;
    ss << in.rdbuf();
    auto stored = parse_record(ss.str(), rerr);
    ASSERT_TRUE(stored) << rerr;
    EXPECT_EQ(*stored, *rec);
    EXPECT_EQ(run_hook("poststop", moved, (dir / "records").string()), "");
    EXPECT_FALSE(fs::exists(dir / "records" / (rec->id + ".json")));
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace memcg::runtime
