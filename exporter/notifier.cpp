#include "exporter/notifier.h"

#include <systemd/sd-daemon.h>

namespace memcg::exporter {

Notifier::Notifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) watchdog_ = std::chrono::microseconds(usec);
}

void Notifier::ready(const std::string& status) { sd_notify(0, ("READY=1\nSTATUS=" + status).c_str()); }
void Notifier::status(const std::string& status) { sd_notify(0, ("STATUS=" + status).c_str()); }
void Notifier::reloading() { sd_notify(0, "RELOADING=1\nSTATUS=reloading configuration"); }
void Notifier::stopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }
void Notifier::watchdog() {
  if (watchdog_) sd_notify(0, "WATCHDOG=1");
}

}  // namespace memcg::exporter
