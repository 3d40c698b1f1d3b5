// Rootless podman: each user's engine listens on a socket of that user's
// (containers.podman_user_socket, "%U" standing for the uid), and a
// container's cgroup says whose it is: it sits under the user's systemd
// instance, user@UID.service. Pure functions of the path and the pattern.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memcg::runtime {

// The uid of the innermost "user@<uid>.service" component of a cgroup path,
// or nullopt when the cgroup is not under a user's systemd instance.
std::optional<uint32_t> user_instance_uid(std::string_view path) noexcept;

// `pattern` with every "%U" replaced by `uid` and "%%" by "%" (systemd's
// specifier syntax); any other "%" is kept as it is.
std::string user_socket(std::string_view pattern, uint32_t uid);

}  // namespace memcg::runtime
