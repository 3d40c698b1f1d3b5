// docs/metrics.md's metric reference, generated from the tables (a test
// holds the page equal to it).
#include "exporter/exposition/families.h"

namespace memcg::exporter {

using config::Profile;

std::string metrics_reference_markdown() {
  std::string out = "| metric | profile | type | labels | meaning |\n|---|---|---|---|---|\n";
  for (auto table : tables())
    for (const auto& def : table) {
      std::string labels = def.per_cgroup && def.profile != Profile::cadvisor ? "cgroup_id" : "";
      if (!def.labels.empty()) labels += (labels.empty() ? "" : ", ") + std::string(def.labels);
      out += "| `" + std::string(def.name) + "` | " + std::string(config::profile_name(def.profile)) + " | " +
             std::string(type_name(def.type)) + " | " + labels + " | " + std::string(def.help) + " |\n";
    }
  return out;
}

}  // namespace memcg::exporter
