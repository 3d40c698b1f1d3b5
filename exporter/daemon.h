// The long-running mode: the collector loop, signals, reload.
#pragma once

#include <string>

#include "config/config.h"
#include "exporter/cli.h"
#include "exporter/web_config.h"
#include "plugin/cgroupfs/rlimit.h"

namespace memcg::exporter {

// web_file: the loaded --web.config.file, or null.
int run_daemon(const Options& opts, config::Config cfg, const std::string& root, const cgroupfs::FdLimit& fds,
               const WebConfigFile* web_file = nullptr);

}  // namespace memcg::exporter
