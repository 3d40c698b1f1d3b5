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
for kind in ("DaemonSet", "Service", "ConfigMap", "PodMonitor"):
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
    (c,) = pod["containers"]
    sc = c["securityContext"]
    need(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False, "container must be read-only, no escalation")
    need(sc.get("capabilities", {}).get("drop") == ["ALL"], "drop all capabilities")
    need(c["resources"]["limits"].get("memory") and c["resources"]["requests"].get("cpu"), "resources: memory limit and cpu request")
    volumes = {v["name"]: v for v in pod["volumes"]}
    for m in c["volumeMounts"]:
        need(m["name"] in volumes, f"mount {m['name']} has no volume")
    cg = [m for m in c["volumeMounts"] if volumes.get(m["name"], {}).get("hostPath", {}).get("path") == "/sys/fs/cgroup"]
    need(len(cg) == 1 and cg[0].get("readOnly") is True, "/sys/fs/cgroup mounted read-only")
    need(any(volumes.get(m["name"], {}).get("hostPath", {}).get("path") == "/run/memcg-exporter" for m in c["volumeMounts"]),
         "/run/memcg-exporter mounted for hook records")
    # A containerd socket in the config is mounted from the node at that path,
    # and the pod has a supplemental group to open it with.
    sock = tomllib.loads(cm["data"]["config.toml"]).get("containers", {}).get("containerd_socket", "")
    if sock:
        need(any(m["mountPath"] == sock and volumes.get(m["name"], {}).get("hostPath", {}).get("path") == sock
                 for m in c["volumeMounts"]), f"containerd_socket {sock} is not mounted from the node")
        need(pod["securityContext"].get("supplementalGroups"), "containerd's socket needs a supplemental group")
    port_names = {p["name"] for p in c["ports"]}
    need(all(p["targetPort"] in port_names for p in svc["spec"]["ports"]), "Service targetPort names a container port")
    need(all(e["port"] in port_names for e in pm["spec"]["podMetricsEndpoints"]), "PodMonitor port names a container port")
    need(c["readinessProbe"]["httpGet"]["path"] == "/-/ready" and c["livenessProbe"]["httpGet"]["path"] == "/-/healthy", "probes")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(cm["data"]["config.toml"])
    r = subprocess.run([exporter, "--config", f.name, "--check-config"], capture_output=True, text=True)
    need(r.returncode == 0, f"ConfigMap config.toml: {r.stderr.strip()}")
if errors:
    print("\n".join("kubernetes: " + e for e in errors))
    sys.exit(1)
print(f"kubernetes: {len(docs)} documents ok")
