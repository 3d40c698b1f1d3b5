// Loads the TOML configuration. Every problem (syntax, unknown key, wrong type,
// bad duration/size/glob) throws ConfigError with the file, line and column of
// the offending value and its dotted key path.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"

namespace memcg::config {

Config load_file(const std::string& path, const HostFacts& host);
Config load_string(std::string_view text, const std::string& source_name, const HostFacts& host);

// Human-readable effective configuration (what --check-config prints).
std::string describe(const Config& config);

}  // namespace memcg::config
