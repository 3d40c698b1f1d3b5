// Logging for the daemon (library code never logs). Lines go to stderr with the
// sd-daemon "<N>" priority prefix when stderr is the journal (JOURNAL_STREAM
// matches), so journald records the right priority; plain text otherwise.
#pragma once

#include <string_view>

#include "exporter/cli.h"

namespace memcg::exporter {

void set_log_level(LogLevel level) noexcept;
void log(LogLevel level, std::string_view message) noexcept;

inline void log_error(std::string_view m) noexcept { log(LogLevel::error, m); }
inline void log_warning(std::string_view m) noexcept { log(LogLevel::warning, m); }
inline void log_notice(std::string_view m) noexcept { log(LogLevel::notice, m); }
inline void log_info(std::string_view m) noexcept { log(LogLevel::info, m); }
inline void log_debug(std::string_view m) noexcept { log(LogLevel::debug, m); }

}  // namespace memcg::exporter
