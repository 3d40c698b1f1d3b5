// systemd service notifications (sd_notify). Every call is a no-op when the
// service was not started by systemd (NOTIFY_SOCKET unset).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace memcg::exporter {

class Notifier {
 public:
  Notifier();
  void ready(const std::string& status);
  void reloading();
  void stopping();
  void watchdog();
  // After a pass, what is due in one datagram: the watchdog ping, the status
  // line (empty: not due), or both.
  void after_pass(bool ping, const std::string& status);
  // The watchdog interval when systemd asked for pings (WATCHDOG_USEC for this pid).
  std::optional<std::chrono::microseconds> watchdog_interval() const noexcept { return watchdog_; }

 private:
  std::optional<std::chrono::microseconds> watchdog_;
};

}  // namespace memcg::exporter
