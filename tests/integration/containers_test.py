#!/usr/bin/env python3
"""Container naming end to end: the real OCI hook binary is run the way podman
or CRI-O run it (OCI state on stdin, a bundle with config.json), the daemon
picks up its records and memcg_cgroup_info carries the names; poststop
removes them. Identity labels copied onto every series on request."""
import argparse, json, os, subprocess, tempfile
from harness import Tree, Exporter, write_config, parse_metrics, series, run_tests, K8S_CONTAINER, run_hook as hook

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--hook", required=True)
args = ap.parse_args()

ID_DOCKER, ID_K8S, ID_PODMAN = "a" * 64, "b" * 64, "c" * 64
K8S_CG = K8S_CONTAINER

def run_hook(stage, cid, annotations, records):
    return hook(args.hook, stage, cid, annotations, records)

def info(ex, cg):
    for (name, labels), v in ex.metrics().items():
        if name == "memcg_cgroup_info" and dict(labels)["cgroup"] == cg:
            return dict(labels)
    raise KeyError(cg)

def test_info_metric_from_paths_and_hook_records():
    tree = Tree(args.fixture, "containers")
    records = tempfile.mkdtemp(prefix="memcg-records-")
    cfg = write_config(f'[collector]\nprobe_interval = "100ms"\n[containers]\nrecords_dir = "{records}"\n')
    with Exporter(args.exporter, tree.root, cfg) as ex:
        i = info(ex, K8S_CG)
        assert i["runtime"] == "containerd" and i["container_id"] == ID_K8S, i
        assert i["pod_uid"] == "0d3c6a1e-5b7f-4c2d-9e8f-a1b2c3d4e5f6" and i["qos_class"] == "burstable", i
        assert i.get("container_name", "") == "", "no record yet"
        assert info(ex, f"system.slice/docker-{ID_DOCKER}.scope")["runtime"] == "docker"
        assert info(ex, f"machine.slice/libpod-{ID_PODMAN}.scope")["runtime"] == "podman"
        assert info(ex, "system.slice")["unit"] == "system.slice"

        assert run_hook("createRuntime", ID_K8S, {"io.kubernetes.container.name": "web", "io.kubernetes.pod.name": "web-0",
                        "io.kubernetes.pod.namespace": "shop", "io.kubernetes.cri.image-name": "nginx:1.25"}, records) == ""
        ex.wait_for(lambda: info(ex, K8S_CG).get("container_name") == "web", "record picked up")
        i = info(ex, K8S_CG)
        assert (i["pod"], i["namespace"], i["image"]) == ("web-0", "shop", "nginx:1.25"), i
        doc = json.loads(ex.get("/api/v1/cgroups")[2])
        ident = next(c["identity"] for c in doc["cgroups"] if c["path"] == K8S_CG)
        assert ident["container_name"] == "web" and ident["runtime"] == "containerd", ident

        run_hook("poststop", ID_K8S, {}, records)
        assert not os.path.exists(os.path.join(records, ID_K8S + ".json"))
        ex.wait_for(lambda: info(ex, K8S_CG).get("container_name", "") == "", "record removed")

        # A hostile id is refused by the hook and never written.
        assert "ignored" in run_hook("createRuntime", "../../etc/passwd", {}, records)
        assert os.listdir(records) == []

def test_identity_labels_on_every_series():
    tree = Tree(args.fixture, "containers")
    records = tempfile.mkdtemp(prefix="memcg-records-")
    run_hook("createRuntime", ID_K8S, {"io.kubernetes.container.name": "web", "io.kubernetes.pod.namespace": "shop"}, records)
    cfg = write_config(f'[containers]\nrecords_dir = "{records}"\n[metrics]\nidentity_labels = ["namespace", "container_name"]\n')
    with Exporter(args.exporter, tree.root, cfg) as ex:
        m = ex.metrics()
        assert series(m, "memcg_memory_current_bytes", cgroup=K8S_CG, container_name="web", namespace="shop") >= 0
        assert series(m, "memcg_stat_last_read_timestamp_seconds", cgroup=K8S_CG, container_name="web", namespace="shop") > 1.7e9
        # Cgroups without those identities keep only the cgroup label.
        assert series(m, "memcg_memory_current_bytes", cgroup="system.slice") >= 0

run_tests(globals())
