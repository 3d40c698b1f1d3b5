#include "plugin/runtime/oci_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "plugin/json_writer.h"
#include "plugin/runtime/bounded_json.h"
#include "plugin/runtime/identity.h"
#include "plugin/utf8.h"
#include "base/sys/unique_fd.h"

namespace memcg::runtime {
namespace {

// Whether `path` is `last` or ends in "/last".
bool ends_with_component_of(std::string_view path, std::string_view last) noexcept {
  return path == last || (path.size() > last.size() && path.ends_with(last) && path[path.size() - last.size() - 1] == '/');
}


using json = nlohmann::json;

// Annotation keys, most specific first. Kubernetes (kubelet via CRI-O and
// containerd), containerd's CRI plugin, CRI-O's own, and the OCI image spec.
constexpr const char* kNameKeys[] = {"io.kubernetes.container.name", "io.kubernetes.cri.container-name",
                                     "io.kubernetes.cri-o.ContainerName", "nerdctl/name"};
constexpr const char* kImageKeys[] = {"io.kubernetes.cri.image-name", "io.kubernetes.cri-o.ImageName",
                                      "org.opencontainers.image.ref.name"};
constexpr const char* kPodKeys[] = {"io.kubernetes.pod.name", "io.kubernetes.cri.sandbox-name"};
constexpr const char* kNamespaceKeys[] = {"io.kubernetes.pod.namespace", "io.kubernetes.cri.sandbox-namespace"};
constexpr const char* kPodUidKeys[] = {"io.kubernetes.pod.uid", "io.kubernetes.cri.sandbox-uid"};
// The sandbox's markers: key and the value that means "sandbox".
constexpr std::pair<const char*, const char*> kSandboxMarks[] = {
    {"io.cri-containerd.kind", "sandbox"}, {"io.kubernetes.cri.container-type", "sandbox"},
    {"io.kubernetes.cri-o.ContainerType", "sandbox"}, {"io.kubernetes.docker.type", "podsandbox"}};

template <size_t N>
void take(const json& ann, const char* const (&keys)[N], std::string& out) {
  if (!out.empty()) return;
  for (const char* k : keys) {
    auto it = ann.find(k);
    const std::string* v = it != ann.end() ? it->get_ptr<const std::string*>() : nullptr;
    if (v != nullptr && !v->empty()) {
      out = clean_value(*v);
      return;
    }
  }
}

void from_annotations(const json& doc, ContainerRecord& r) {
  auto it = doc.find("annotations");
  if (it == doc.end() || !it->is_object()) return;
  fill_from_annotations(*it, r);
}

std::string errno_text(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

// Reads a regular file (no symlink) of at most `max` bytes.
bool read_small_file(const std::string& path, size_t max, std::string& out, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    error = errno_text("open", path);
    return false;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > max) {
    error = path + ": not a regular file of at most " + std::to_string(max) + " bytes";
    ::close(fd);
    return false;
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  ::close(fd);
  return true;
}

}  // namespace

void fill_from_annotations(const nlohmann::json& ann, ContainerRecord& r) {
  if (!ann.is_object()) return;
  take(ann, kNameKeys, r.name);
  take(ann, kImageKeys, r.image);
  take(ann, kPodKeys, r.pod);
  take(ann, kNamespaceKeys, r.namespace_);
  std::string uid;
  take(ann, kPodUidKeys, uid);
  if (r.pod_uid.empty()) r.pod_uid = canonical_uuid(uid);
  for (auto [key, value] : kSandboxMarks)
    if (auto it = ann.find(key); it != ann.end() && it->is_string() && it->get_ref<const std::string&>() == value) r.sandbox = true;
}

bool valid_container_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 128 || id.front() == '.') return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

std::optional<OciState> parse_oci_state(std::string_view s, std::string& error) {
  auto j = parse_bounded_object(s, kMaxStateBytes, "OCI state", error);
  if (!j) return std::nullopt;
  OciState st;
  st.id = json_string(*j, "id");
  st.bundle = json_string(*j, "bundle");
  st.status = json_string(*j, "status");
  if (auto it = j->find("pid"); it != j->end() && it->is_number_integer()) st.pid = it->get<int64_t>();
  if (!valid_container_id(st.id)) {
    error = "OCI state has no usable container id";
    return std::nullopt;
  }
  st.annotations.id = st.id;
  from_annotations(*j, st.annotations);
  return st;
}

std::optional<ContainerRecord> record_from_config(const OciState& state, std::string_view config_json, std::string& error) {
  auto j = parse_bounded_object(config_json, kMaxConfigBytes, "config.json", error);
  if (!j) return std::nullopt;
  ContainerRecord r = state.annotations;
  from_annotations(*j, r);
  if (auto linux_it = j->find("linux"); linux_it != j->end() && linux_it->is_object())
    r.cgroups_path = clean_value(json_string(*linux_it, "cgroupsPath"));
  return r;
}

std::string render_record(const ContainerRecord& r) {
  std::string out;
  JsonWriter w(out, false);
  w.begin_object();
  w.key("id").value(r.id).key("name").value(r.name).key("image").value(r.image).key("pod").value(r.pod);
  w.key("namespace").value(r.namespace_).key("pod_uid").value(r.pod_uid).key("cgroups_path").value(r.cgroups_path);
  if (r.sandbox) w.key("sandbox").value(true);  // absent = false: records written before it read the same
  w.end_object();
  out.push_back('\n');
  return out;
}

std::optional<ContainerRecord> parse_record(std::string_view s, std::string& error) {
  auto j = parse_bounded_object(s, kMaxRecordBytes, "record", error);
  if (!j) return std::nullopt;
  ContainerRecord r{clean_value(json_string(*j, "id")), clean_value(json_string(*j, "name")), clean_value(json_string(*j, "image")), clean_value(json_string(*j, "pod")),
                    clean_value(json_string(*j, "namespace")), canonical_uuid(json_string(*j, "pod_uid")), clean_value(json_string(*j, "cgroups_path"))};
  if (auto it = j->find("sandbox"); it != j->end() && it->is_boolean()) r.sandbox = it->get<bool>();
  if (!valid_container_id(r.id)) {
    error = "record has no usable container id";
    return std::nullopt;
  }
  return r;
}

bool cgroups_path_names(std::string_view cp, std::string_view cgroup) noexcept {
  if (cp.empty()) return true;
  const auto ends_with_component = [&](std::string_view tail) { return ends_with_component_of(cgroup, tail); };
  if (cp.front() != '/' && cp.find('/') == std::string_view::npos) {
    const size_t c1 = cp.find(':'), c2 = c1 == std::string_view::npos ? c1 : cp.find(':', c1 + 1);
    if (c2 == std::string_view::npos || cp.find(':', c2 + 1) != std::string_view::npos) return false;
    const std::string_view slice = cp.substr(0, c1), prefix = cp.substr(c1 + 1, c2 - c1 - 1), name = cp.substr(c2 + 1);
    if (slice.empty() || name.empty()) return false;
    if (ends_with_component(cp)) return true;  // applied literally, without systemd
    // SLICE/PREFIX-NAME.scope (an empty prefix: NAME.scope).
    const size_t scope_len = (prefix.empty() ? 0 : prefix.size() + 1) + name.size() + 6;
    if (cgroup.size() < scope_len + slice.size() + 1 || !cgroup.ends_with(".scope")) return false;
    const std::string_view scope = cgroup.substr(cgroup.size() - scope_len);
    if ((!prefix.empty() && (!scope.starts_with(prefix) || scope[prefix.size()] != '-')) ||
        scope.substr(prefix.empty() ? 0 : prefix.size() + 1, name.size()) != name)
      return false;
    const std::string_view parent = cgroup.substr(0, cgroup.size() - scope_len - 1);
    return cgroup[cgroup.size() - scope_len - 1] == '/' && ends_with_component_of(parent, slice);
  }
  while (!cp.empty() && cp.front() == '/') cp.remove_prefix(1);
  while (!cp.empty() && cp.back() == '/') cp.remove_suffix(1);
  return !cp.empty() && ends_with_component(cp);
}

std::string remove_record_file(const std::string& dir, std::string_view id) {
  // The directory is opened without following a symlink: the daemon's
  // (unprivileged) user owns it, and must not be able to point a root-run
  // writer at another directory to unlink in.
  const sys::UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dfd.valid()) return errno == ENOENT ? std::string() : errno_text("open", dir);
  const std::string name = std::string(id) + ".json";
  if (::unlinkat(dfd.get(), name.c_str(), 0) != 0 && errno != ENOENT) return errno_text("unlink", dir + "/" + name);
  return {};
}

std::string write_record_file(const std::string& dir, const ContainerRecord& record) {
  if (!valid_container_id(record.id)) return "ignored: the record has no usable container id";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return errno_text("mkdir", dir);
  const sys::UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dfd.valid()) return errno_text("open", dir);
  const std::string name = record.id + ".json", tmp = "." + name + "." + std::to_string(::getpid());
  const std::string body = render_record(record);
  const sys::UniqueFd fd(::openat(dfd.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) return errno_text("create", dir + "/" + tmp);
  std::string result;
  if (::write(fd.get(), body.data(), body.size()) != static_cast<ssize_t>(body.size())) {
    if (errno == 0) errno = EIO;
    result = errno_text("write", dir + "/" + tmp);
  } else if (::renameat(dfd.get(), tmp.c_str(), dfd.get(), name.c_str()) != 0) {
    result = errno_text("rename", dir + "/" + name);
  }
  if (!result.empty()) ::unlinkat(dfd.get(), tmp.c_str(), 0);
  return result;
}

std::string run_hook(std::string_view stage, std::string_view state_json, const std::string& dir) {
  std::string error;
  auto state = parse_oci_state(state_json, error);
  if (!state) return "ignored: " + error;
  if (stage == "poststop") return remove_record_file(dir, state->id);
  if (stage != "createRuntime" && stage != "prestart" && stage != "createContainer")
    return "ignored: unknown hook stage \"" + clean_value(stage) + "\"";
  std::string config;
  if (state->bundle.empty() || state->bundle.front() != '/') return "ignored: OCI state has no absolute bundle path";
  if (!read_small_file(state->bundle + "/config.json", kMaxConfigBytes, config, error)) return "ignored: " + error;
  auto record = record_from_config(*state, config, error);
  if (!record) return "ignored: " + error;
  return write_record_file(dir, *record);
}

}  // namespace memcg::runtime
