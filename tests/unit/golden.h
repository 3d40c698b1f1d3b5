// Golden-file comparison shared by the tests. With MEMCG_UPDATE_GOLDEN set the
// file is rewritten instead (review the diff before committing it).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace memcg::testing {

inline void compare_with_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(MEMCG_GOLDEN_DIR) + "/" + name;
  if (std::getenv("MEMCG_UPDATE_GOLDEN")) {
    std::ofstream(path) << actual;
    GTEST_SKIP() << "updated " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path << " (run with MEMCG_UPDATE_GOLDEN=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(actual, ss.str()) << name << " differs; regenerate with MEMCG_UPDATE_GOLDEN=1 if the change is intended";
}

}  // namespace memcg::testing
