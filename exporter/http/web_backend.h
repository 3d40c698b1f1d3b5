// What the HTTP handlers need from the daemon. Every method is called from
// the web server's worker threads (workers.h) and must not block on the
// collector.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "exporter/exposition/metrics.h"
#include "plugin/snapshot.h"

namespace memcg::exporter {

class WebBackend {
 public:
  virtual ~WebBackend() = default;
  virtual std::shared_ptr<const Snapshot> snapshot() const = 0;
  // The last snapshot built, without asking for a newer one (snapshot() may
  // have one built): for bookkeeping after a response.
  virtual std::shared_ptr<const Snapshot> latest_snapshot() const { return snapshot(); }
  virtual std::shared_ptr<const config::Config> config() const = 0;
  virtual DaemonStatus& status() = 0;
  virtual TimePoint now() const = 0;
  virtual bool healthy() const = 0;  // the collector loop is making progress
  virtual bool ready() const = 0;    // the first full pass is done
  // False when too many refreshes already wait for the next pass.
  virtual bool request_refresh(config::Glob glob) = 0;
};

}  // namespace memcg::exporter
