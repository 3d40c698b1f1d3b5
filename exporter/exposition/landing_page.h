// The HTML page served at "/": what is running, on what, and where to look.
#pragma once

#include <string>

#include "config/config.h"
#include "plugin/snapshot.h"

namespace memcg::exporter {

std::string render_landing_page(const Snapshot& snap, const config::Config& cfg, TimePoint now);
std::string html_escape(std::string_view s);

}  // namespace memcg::exporter
