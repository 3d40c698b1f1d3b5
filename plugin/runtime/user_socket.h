// Rootless podman: each user's engine listens on a socket of that user's
// (containers.podman_user_socket, "%U" standing for the uid); whose a
// container's cgroup is, is record_binding.h's cgroup_owner().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memcg::runtime {

// `pattern` with every "%U" replaced by `uid` and "%%" by "%" (systemd's
// specifier syntax); any other "%" is kept as it is.
std::string user_socket(std::string_view pattern, uint32_t uid);

}  // namespace memcg::runtime
