#include "exporter/notifier.h"

#include <systemd/sd-daemon.h>

namespace memcg::exporter {

Notifier::Notifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) watchdog_ = std::chrono::microseconds(usec);
}

void Notifier::ready(const std::string& status) { sd_notify(0, ("READY=1\nSTATUS=" + status).c_str()); }
void Notifier::reloading() { sd_notify(0, "RELOADING=1\nSTATUS=reloading configuration"); }
void Notifier::stopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }
void Notifier::after_pass(bool ping, const std::string& status) {
  ping = ping && watchdog_;
  if (!ping && status.empty()) return;
  std::string m = ping ? "WATCHDOG=1" : "";
  if (!status.empty()) m += (ping ? "\nSTATUS=" : "STATUS=") + status;
  sd_notify(0, m.c_str());
}
void Notifier::watchdog() {
  if (watchdog_) sd_notify(0, "WATCHDOG=1");
}

}  // namespace memcg::exporter
