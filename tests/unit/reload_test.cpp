// What a SIGHUP does with the configuration file (exporter/setup.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "exporter/setup.h"

namespace memcg::exporter {
namespace {

struct TempConfig {
  std::string path;
  TempConfig() {
    char tmpl[] = "/tmp/memcg-reload-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) ::close(fd);
    path = tmpl;
  }
  ~TempConfig() { ::unlink(path.c_str()); }
  void write(const std::string& text) const { std::ofstream(path) << text; }
};

TEST(Reload, AValidFileReplacesTheConfigurationAndNamesWhatNeedsARestart) {
  TempConfig f;
  f.write("[web]\nlisten = [\":9999\"]\nmax_connections = 4\n[defaults]\nmax_age = \"42s\"\n");
  const auto running = config::Config::builtin({4096, 2});
  Reload r = reload_config(f.path, {}, running);
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->defaults.max_age, std::chrono::seconds(42));
  EXPECT_EQ(r.restart_needed, "web.listen, web.max_connections");
  // --web.listen-address wins over the file, as at startup: no restart for it.
  r = reload_config(f.path, {":9756"}, running);
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->web.listen, std::vector<std::string>{":9756"});
  EXPECT_EQ(r.restart_needed, "web.max_connections");
}

TEST(Reload, ABrokenOrMissingFileKeepsTheRunningConfigurationWithItsPosition) {
  TempConfig f;
  f.write("[defaults]\nmax_age = \"soon\"\n");
  const auto running = config::Config::builtin({4096, 2});
  Reload r = reload_config(f.path, {}, running);
  EXPECT_FALSE(r.config);
  EXPECT_EQ(r.error.rfind(f.path + ":2:11: defaults.max_age: invalid duration", 0), 0u) << r.error;
  ::unlink(f.path.c_str());
  r = reload_config(f.path, {}, running);
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("cannot open"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace memcg::exporter
