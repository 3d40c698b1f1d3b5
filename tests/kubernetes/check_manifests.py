#!/usr/bin/env python3
"""kubectl-free validation of packaging/kubernetes: every document parses,
has apiVersion/kind/metadata, and the pieces fit together: selectors match
labels, mounts name volumes, ports match, the DaemonSet is locked down, and the
ConfigMap's config passes memcg-exporter --check-config."""
import glob, os, subprocess, sys, tempfile, tomllib
import yaml

src, exporter = sys.argv[1], sys.argv[2]
docs = []
for f in sorted(glob.glob(os.path.join(src, "packaging/kubernetes/*.yaml"))):
    docs += [(os.path.basename(f), d) for d in yaml.safe_load_all(open(f)) if d]
errors = []
def need(cond, msg):
    if not cond:
        errors.append(msg)

by_kind = {}
for f, d in docs:
    for k in ("apiVersion", "kind", "metadata"):
        need(k in d, f"{f}: {d.get('kind')} lacks {k}")
    need(d.get("metadata", {}).get("name"), f"{f}: {d.get('kind')} has no name")
    by_kind.setdefault(d["kind"], []).append(d)
for kind in ("DaemonSet", "Service", "ConfigMap", "PodMonitor", "NetworkPolicy"):
    need(len(by_kind.get(kind, [])) == 1, f"expected one {kind}")
if not errors:
    ds, svc, cm, pm = (by_kind[k][0] for k in ("DaemonSet", "Service", "ConfigMap", "PodMonitor"))
    spec = ds["spec"]
    labels = spec["template"]["metadata"]["labels"]
    need(all(labels.get(k) == v for k, v in spec["selector"]["matchLabels"].items()), "DaemonSet selector does not match its pods")
    need(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "Service selector does not match the pods")
    need(all(labels.get(k) == v for k, v in pm["spec"]["selector"]["matchLabels"].items()), "PodMonitor selector does not match the pods")
    pod = spec["template"]["spec"]
    need(not pod.get("hostPID") and not pod.get("hostNetwork"), "no hostPID/hostNetwork needed")
    need(pod["securityContext"].get("runAsNonRoot") is True, "pod must run as non-root")
    listening = [c for c in pod["containers"] if c.get("ports")]
    need(len(listening) == 1, "one container listens: the exporter")
    c = listening[0]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for k in pod["containers"]:
        sc = k["securityContext"]
        need(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False,
             f"{k['name']}: read-only, no escalation")
        need(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{k['name']}: drop all capabilities")
        need(k["resources"]["limits"].get("memory") and k["resources"]["requests"].get("cpu"),
             f"{k['name']}: resources: memory limit and cpu request")
        for m in k["volumeMounts"]:
            need(m["name"] in volumes, f"{k['name']}: mount {m['name']} has no volume")
    cg = [m for m in c["volumeMounts"] if volumes.get(m["name"], {}).get("hostPath", {}).get("path") == "/sys/fs/cgroup"]
    need(len(cg) == 1 and cg[0].get("readOnly") is True, "/sys/fs/cgroup mounted read-only")
    # The process that listens holds no root-equivalent socket: no containerd
    # socket mounted or configured, no group 0 (issue: least privilege).
    config = tomllib.loads(cm["data"]["config.toml"]).get("containers", {})
    need(not config.get("containerd_socket"), "the exporter does not talk to containerd itself")
    sockets = [m for m in c["volumeMounts"] if volumes.get(m["name"], {}).get("hostPath", {}).get("type") == "Socket"]
    need(not sockets, f"the exporter's container mounts no socket: {sockets}")
    psc = pod["securityContext"]
    need(0 not in psc.get("supplementalGroups", []) and psc.get("runAsGroup") != 0 and
         c["securityContext"].get("runAsGroup", psc.get("runAsGroup")) != 0, "the exporter's container has no group 0")
    records = config.get("records_dir", "/run/memcg-exporter/containers")
    shared = [k for k in pod["containers"] if any(m["mountPath"] == records for m in k["volumeMounts"])]
    need(len(shared) == 2, "the records directory is shared by the exporter and the identity container")
    for k in pod["containers"]:
        if k is c:
            continue
        need("memcg-exporter-identity" in " ".join(k.get("command", [])), f"{k['name']}: the identity helper")
        need(any(m["mountPath"] == records and not m.get("readOnly") for m in k["volumeMounts"]),
             f"{k['name']}: writes the records")
    port_names = {p["name"] for p in c["ports"]}
    need(all(p["targetPort"] in port_names for p in svc["spec"]["ports"]), "Service targetPort names a container port")
    need(all(e["port"] in port_names for e in pm["spec"]["podMetricsEndpoints"]), "PodMonitor port names a container port")
    np = by_kind["NetworkPolicy"][0]["spec"]
    need(all(labels.get(k) == v for k, v in np["podSelector"]["matchLabels"].items()), "NetworkPolicy selects the pods")
    need(np.get("policyTypes") == ["Ingress"] and all(p["port"] in port_names for r in np["ingress"] for p in r["ports"]),
         "NetworkPolicy admits the metrics port only")
    need(all(r.get("from") for r in np["ingress"]), "NetworkPolicy names who may scrape")
    need(c["readinessProbe"]["httpGet"]["path"] == "/-/ready" and c["livenessProbe"]["httpGet"]["path"] == "/-/healthy", "probes")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(cm["data"]["config.toml"])
    r = subprocess.run([exporter, "--config", f.name, "--check-config"], capture_output=True, text=True)
    need(r.returncode == 0, f"ConfigMap config.toml: {r.stderr.strip()}")
if errors:
    print("\n".join("kubernetes: " + e for e in errors))
    sys.exit(1)
print(f"kubernetes: {len(docs)} documents ok")
