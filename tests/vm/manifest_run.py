#!/usr/bin/python3
"""Translates the DaemonSet in packaging/kubernetes/memcg-exporter.yaml into
what the runtimes guest needs to run the image the way the kubelet would:

  OUT/config/config.toml  the ConfigMap's config (mounted where the manifest mounts it)
  OUT/volumes/NAME/       a disk-backed emptyDir, shared by the containers that mount it
  OUT/spec.json           an OCI runtime spec for `ctr run --config` (containerd + runc),
                          built as containerd's CRI plugin builds one: the exporter's
                          container (the one with a port)
  OUT/podman.args         podman run's arguments, one per line
  OUT/identity.spec.json, OUT/identity.podman.args  the same for the pod's other
                          container (the identity helper)
  OUT/image.env           shell variables: ids, labels, what the checks expect

Taken from the manifest: each container's command and args (the image's
entrypoint where it sets no command), runAsUser, runAsGroup (the pod's, or
the container's own), supplementalGroups,
readOnlyRootFilesystem, allowPrivilegeEscalation, capabilities.drop, every
volume mount (hostPath, configMap, emptyDir), the memory limit and the CPU
request. Two differences, both forced by the guest: host networking (the
guest has no CNI), and under ctr no seccomp profile (seccompProfile
RuntimeDefault is containerd's built-in profile, which `ctr run --config`
cannot name; the podman run and the image-defaults run apply their default
profile). Anything else in the manifest this does not understand stops it.

Usage: manifest_run.py MANIFEST OCI_LAYOUT TAG OUT GUEST_DIR
"""
import json, os, sys, uuid
import yaml

KNOWN_POD = {"automountServiceAccountToken", "enableServiceLinks", "priorityClassName", "tolerations",
             "securityContext", "containers", "volumes"}
KNOWN_POD_SC = {"runAsNonRoot", "runAsUser", "runAsGroup", "supplementalGroups", "seccompProfile"}
KNOWN_CONTAINER = {"name", "image", "command", "args", "ports", "readinessProbe", "livenessProbe", "resources",
                   "securityContext", "volumeMounts"}
KNOWN_SC = {"readOnlyRootFilesystem", "allowPrivilegeEscalation", "capabilities", "runAsGroup"}


def fail(msg):
    sys.exit(f"manifest_run: {msg}")


def quantity(q):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 1000, "M": 1000**2, "G": 1000**3}
    for u, m in units.items():
        if str(q).endswith(u):
            return int(float(str(q)[:-len(u)]) * m)
    return int(q)


def millicpu(q):
    return int(str(q)[:-1]) if str(q).endswith("m") else int(float(q) * 1000)


def image_config(layout, tag):
    index = json.load(open(os.path.join(layout, "index.json")))
    (m,) = [d for d in index["manifests"] if d.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
    blob = lambda d: json.load(open(os.path.join(layout, "blobs", *d["digest"].split(":"))))
    return blob(blob(m)["config"])["config"]


def mounts(pod, container, guest_dir):
    """(source, destination, type, options) for every volume mount, as the kubelet makes them."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    out = []
    for vm in container["volumeMounts"]:
        v = volumes[vm["name"]]
        ro = ["ro"] if vm.get("readOnly") else ["rw"]
        if "hostPath" in v:
            out.append((v["hostPath"]["path"], vm["mountPath"], "bind", ["rbind"] + ro))
        elif "configMap" in v:  # the kubelet always mounts a ConfigMap read-only
            out.append((f"{guest_dir}/config", vm["mountPath"], "bind", ["rbind", "ro"]))
        elif "emptyDir" in v and v["emptyDir"].get("medium") == "Memory":
            size = quantity(v["emptyDir"].get("sizeLimit", "64Mi"))
            out.append(("tmpfs", vm["mountPath"], "tmpfs", ["nosuid", "nodev", "mode=1777", f"size={size}"]))
        elif "emptyDir" in v:  # on the node's disk, one directory for the pod (mode 0777, as the kubelet makes it)
            out.append((f"{guest_dir}/volumes/{vm['name']}", vm["mountPath"], "bind", ["rbind"] + ro))
        else:
            fail(f"volume {vm['name']}: kind not handled")
    return out


def base_mounts():
    """containerd's default mounts without /run, plus a read-only cgroup mount (CRI's own)."""
    m = lambda dst, typ, src, opts: {"destination": dst, "type": typ, "source": src, "options": opts}
    return [m("/proc", "proc", "proc", ["nosuid", "noexec", "nodev"]),
            m("/dev", "tmpfs", "tmpfs", ["nosuid", "strictatime", "mode=755", "size=65536k"]),
            m("/dev/pts", "devpts", "devpts", ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]),
            m("/dev/shm", "tmpfs", "shm", ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]),
            m("/dev/mqueue", "mqueue", "mqueue", ["nosuid", "noexec", "nodev"]),
            m("/sys", "sysfs", "sysfs", ["nosuid", "noexec", "nodev", "ro"]),
            m("/sys/fs/cgroup", "cgroup", "cgroup", ["nosuid", "noexec", "nodev", "relatime", "ro"])]


def check_known(obj, known, what):
    extra = set(obj) - known
    if extra:
        fail(f"{what}: {sorted(extra)} not understood; teach manifest_run.py what they mean")


def container_run(pod, c, img, guest_dir, cgroups_path, root):
    """(OCI spec, podman args, uid, gid, groups, memory limit) for container c."""
    psc, sc = pod.get("securityContext", {}), c.get("securityContext", {})
    check_known(c, KNOWN_CONTAINER, f"container {c['name']}")
    check_known(sc, KNOWN_SC, f"container {c['name']} securityContext")
    if sc.get("capabilities", {}).get("drop") != ["ALL"] or sc["capabilities"].get("add"):
        fail("capabilities other than drop: [ALL]")
    uid = psc["runAsUser"]
    gid = sc.get("runAsGroup", psc.get("runAsGroup", uid))
    if psc.get("runAsNonRoot") and uid == 0:
        fail("runAsNonRoot with runAsUser 0")
    groups = list(psc.get("supplementalGroups", []))
    argv = (c.get("command") or img["Entrypoint"]) + c.get("args", [])
    limit = quantity(c["resources"]["limits"]["memory"])
    shares = max(2, millicpu(c["resources"]["requests"]["cpu"]) * 1024 // 1000)
    binds = mounts(pod, c, guest_dir)
    spec = {
        "ociVersion": "1.0.2-dev",
        "process": {"user": {"uid": uid, "gid": gid, "additionalGids": groups}, "args": argv,
                    "env": img.get("Env", []), "cwd": img.get("WorkingDir") or "/",
                    "capabilities": {"bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": []},
                    "noNewPrivileges": sc.get("allowPrivilegeEscalation") is False},
        "root": {"path": f"{guest_dir}/{root}", "readonly": bool(sc.get("readOnlyRootFilesystem"))},
        "hostname": "memcg-exporter-vm",
        "mounts": base_mounts() + [{"destination": d, "type": t, "source": s, "options": o} for s, d, t, o in binds],
        "linux": {
            "cgroupsPath": cgroups_path,
            "resources": {"devices": [{"allow": False, "access": "rwm"}],
                          "memory": {"limit": limit}, "cpu": {"shares": shares}},
            "namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")],
            "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                            "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]},
    }
    podman = [f"--user={uid}:{gid}", "--network=host", f"--memory={limit}", f"--cpu-shares={shares}"]
    podman += [f"--group-add={g}" for g in groups]
    if c.get("command"):
        podman += [f"--entrypoint={json.dumps(c['command'])}"]
    if sc.get("readOnlyRootFilesystem"):
        podman += ["--read-only", "--read-only-tmpfs=false"]  # only the tmpfs the manifest mounts
    if sc.get("allowPrivilegeEscalation") is False:
        podman += ["--security-opt=no-new-privileges"]
    podman += ["--cap-drop=ALL"]
    for s, d, t, o in binds:
        if t == "bind":
            podman += [f"--volume={s}:{d}:{'ro' if 'ro' in o else 'rw'}"]
        else:
            podman += [f"--tmpfs={d}:{','.join(o)}"]
    return spec, podman, uid, gid, groups, limit


def main():
    manifest, layout, tag, out, guest_dir = sys.argv[1:6]
    docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    pod = ds["spec"]["template"]["spec"]
    check_known(pod, KNOWN_POD, "pod spec")
    check_known(pod.get("securityContext", {}), KNOWN_POD_SC, "pod securityContext")
    (c,) = [k for k in pod["containers"] if k.get("ports")]
    others = [k for k in pod["containers"] if k is not c]
    if len(others) > 1:
        fail("more than one container besides the exporter's")
    img = image_config(layout, tag)
    pod_uid = str(uuid.uuid4())
    os.makedirs(f"{out}/config", exist_ok=True)
    open(f"{out}/config/config.toml", "w").write(cm["data"]["config.toml"])
    for v in pod["volumes"]:
        if "emptyDir" in v and v["emptyDir"].get("medium") != "Memory":
            os.makedirs(f"{out}/volumes/{v['name']}", exist_ok=True)
            os.chmod(f"{out}/volumes/{v['name']}", 0o777)
    ids = {}
    for k, prefix in [(c, "")] + [(o, "identity.") for o in others]:
        cid = uuid.uuid4().hex + uuid.uuid4().hex
        # Each container its own root (a snapshot of the image), as the CRI plugin gives them.
        root = "rootfs" if k is c else f"rootfs-{k['name']}"
        spec, podman, uid, gid, groups, limit = container_run(pod, k, img, guest_dir, f"/kubepods/burstable/pod{pod_uid}/{cid}", root)
        json.dump(spec, open(f"{out}/{prefix}spec.json", "w"), indent=1)
        open(f"{out}/{prefix}podman.args", "w").write("\n".join(podman) + "\n")
        ids[prefix] = (k, cid, uid, gid, groups, limit)

    meta = ds["metadata"]
    k, cid, uid, gid, groups, limit = ids[""]
    env = {"IMG_POD": f"{meta['name']}-vm", "IMG_NAMESPACE": meta.get("namespace", "default"),
           "IMG_CONTAINER": c["name"], "IMG_POD_UID": pod_uid, "IMG_CID": cid,
           "IMG_PORT": str(c["ports"][0]["containerPort"]), "IMG_ARGS": " ".join(c["args"]),
           "IMG_UID": str(uid), "IMG_GID": str(gid), "IMG_GROUPS": " ".join(map(str, groups)),
           "IMG_MEMORY_LIMIT": str(limit)}
    if "identity." in ids:
        k, cid, uid, gid, groups, limit = ids["identity."]
        env |= {"IDN_CONTAINER": k["name"], "IDN_ROOTFS": f"{guest_dir}/rootfs-{k['name']}", "IDN_CID": cid, "IDN_ARGS": " ".join(k.get("args", [])),
                "IDN_UID": str(uid), "IDN_GID": str(gid), "IDN_MEMORY_LIMIT": str(limit)}
    open(f"{out}/image.env", "w").write("".join(f"{k}='{v}'\n" for k, v in env.items()))


if __name__ == "__main__":
    main()
