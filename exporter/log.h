// Logging for the daemon (library code never logs). Lines go to stderr with the
// sd-daemon "<N>" priority prefix when stderr is the journal (JOURNAL_STREAM
// matches), so journald records the right priority; plain text otherwise.
#pragma once

#include <string>
#include <string_view>

#include "exporter/cli.h"

namespace memcg::exporter {

void set_log_level(LogLevel level) noexcept;
// What log() writes for a message: control characters (a newline in a cgroup
// name would forge a second log line) as \xNN, backslashes doubled so the
// escape is unambiguous, bytes that are not UTF-8 as \xNN too.
std::string escape_for_log(std::string_view message);
void log(LogLevel level, std::string_view message) noexcept;
bool log_enabled(LogLevel level) noexcept;  // a line at `level` would be written

inline void log_error(std::string_view m) noexcept { log(LogLevel::error, m); }
inline void log_warning(std::string_view m) noexcept { log(LogLevel::warning, m); }
inline void log_notice(std::string_view m) noexcept { log(LogLevel::notice, m); }
inline void log_info(std::string_view m) noexcept { log(LogLevel::info, m); }
inline void log_debug(std::string_view m) noexcept { log(LogLevel::debug, m); }

}  // namespace memcg::exporter
