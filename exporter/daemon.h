// The long-running mode: the collector loop, signals, reload.
#pragma once

#include <string>

#include "config/config.h"
#include "exporter/cli.h"
#include "exporter/http/web_config.h"
#include "plugin/cgroupfs/rlimit.h"
#include "plugin/clock.h"

namespace memcg::exporter {

// web_file: the loaded --web.config.file, or null. Every time the loop, the
// collector and the HTTP side use comes from `clock`; the loop's decisions
// (exporter/schedule.h, reload_config in setup.h) are unit-tested on their own.
int run_daemon(const Options& opts, config::Config cfg, const std::string& root, const cgroupfs::FdLimit& fds,
               const WebConfigFile* web_file = nullptr, Clock& clock = Clock::system());

}  // namespace memcg::exporter
