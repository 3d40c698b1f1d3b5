#include "exporter/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "plugin/utf8.h"

namespace memcg::exporter {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::info)};

// systemd sets JOURNAL_STREAM=<dev>:<ino> for a unit whose stderr is the
// journal; comparing it with fstat(2) tells whether that is still our stderr.
bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st{};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::notice: return "notice";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "info";
}

}  // namespace

void set_log_level(LogLevel level) noexcept { g_level.store(static_cast<int>(level)); }

std::string escape_for_log(std::string_view m) {
  std::string out;
  out.reserve(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const auto c = static_cast<unsigned char>(m[i]);
    if (c >= 0x80) {
      if (const size_t len = utf8_sequence_length(m, i); len > 0) {
        out.append(m.substr(i, len));
        i += len - 1;
        continue;
      }
    } else if (!is_control(c)) {
      if (c == '\\') out.push_back('\\');
      out.push_back(static_cast<char>(c));
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out.append("\\x").push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

bool log_enabled(LogLevel level) noexcept { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

void log(LogLevel level, std::string_view message) noexcept {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed)) return;
  static const bool journal = stderr_is_journal();
  static std::mutex mu;
  std::string line;
  try {
    if (journal)
      line = "<" + std::to_string(static_cast<int>(level)) + ">";
    else
      line = std::string("level=") + level_name(level) + " ";
    line.append(escape_for_log(message));  // every log call, one place
    line.push_back('\n');
  } catch (...) {
    return;
  }
  std::lock_guard lock(mu);
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace memcg::exporter
