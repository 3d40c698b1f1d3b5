#!/usr/bin/env python3
"""Writes memcg-exporter.json, the Grafana dashboard. Edit here, then run
`python3 packaging/grafana/generate.py`; tests check the JSON and evaluate
every query against a real Prometheus."""
import json, os

S = 'instance=~"$instance", cgroup=~"$cgroup"'
I = 'instance=~"$instance"'
RI = "$__rate_interval"

def J(expr, labels="cgroup"):
    """`expr` (per-cgroup series, labelled cgroup_id only) joined with
    memcg_cgroup_info for the path and filtered by $instance and $cgroup."""
    return f"(({expr}) * on(instance, job, cgroup_id) group_left({labels}) memcg_cgroup_info{{{S}}})"
DS = {"type": "prometheus", "uid": "${datasource}"}

panels = []
y = 0

def row(title):
    global y
    panels.append({"type": "row", "title": title, "collapsed": False, "id": len(panels) + 1,
                   "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
    y += 1

def panel(title, targets, unit="short", kind="timeseries", w=12, h=8, description="", stack=False, x=None):
    global y
    # Two panels per line: place at x=0 or x=12.
    if x is None:
        last = panels[-1]["gridPos"] if panels else None
        x = 12 if last and last["y"] == y and last["x"] == 0 and last["w"] == 12 and w == 12 else 0
        if x == 0 and last and last["y"] == y and last.get("h", 1) > 1:
            y += last["h"]
    p = {"type": kind, "title": title, "id": len(panels) + 1, "datasource": DS, "description": description,
         "gridPos": {"h": h, "w": w, "x": x, "y": y},
         "targets": [{"refId": chr(ord("A") + i), "datasource": DS, "expr": e, "legendFormat": l,
                      **({"format": "heatmap"} if kind == "heatmap" else {})} for i, (e, l) in enumerate(targets)],
         "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
         "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                     "tooltip": {"mode": "multi", "sort": "desc"}}}
    if stack:
        p["fieldConfig"]["defaults"]["custom"] = {"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 20}
    if kind == "heatmap":
        p["options"] = {"calculate": False, "yAxis": {"unit": "s"}, "cellGap": 1, "color": {"scheme": "Oranges", "mode": "scheme"}}
    panels.append(p)
    if w == 24 or x == 12:
        y += h

row("Memory")
panel("Top cgroups by memory.current", [(f"topk(10, {J(f'memcg_memory_current_bytes{{{I}}}')})", "{{cgroup}}")], "bytes",
      description="memory.current: everything charged to the cgroup and its descendants, read every probe.")
WORKING_SET = f'clamp_min(memcg_memory_current_bytes{{{I}}} - on(instance, job, cgroup_id) memcg_memory_stat_bytes{{{I}, stat="inactive_file"}}, 0)'
panel("Top cgroups by working set", [(f"topk(10, {J(WORKING_SET)})", "{{cgroup}}")], "bytes",
      description="memory.current minus inactive file pages, as cAdvisor's container_memory_working_set_bytes. "
                  "Unlike cAdvisor's, inactive_file here is cached: read at memcg_stat_last_read_timestamp_seconds.")
panel("Memory by container", [(f'sum by (namespace, pod, container_name) (memcg_memory_current_bytes{{{I}}} * on(instance, job, cgroup_id) group_left(namespace, pod, container_name) memcg_cgroup_info{{{I}, container_name=~"$container", container_name!=""}})', "{{namespace}}/{{pod}}/{{container_name}}")],
      "bytes", w=24, description="Joined with memcg_cgroup_info: names come from the OCI hook's records.")
row("Kubernetes")
# Names from the runtime (memcg_cgroup_info: containerd's API, the OCI hook)
# or, where neither is on, from kube-state-metrics (its recording rules,
# memcg-exporter-kube-state-metrics.rules.yml): the first a cgroup has.
NAMED = f'label_replace(memcg_cgroup_info{{{I}, pod!="", container_name!="", namespace=~"$namespace"}}, "container", "$1", "container_name", "(.+)")'
KSM = f'memcg:cgroup_kube_container:info{{{I}, namespace=~"$namespace"}}'
def K(expr):
    """`expr` per container cgroup, with its Kubernetes namespace, pod and container."""
    return f"(({expr}) * on(instance, job, cgroup_id) group_left(namespace, pod, container) ({NAMED} or on(instance, job, cgroup_id) {KSM}))"
K_DESC = " Names from containerd's API or the OCI hook (memcg_cgroup_info), else from kube-state-metrics' recording rules."
panel("Working set by namespace", [(f"sum by (namespace) ({K(WORKING_SET)})", "{{namespace}}")], "bytes", stack=True,
      description="Containers' working set (memory.current - inactive_file), summed per namespace." + K_DESC)
panel("Working set by pod", [(f"topk(20, sum by (namespace, pod) ({K(WORKING_SET)}))", "{{namespace}}/{{pod}}")], "bytes",
      description="The 20 largest pods of $namespace by their containers' working set." + K_DESC)
OF_MAX = f'{WORKING_SET} / on(instance, job, cgroup_id) (memcg_memory_limit_bytes{{{I}, limit="max"}} != +Inf)'
OOM_KILLS = f'increase(memcg_memory_events_total{{{I}, event="oom_kill"}}[{RI}])'
panel("Containers: working set of memory.max", [(f"topk(20, {K(OF_MAX)})", "{{namespace}}/{{pod}}/{{container}}")],
      "percentunit", description="Working set against the container's memory limit (memory.max); containers without a limit are not shown." + K_DESC)
panel("OOM kills by container", [(f"sum by (namespace, pod, container) ({K(OOM_KILLS)})", "{{namespace}}/{{pod}}/{{container}}")],
      "short", description="memory.events oom_kill of each container's cgroup, read as the kernel counts it; a container removed after its kill is counted too (its counters stay for metrics.removed_retention)." + K_DESC)
row("Breakdown")
panel("anon / file / kernel / sock / shmem", [(J(f'memcg_memory_stat_bytes{{{I}, stat=~"anon|file|kernel|sock|shmem"}}'), "{{cgroup}} {{stat}}")],
      "bytes", stack=True, description="From memory.stat, cached: read at memcg_stat_last_read_timestamp_seconds, never older than the rule's max_age. shmem (tmpfs) is part of file.")
panel("Page cache: all / inactive (reclaimable first)", [(J(f'memcg_memory_stat_bytes{{{I}, stat=~"file|inactive_file"}}'), "{{cgroup}} {{stat}}")], "bytes")
row("Rates")
panel("Major faults /s", [(J(f'rate(memcg_memory_stat_events_total{{{I}, stat="pgmajfault"}}[{RI}])'), "{{cgroup}}")], "ops",
      description="Prometheus' rate() of the cached counter: exact over windows of several max_age.")
panel("Page cache refaults /s", [(J(f'rate(memcg_memory_stat_events_total{{{I}, stat="workingset_refault_file"}}[{RI}])'), "{{cgroup}}")], "ops",
      description="File pages evicted and needed again soon: the working set does not fit.")
panel("memory.current growth", [(J(f"deriv(memcg_memory_current_bytes{{{I}}}[{RI}])"), "{{cgroup}}")], "Bps")
panel("Highest memory over the last minute (probed)", [(f"topk(10, {J(f'memcg_memory_current_max_1m_bytes{{{I}}}')})", "{{cgroup}}")], "bytes")
row("Events and pressure")
panel("memory.events: oom_kill, high, max", [(J(f'increase(memcg_memory_events_total{{{I}, event=~"oom_kill|high|max"}}[{RI}])'), "{{cgroup}} {{event}}")], "short")
panel("Memory pressure (PSI)", [(J(f"rate(memcg_memory_pressure_stalled_seconds_total{{{I}}}[{RI}])"), "{{cgroup}} {{kind}}")], "percentunit",
      description="Share of time tasks stalled on memory: some = at least one task, full = all non-idle tasks.")
row("Limits and headroom")
panel("Usage of memory.max", [(J(f'memcg_memory_current_bytes{{{I}}} / on(instance, job, cgroup_id) (memcg_memory_limit_bytes{{{I}, limit="max"}} != +Inf)'), "{{cgroup}}")], "percentunit",
      description="Only cgroups with memory.max set: an unset limit is not served.")
panel("Unreclaimable memory of the limit", [(f'topk(20, memcg:unreclaimable_limit_ratio{{{S}}})', "{{cgroup}}")], "percentunit",
      description="anon + shmem + kernel + sock - slab_reclaimable against min(memory.high, memory.max): what reclaim cannot free. Page cache at the limit is not a problem; this near 100 % is (alert MemcgUnreclaimableNearLimit). From memcg-exporter.rules.yml.")
panel("Time until the limit at the current growth", [(f'bottomk(10, memcg:limit_time_left_seconds{{{S}}})', "{{cgroup}}")], "s",
      description="Seconds until the unreclaimable part reaches min(memory.high, memory.max) at its 5-minute growth; only growing cgroups (alert MemcgUnreclaimableGrowingToLimit). From memcg-exporter.rules.yml.")
panel("Headroom to memory.max", [(J(f'(memcg_memory_limit_bytes{{{I}, limit="max"}} != +Inf) - on(instance, job, cgroup_id) memcg_memory_current_bytes{{{I}}}'), "{{cgroup}}")], "bytes")
row("Freshness")
panel("memory.stat age vs max_age", [(J(f"timestamp(memcg_stat_last_read_timestamp_seconds{{{I}}}) - memcg_stat_last_read_timestamp_seconds{{{I}}}"), "{{cgroup}} age"),
                                     (f"max(memcg_rule_max_age_seconds{{{I}}})", "max_age")], "s",
      description="How old the cached memory.stat values were at each scrape; never above the rule's max_age.")
panel("Pending change vs threshold", [(f"{J(f'memcg_stat_pending_change_bytes{{{I}}}', 'cgroup, rule')} / on(instance, job, rule) group_left() memcg_rule_threshold_bytes{{{I}}}", "{{cgroup}}")], "percentunit",
      description="Probed change since the last read, as a share of the rule's threshold that triggers the next read.")
panel("memory.stat reads by reason /s", [(f"sum by (reason) (rate(memcg_exporter_stat_reads_total{{{I}}}[{RI}]))", "{{reason}}")], "ops", stack=True)
panel("Skip ratio", [(f"sum(rate(memcg_exporter_stat_skips_total{{{I}}}[{RI}])) / (sum(rate(memcg_exporter_stat_skips_total{{{I}}}[{RI}])) + sum(rate(memcg_exporter_stat_reads_total{{{I}}}[{RI}])))", "skipped")],
      "percentunit", kind="stat", description="Probes that served cached values instead of making the kernel flush.")
row("Flush costs")
panel("memory.stat read time", [(f"sum by (le) (rate(memcg_exporter_stat_read_duration_seconds_bucket{{{I}}}[{RI}]))", "{{le}}")], "s", kind="heatmap")
panel("CPU spent reading memory.stat", [(f"sum by (instance) (rate(memcg_stat_read_cpu_seconds_total{{{I}}}[{RI}]))", "{{instance}}")], "percentunit",
      description="CPU of the reading thread, including the kernel's rstat flush.")
panel("Reads avoided /s", [(f"sum by (instance) (rate(memcg_exporter_stat_skips_total{{{I}}}[{RI}]))", "{{instance}}")], "ops")
panel("Costliest cgroups to read", [(f"topk(10, {J(f'rate(memcg_stat_read_cpu_seconds_total{{{I}}}[{RI}])')})", "{{cgroup}}")], "percentunit")
row("Exporter health")
panel("Pass duration p99", [(f"histogram_quantile(0.99, sum by (le, instance) (rate(memcg_exporter_pass_duration_seconds_bucket{{{I}}}[{RI}])))", "{{instance}}")], "s")
panel("Scrape duration", [(f"memcg_exporter_scrape_duration_seconds{{{I}}}", "{{instance}}")], "s")
panel("Since the last pass / rescan", [(f"time() - memcg_exporter_last_pass_timestamp_seconds{{{I}}}", "{{instance}} pass"),
                                       (f"time() - memcg_exporter_last_rescan_timestamp_seconds{{{I}}}", "{{instance}} rescan")], "s",
      description="A pass every probe_interval, a rescan every rescan_interval; a rescan that grows old with passes going on means the cgroup root is unreadable (memcg_exporter_root_readable).")
panel("Read and parse errors", [(f"sum by (instance, file) (increase(memcg_exporter_read_errors_total{{{I}}}[{RI}]))", "read {{file}}"),
                                (f"sum by (instance, file) (increase(memcg_exporter_parse_errors_total{{{I}}}[{RI}]))", "parse {{file}}")], "short")
panel("Cgroups collected / left out", [(f"memcg_exporter_cgroups{{{I}}}", "{{instance}} collected"),
                                      (f"memcg_exporter_cgroups_limited{{{I}}}", "{{instance}} left out: max_cgroups"),
                                      (f"sum by (instance, reason) (memcg_exporter_cgroups_left_out{{{I}}})", "{{instance}} left out: {{reason}}")], "short",
      description="Left out: over collector.max_cgroups, or without room for their file descriptors (raise LimitNOFILE=: 7 per cgroup + 1200).")
panel("Exporter CPU", [(f"rate(process_cpu_seconds_total{{{I}}}[{RI}])", "{{instance}}")], "percentunit")
panel("Exporter CPU by phase", [(f"sum by (instance, phase) (rate(memcg_exporter_cpu_seconds_total{{{I}}}[{RI}]))", "{{instance}} {{phase}}")], "percentunit",
      stack=True, description="probe: the cheap files of every cgroup; read: memory.stat re-reads; rescan: discovery; scrape: answering /metrics. The rest of process CPU is HTTP connections and logging.")
panel("HTTP connections", [(f"sum by (instance, state) (memcg_exporter_http_connections{{{I}}})", "{{instance}} {{state}}"),
                           (f"sum by (instance, reason) (rate(memcg_exporter_http_connections_refused_total{{{I}}}[{RI}]))", "{{instance}} refused/s {{reason}}"),
                           (f"rate(memcg_exporter_http_request_head_timeouts_total{{{I}}}[{RI}])", "{{instance}} head timeouts/s")], "short",
      description="relayed: a request at a worker now; waiting: every other open connection (handshake, request arriving, queued, idle, response being written; no worker held). Refusals and head timeouts mean clients beyond the per-client or total limits, or idle/slow ones.")
panel("Exporter RSS", [(f"process_resident_memory_bytes{{{I}}}", "{{instance}}")], "bytes")

def var(name, query, label):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": query, "refId": f"{name}-var"},
            "refresh": 2, "multi": True, "includeAll": True, "allValue": ".*", "sort": 1,
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}

dashboard = {
    "uid": "memcg-exporter",
    "title": "cgroup memory (memcg-exporter)",
    "description": "cgroup v2 memory from memcg-exporter: values, rates, events, limits, and how fresh and costly they are.",
    "tags": ["memcg-exporter", "cgroup", "memory"],
    "schemaVersion": 39,
    "version": 1,
    "editable": True,
    "graphTooltip": 1,
    "time": {"from": "now-1h", "to": "now"},
    "refresh": "30s",
    "timezone": "browser",
    "templating": {"list": [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {"selected": False, "text": "default", "value": "default"}, "hide": 0, "refresh": 1, "regex": ""},
        var("instance", "label_values(memcg_exporter_build_info, instance)", "Instance"),
        var("cgroup", 'label_values(memcg_cgroup_info{instance=~"$instance"}, cgroup)', "cgroup"),
        var("container", 'label_values(memcg_cgroup_info{instance=~"$instance"}, container_name)', "Container"),
        var("namespace", 'label_values({__name__=~"memcg_cgroup_info|memcg:cgroup_kube_container:info", instance=~"$instance"}, namespace)', "Namespace"),
    ]},
    "annotations": {"list": []},
    "links": [],
    "panels": panels,
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcg-exporter.json")
with open(out, "w") as f:
    json.dump(dashboard, f, indent=2)
    f.write("\n")
print(out)
