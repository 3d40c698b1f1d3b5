// The identity helper's mirror (record_mirror.h): the records directory
// follows containerd's containers, and the exporter's reader parses what it
// writes.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "plugin/runtime/oci_record.h"
#include "plugin/runtime/record_mirror.h"

namespace memcg::runtime {
namespace {

namespace fs = std::filesystem;

struct Dir {
  Dir() {
    char tmpl[] = "/tmp/memcg-mirror-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Dir() { fs::remove_all(path); }
  std::string file(const std::string& id) const { return path + "/" + id + ".json"; }
  std::string read(const std::string& id) const {
    std::ifstream in(file(id));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string path;
};

ContainerRecord record(const std::string& id, const std::string& name) {
  ContainerRecord r;
  r.id = id;
  r.name = name;
  r.pod = "shop-0";
  r.namespace_ = "shop";
  r.pod_uid = "0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f6";
  r.cgroups_path = "kubepods-burstable-pod0d3c6a1e_5b7f_4c2d_9e8f_a1b2c3d4e5f6.slice:cri-containerd:" + id;
  return r;
}

TEST(RecordMirror, TheDirectoryFollowsTheContainersAndTheReaderParsesIt) {
  Dir d;
  { std::ofstream(d.file("stale")) << "{}"; }  // an earlier run's container, gone since
  { std::ofstream(d.path + "/notes.txt") << "kept"; }
  RecordMirror m(d.path);
  RecordMap now{{"aaa", record("aaa", "web")}, {"bbb", record("bbb", "db")}};
  auto r = m.sync(now);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.written, 2u);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_FALSE(fs::exists(d.file("stale")));
  EXPECT_TRUE(fs::exists(d.path + "/notes.txt")) << "only record files are the mirror's";
  std::string err;
  const auto back = parse_record(d.read("aaa"), err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(*back, now.at("aaa"));

  r = m.sync(now);
  EXPECT_EQ(r.written + r.removed, 0u) << "nothing changed, nothing written";
  now.at("bbb").name = "db-2";
  now.erase("aaa");
  r = m.sync(now);
  EXPECT_EQ(r.written, 1u);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_FALSE(fs::exists(d.file("aaa")));
  EXPECT_EQ(parse_record(d.read("bbb"), err)->name, "db-2");
}

TEST(RecordMirror, AFailureIsReportedWithItsPathAndRetriedAtTheNextSync) {
  Dir d;
  const std::string blocked = d.path + "/records";
  { std::ofstream(blocked) << "not a directory"; }
  RecordMirror m(blocked);
  RecordMap now{{"aaa", record("aaa", "web")}};
  auto r = m.sync(now);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors.back().find(blocked), std::string::npos) << r.errors.back();
  fs::remove(blocked);
  r = m.sync(now);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.written, 1u);
  EXPECT_TRUE(fs::exists(blocked + "/aaa.json"));
}

}  // namespace
}  // namespace memcg::runtime
