// The long-running mode: the collector loop, signals, reload.
#pragma once

#include <string>

#include "config/config.h"
#include "exporter/cli.h"
#include "plugin/cgroupfs/rlimit.h"

namespace memcg::exporter {

int run_daemon(const Options& opts, config::Config cfg, const std::string& root, const cgroupfs::FdLimit& fds);

}  // namespace memcg::exporter
