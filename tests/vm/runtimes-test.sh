#!/bin/bash
# Runs inside the runtimes guest (Debian bookworm, systemd as PID 1, the .deb
# installed, podman/docker/containerd/systemd-nspawn from Debian). Starts
# containers the ways users do and checks each through /metrics: the runtime
# and full id the runtime itself reports, name and image where the runtime can
# give them, memory against the runtime's own view, growth of a workload
# inside, and removal after stop + rm. Prints "RUNTIME row <runtime> <driver>
# <check> ok|FAIL|n/a <detail>" lines (the host prints the table), FIXTURE
# blocks (what the OCI hook really received) and RESULT PASS|FAIL.
exec > /dev/ttyS0 2>&1
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
fail=0
unit=memcg-exporter.service
cfg=/etc/memcg-exporter/config.toml
img=localhost/memcg-test:1
rootfs=/var/lib/memcg-test/rootfs
MiB=1048576

RUNTIMES_ONLY=
. /etc/memcg-stage2.env 2>/dev/null
want() { [ -z "$RUNTIMES_ONLY" ] || [[ " $RUNTIMES_ONLY " == *" $1 "* ]]; }

log() { echo "RUNTIME log $(cut -d' ' -f1 /proc/uptime) $*"; }
row() {  # row RUNTIME DRIVER CHECK RESULT DETAIL...
  local rt=$1 drv=$2 chk=$3 res=$4
  shift 4
  echo "RUNTIME row $rt $drv $chk $res ${*:-}"
  [ "$res" != FAIL ] || fail=1
}
check() {  # check RUNTIME DRIVER CHECK CMD...  (detail: the command's stdout)
  local rt=$1 drv=$2 chk=$3 out
  shift 3
  if out=$("$@" 2>&1); then row "$rt" "$drv" "$chk" ok "$out"; else row "$rt" "$drv" "$chk" FAIL "$out"; fi
}
wait_for() {  # wait_for SECONDS CMD...
  local t=$1
  shift
  for _ in $(seq $((t * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  return 1
}
metrics() { curl -sf --max-time 10 http://127.0.0.1:9756/metrics; }
# /metrics without the removed cgroups it still serves (their info and event
# counters, marked by memcg_cgroup_removed_timestamp_seconds): the live ones.
live_metrics() {
  metrics | awk '{ line[NR] = $0 }
    /^memcg_cgroup_removed_timestamp_seconds\{/ { match($0, /cgroup_id="[0-9]+"/); gone[substr($0, RSTART, RLENGTH)] = 1 }
    END { for (i = 1; i <= NR; i++) { if (match(line[i], /cgroup_id="[0-9]+"/) && (substr(line[i], RSTART, RLENGTH) in gone)) continue; print line[i] } }'
}
# The memcg_cgroup_info line of the live cgroup whose container_id is $1.
info_line() { live_metrics | grep "^memcg_cgroup_info{.*,container_id=\"$1\"[,}]"; }
# Whether the container's cgroup is served as removed: info kept, marked.
marked_removed() {
  metrics | awk -v id="$1" '/^memcg_cgroup_info\{/ && index($0, ",container_id=\"" id "\"") { match($0, /cgroup_id="[0-9]+"/); ids[substr($0, RSTART, RLENGTH)] = 1 }
    /^memcg_cgroup_removed_timestamp_seconds\{/ { match($0, /cgroup_id="[0-9]+"/); gone[substr($0, RSTART, RLENGTH)] = 1 }
    END { for (i in ids) if (i in gone) { print "kept, marked removed: " i; exit 0 } exit 1 }'
}
label() { sed -n "s/.*[{,]$2=\"\([^\"]*\)\".*/\1/p" <<<"$1"; }
series() {  # series CGROUP_ID NAME [STAT]
  if [ -n "${3:-}" ]; then
    metrics | awk -v k="$2{cgroup_id=\"$1\",stat=\"$3\"}" '$1 == k {print $2}'
  else
    metrics | awk -v k="$2{cgroup_id=\"$1\"}" '$1 == k {print $2}'
  fi
}
# "25.17MB", "1.5MiB", "812kB", "4096B" -> bytes
to_bytes() {
  awk -v s="$1" 'BEGIN {
    match(s, /^[0-9.]+/); n = substr(s, 1, RLENGTH); u = substr(s, RLENGTH + 1)
    m["B"] = 1; m["kB"] = 1e3; m["KB"] = 1e3; m["MB"] = 1e6; m["GB"] = 1e9
    m["KiB"] = 1024; m["MiB"] = 1048576; m["GiB"] = 1073741824
    if (!(u in m) || n == "") exit 1
    printf "%.0f\n", n * m[u] }'
}
# within A B: |A-B| <= max(4 MiB, 10 % of B); prints both for the table.
within() {
  local a=$1 b=$2
  echo "exporter=$a runtime=$b"
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; t = b / 10; if (t < 4194304) t = 4194304; exit !(d <= t) }'
}
gone() { ! info_line "$1" >/dev/null; }
no_record() { test ! -e "/run/memcg-exporter/containers/$1.json"; }

# verify RUNTIME DRIVER ID NAME IMAGE VIEW_FN [FIGURE]
# VIEW_FN prints the runtime's own memory figure for the container in bytes;
# FIGURE says which of the exporter's series it is: current (default),
# working_set (memory.current - inactive_file: Docker 20.10's "usage") or
# anon (podman 4.3's: its containers/common reads memory.stat's anon).
verify() {
  local rt=$1 drv=$2 id=$3 name=$4 image=$5 view=$6 figure=${7:-current}
  local want_rt=$rt line cg mem ref
  [ "$rt" = nspawn ] && want_rt=systemd-nspawn
  [ "$rt" = ctr ] && want_rt=containerd
  if ! wait_for 40 info_line "$id"; then
    row "$rt" "$drv" identity FAIL "no memcg_cgroup_info with container_id=$id; cgroups: $(find /sys/fs/cgroup -name "*${id:0:12}*" -o -name "*$name*" | head -3)"
    return
  fi
  line=$(info_line "$id")
  cg=$(label "$line" cgroup_id)
  last_path=$(label "$line" cgroup | sed 's/\\\\/\\/g')  # the exposition escapes '\'
  log "$rt/$drv $line"
  check "$rt" "$drv" identity sh -c "echo '$(label "$line" cgroup) runtime=$(label "$line" runtime)'; test '$(label "$line" runtime)' = '$want_rt'"
  if [ -n "$name" ]; then
    # An engine lookup that failed (podman's socket-activated API still
    # starting, under emulation) is retried after 10 s, at a rescan.
    wait_for 40 sh -c "curl -sf http://127.0.0.1:9756/metrics | grep '^memcg_cgroup_info{.*container_id=\"$id\"' | grep -q 'container_name=\"$name\"'"
    line=$(info_line "$id")
    check "$rt" "$drv" name sh -c "echo 'container_name=$(label "$line" container_name)'; test '$(label "$line" container_name)' = '$name'"
  else
    row "$rt" "$drv" name n/a "${NA_NAME:-the runtime names no container beyond its id}"
  fi
  if [ -n "$image" ]; then
    check "$rt" "$drv" image sh -c "echo 'image=$(label "$line" image)'; test '$(label "$line" image)' = '$image'"
  else
    row "$rt" "$drv" image n/a "${NA_IMAGE:-no image (a root directory)}"
  fi
  # Memory: the exporter's figure (memory.current is 1 s old at most;
  # memory.stat is read at the container's start) against the runtime's a
  # moment later.
  mem=$(series "$cg" memcg_memory_current_bytes)
  case "$figure" in
    working_set) mem=$((mem - $(series "$cg" memcg_memory_stat_bytes inactive_file))) ;;
    anon) mem=$(series "$cg" memcg_memory_stat_bytes anon) ;;
  esac
  ref=$($view "$id" "$name")
  check "$rt" "$drv" memory within "${mem:-0}" "${ref:-0}"
}

# grows RUNTIME DRIVER ID EXEC_CMD...: 32 MiB written to the container's
# /dev/shm (tmpfs: charged to its cgroup, not reclaimable without swap) shows up.
grows() {
  local rt=$1 drv=$2 id=$3 line cg before
  shift 3
  line=$(info_line "$id")
  cg=$(label "$line" cgroup_id)
  before=$(series "$cg" memcg_memory_current_bytes)
  "$@" dd if=/dev/zero of=/dev/shm/grow bs=1M count=32 >/dev/null 2>&1
  if wait_for 10 sh -c "test \$(curl -sf http://127.0.0.1:9756/metrics | awk -v k='memcg_memory_current_bytes{cgroup_id=\"$cg\"}' '\$1 == k {print \$2}') -ge $((before + 30 * MiB))"; then
    row "$rt" "$drv" growth ok "before=$before after=$(series "$cg" memcg_memory_current_bytes)"
  else
    row "$rt" "$drv" growth FAIL "before=$before after=$(series "$cg" memcg_memory_current_bytes)"
  fi
}

# removed RUNTIME DRIVER ID [NO_RECORD_REASON]: once the runtime removed the
# cgroup (last_path, from verify), it leaves the live series within one
# rescan (10 s) and a pass, its info kept a while marked as removed; the
# hook's record is gone.
removed() {
  if ! wait_for 60 test ! -d "/sys/fs/cgroup/$last_path"; then
    row "$1" "$2" removed FAIL "the runtime left /sys/fs/cgroup/$last_path"
  elif wait_for 15 gone "$3"; then
    check "$1" "$2" removed marked_removed "$3"
  else
    row "$1" "$2" removed FAIL "still exported as live 15 s after its cgroup went"
  fi
  if [ -n "${4:-}" ]; then row "$1" "$2" record-removed n/a "$4"; else check "$1" "$2" record-removed no_record "$3"; fi
}

echo "STAGE2 start uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)"
for v in podman docker containerd ctr crun runc systemd-nspawn; do log "version $v: $($v --version 2>&1 | head -1)"; done

# --- The exporter as a user sets it up for names from the Engine API.
wait_for 60 systemctl is-active --quiet "$unit" || { echo "RESULT FAIL exporter not active"; systemctl poweroff --no-block; exit 1; }
# Docker's socket is group docker. podman's sits in /run/podman, which podman
# keeps root-only (0700): a drop-in gives the API a socket of its own with a
# group (docs/containers.md: Names from the Engine API, and what that access means).
cp "$cfg" /root/config.orig
sed -i -e 's|^docker_socket = ""|docker_socket = "/run/docker.sock"|' \
  -e 's|^podman_socket = ""|podman_socket = "/run/podman-api/podman.sock"|' \
  -e 's|^podman_user_socket = ""|podman_user_socket = "/run/podman-api/users/%U/podman.sock"|' "$cfg"
if ! out=$(memcg-exporter --config "$cfg" --check-config 2>&1) || ! grep -q '^docker_socket = "/run' "$cfg" ||
   ! grep -q '^podman_user_socket = "/run' "$cfg"; then
  row exporter - engine-config FAIL "$(echo "$out" | head -1)"
  cp /root/config.orig "$cfg"
fi
groupadd --system podman-api
mkdir -p /etc/systemd/system/memcg-exporter.service.d /etc/systemd/system/podman.socket.d
printf '[Service]\nSupplementaryGroups=docker podman-api\n' > /etc/systemd/system/memcg-exporter.service.d/engine-api.conf
printf '[Socket]\nListenStream=\nListenStream=/run/podman-api/podman.sock\nSocketGroup=podman-api\nSocketMode=0660\n' \
  > /etc/systemd/system/podman.socket.d/memcg-exporter.conf
systemctl daemon-reload
systemctl enable podman.socket
systemctl restart podman.socket "$unit"
wait_for 60 systemctl is-active --quiet "$unit"

# --- What the OCI hook really receives, kept as fixtures: a second hook next
# to the package's copies its stdin and the bundle's config.json.
mkdir -p /var/tmp/hookcap
cat > /usr/local/bin/hook-capture <<'EOF'
#!/bin/sh
d=/var/tmp/hookcap/$(date +%s%N)
mkdir -p "$d"
cat > "$d/state.json"
b=$(sed -n 's/.*"bundle" *: *"\([^"]*\)".*/\1/p' "$d/state.json")
[ -n "$b" ] && cp "$b/config.json" "$d/config.json" 2>/dev/null
exit 0
EOF
chmod 755 /usr/local/bin/hook-capture
cat > /usr/share/containers/oci/hooks.d/zz-capture.json <<'EOF'
{"version": "1.0.0", "hook": {"path": "/usr/local/bin/hook-capture"}, "when": {"always": true}, "stages": ["createRuntime"]}
EOF

# --- A busybox root for every runtime.
mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,etc,run,var,root,sbin,usr/lib}
cp /usr/local/bin/busybox "$rootfs/bin/"
for a in $(/usr/local/bin/busybox --list); do [ -e "$rootfs/bin/$a" ] || ln -s busybox "$rootfs/bin/$a"; done
ln -sf ../bin/busybox "$rootfs/sbin/init"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\n' > "$rootfs/etc/group"
printf 'ID=memcg-test\nNAME="memcg test"\n' > "$rootfs/usr/lib/os-release"
# busybox init for nspawn --boot: fill 16 MiB of /dev/shm and stay up.
printf '::sysinit:/bin/dd if=/dev/zero of=/dev/shm/base bs=1M count=16\n::respawn:/bin/sleep 100000\n' > "$rootfs/etc/inittab"
tar -C "$rootfs" -cf /var/tmp/rootfs.tar .
workload='dd if=/dev/zero of=/dev/shm/base bs=1M count=16; exec sleep 100000'

# --- Containers as the kubelet and containerd's CRI plugin leave them (the
# k8s and image sections): namespace k8s.io, the CRI labels.
k8s() { ctr -n k8s.io "$@"; }
# The value of a label (or the image) in `ctr containers info` (JSON).
ctr_field() { k8s containers info "$1" | sed -n "s/^ *\"$2\": \"\([^\"]*\)\",\{0,1\}$/\1/p" | head -1; }
new_id() { head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
k8s_image_args=()  # the k8s section imports an image; without one, a root directory
connected() { metrics | awk '$1 == "memcg_exporter_containerd_connected" {print $2}'; }
# k8s_run ID KIND NAME POD NAMESPACE UID QOS DRIVER: QOS "" is Guaranteed.
k8s_run() {
  local id=$1 kind=$2 name=$3 pod=$4 ns=$5 uid=$6 qos=$7 drv=$8 args=()
  args+=(--label "io.kubernetes.pod.name=$pod" --label "io.kubernetes.pod.namespace=$ns"
         --label "io.kubernetes.pod.uid=$uid" --label "io.cri-containerd.kind=$kind")
  [ "$kind" = container ] && args+=(--label "io.kubernetes.container.name=$name")
  if [ "$drv" = systemd ]; then
    args+=(--runc-systemd-cgroup --cgroup "kubepods-${qos:+$qos-}pod${uid//-/_}.slice:cri-containerd:$id")
  else
    args+=(--cgroup "/kubepods/${qos:+$qos/}pod$uid/$id")
  fi
  if [ ${#k8s_image_args[@]} -gt 0 ]; then
    k8s run -d "${args[@]}" "${k8s_image_args[@]}" "$id" /bin/sh -c "$workload" >/var/tmp/k8s-$id.log 2>&1 &
  else
    mkdir -p "/var/lib/memcg-test/k8s/$id" && tar -C "/var/lib/memcg-test/k8s/$id" -xf /var/tmp/rootfs.tar
    k8s run -d "${args[@]}" --rootfs "/var/lib/memcg-test/k8s/$id" "$id" /bin/sh -c "$workload" >/var/tmp/k8s-$id.log 2>&1 &
  fi
  wait_for 60 sh -c "ctr -n k8s.io task ls | grep -q '^$id .*RUNNING'" ||
    log "k8s: $id did not start: $(tail -2 /var/tmp/k8s-$id.log | tr '\n' ' ')"
}

# ---------------------------------------------------------------- podman
if want podman; then
podman_view() { to_bytes "$(podman stats --no-stream --format '{{.MemUsage}}' "$1" | awk '{print $1}')"; }
out=$(podman import /var/tmp/rootfs.tar "$img" 2>&1) || log "podman import failed: $out"
for drv in systemd cgroupfs; do
  name=pm-$drv
  if ! id=$(podman --cgroup-manager="$drv" run -d --name "$name" --network none "$img" sh -c "$workload"); then
    row podman "$drv" start FAIL "podman run failed"
    continue
  fi
  id=$(podman ps --no-trunc --filter name="$name" --format '{{.ID}}')
  log "podman/$drv id=$id cgroup=$(podman inspect --format '{{.State.CgroupPath}}' "$id" 2>/dev/null)"
  cgdir=/sys/fs/cgroup$(podman inspect --format '{{.State.CgroupPath}}' "$id")
  log "podman/$drv stats: $(podman stats --no-stream --format json "$id" | tr -d '\n ' | head -c 600)"
  log "podman/$drv memory.current=$(cat "$cgdir/memory.current") $(grep -E '^(anon|file|shmem|inactive_file|active_file|inactive_anon) ' "$cgdir/memory.stat" | tr '\n' ' ')"
  verify podman "$drv" "$id" "$name" "$img" podman_view anon
  log "podman/$drv socket: $(ls -ld /run/podman-api /run/podman-api/podman.sock | tr '\n' ' ') exporter $(grep -E '^(Uid|Gid|Groups)' /proc/$(systemctl show -p MainPID --value $unit)/status | tr '\n\t' '  ')"
  log "podman/$drv $(metrics | grep '^memcg_exporter_engine_lookups_total' | tr '\n' ' ')"
  grows podman "$drv" "$id" podman exec "$name"
  podman stop -t 1 "$name" >/dev/null
  podman rm "$name" >/dev/null
  removed podman "$drv" "$id"
done

fi  # podman

# ---------------------------------------------------------------- rootless podman
if want rootless; then
# A user's podman under user@UID.service (lingering): systemd cgroup manager,
# the memory controller delegated by user@.service.
useradd -m -u 1000 memcg-user
loginctl enable-linger memcg-user
as_user() {
  runuser -u memcg-user -- env HOME=/home/memcg-user XDG_RUNTIME_DIR=/run/user/1000 \
    DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus "$@"
}
podman_user_view() { to_bytes "$(as_user podman stats --no-stream --format '{{.MemUsage}}' "$1" | awk '{print $1}')"; }
# The user's own API socket where the exporter's group can reach it (docs/containers.md:
# rootless podman): a directory of the user's that only podman-api may
# enter, and a drop-in for the user's podman.socket.
install -d -m 0755 /run/podman-api/users
install -d -m 0750 -o memcg-user -g podman-api /run/podman-api/users/1000
if ! wait_for 60 systemctl is-active --quiet user@1000.service; then
  row podman rootless start FAIL "user@1000.service did not start"
elif ! out=$(as_user sh -c 'mkdir -p ~/.config/systemd/user/podman.socket.d &&
      printf "[Socket]\nListenStream=\nListenStream=/run/podman-api/users/1000/podman.sock\nSocketMode=0666\n" > ~/.config/systemd/user/podman.socket.d/memcg-exporter.conf &&
      systemctl --user daemon-reload && systemctl --user enable --now podman.socket' 2>&1); then
  row podman rootless start FAIL "the user's podman.socket: $(echo "$out" | tail -2 | tr '\n' ' ')"
elif ! out=$(as_user podman import /var/tmp/rootfs.tar "$img" 2>&1) ||
     ! out=$(as_user podman run -d --name pm-rootless --network none "$img" sh -c "$workload" 2>&1); then
  row podman rootless start FAIL "$(echo "$out" | tail -2 | tr '\n' ' ')"
else
  id=$(as_user podman ps --no-trunc --filter name=pm-rootless --format '{{.ID}}')
  log "podman/rootless id=$id cgroup=$(as_user podman inspect --format '{{.State.CgroupPath}}' "$id" 2>/dev/null)"
  log "podman/rootless socket: $(ls -ld /run/podman-api/users/1000 /run/podman-api/users/1000/podman.sock 2>&1 | tr '\n' ' ')"
  verify podman rootless "$id" pm-rootless "$img" podman_user_view anon
  log "podman/rootless $(metrics | grep '^memcg_exporter_engine_lookups_total' | tr '\n' ' ')"
  grows podman rootless "$id" as_user podman exec pm-rootless
  as_user podman rm -f -t 1 pm-rootless >/dev/null
  removed podman rootless "$id" "rootless: no record was written"
fi

fi  # rootless

# ---------------------------------------------------------------- docker
if want docker; then
docker_view() { to_bytes "$(docker stats --no-stream --format '{{.MemUsage}}' "$1" | awk '{print $1}')"; }
for drv in systemd cgroupfs; do
  mkdir -p /etc/docker
  printf '{"exec-opts": ["native.cgroupdriver=%s"]}\n' "$drv" > /etc/docker/daemon.json
  systemctl restart docker.service
  if ! wait_for 120 docker info; then
    row docker "$drv" start FAIL "dockerd did not start: $(journalctl -u docker --no-pager -o cat | tail -3)"
    continue
  fi
  log "docker/$drv cgroup driver: $(docker info --format '{{.CgroupDriver}}')"
  if ! docker image inspect memcg-test:1 >/dev/null 2>&1 && ! out=$(docker import /var/tmp/rootfs.tar memcg-test:1 2>&1); then
    row docker "$drv" start FAIL "docker import failed: $(echo "$out" | tail -2 | tr '\n' ' ')"
    continue
  fi
  name=dk-$drv
  if ! out=$(docker run -d --name "$name" --network none memcg-test:1 sh -c "$workload" 2>&1); then
    row docker "$drv" start FAIL "docker run failed: $(echo "$out" | tail -2 | tr '\n' ' ')"
    continue
  fi
  id=$(docker ps --no-trunc --filter name="$name" --format '{{.ID}}')
  log "docker/$drv id=$id"
  verify docker "$drv" "$id" "$name" memcg-test:1 docker_view working_set
  log "docker/$drv $(metrics | grep '^memcg_exporter_engine_lookups_total' | tr '\n' ' ')"
  grows docker "$drv" "$id" docker exec "$name"
  docker rm -f "$name" >/dev/null
  removed docker "$drv" "$id" "Docker runs no OCI hooks"
done
systemctl stop docker.service docker.socket

fi  # docker

# ---------------------------------------------------------------- containerd (ctr)
if want ctr; then
# ctr's exec process gets no PATH: the command by its full path.
ctr_exec() {
  local id=$1 cmd=$2
  shift 2
  ctr task exec --exec-id "grow$RANDOM" "$id" "/bin/$cmd" "$@"
}
ctr_view() { ctr task metrics "$1" | awk '$1 == "memory.usage" {print $2}'; }
mkdir -p /var/lib/memcg-test/ctr
for drv in cgroupfs systemd; do
  if [ "$drv" = cgroupfs ]; then
    id=ctr-memcg-test  # ctr's default cgroup: /<namespace>/<id>
    extra=()
  else
    # The layout containerd's CRI plugin gives a container under systemd
    # (<slice>:cri-containerd:<id>, a 64-hex id), asked of ctr explicitly.
    id=$(head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    extra=(--runc-systemd-cgroup --cgroup "system.slice:cri-containerd:$id")
  fi
  ctrroot=/var/lib/memcg-test/ctr/$drv
  cp -a "$rootfs" "$ctrroot"
  ctr run -d "${extra[@]}" --rootfs "$ctrroot" "$id" /bin/sh -c "$workload" >/var/tmp/ctr-$drv.log 2>&1 &
  if ! wait_for 60 sh -c "ctr task ls | grep -q '^$id .*RUNNING'"; then
    row ctr "$drv" start FAIL "ctr run failed: $(tail -2 /var/tmp/ctr-$drv.log | tr '\n' ' ') (rootfs: $(ls "$ctrroot" | tr '\n' ' '))"
    continue
  fi
  check ctr "$drv" listed sh -c "ctr c ls -q | grep -qx '$id' && echo 'ctr c ls: $id'"
  log "ctr/$drv cgroup=$(grep -l . /sys/fs/cgroup/default/"$id"/cgroup.procs /sys/fs/cgroup/system.slice/cri-containerd-"$id".scope/cgroup.procs 2>/dev/null)"
  verify ctr "$drv" "$id" "" "" ctr_view
  grows ctr "$drv" "$id" ctr_exec "$id"
  ctr task kill -s KILL "$id" >/dev/null 2>&1
  wait_for 20 sh -c "! ctr task ls | grep -q '^$id .*RUNNING'"
  ctr task rm "$id" >/dev/null 2>&1
  ctr c rm "$id" >/dev/null 2>&1
  removed ctr "$drv" "$id" "containerd runs no hooks.d hooks"
done

fi  # ctr

# ---------------------------------------------------------------- containerd, k8s.io
# Containers as the kubelet and containerd's CRI plugin leave them: namespace
# k8s.io, the CRI labels, a sandbox and two app containers per pod, the
# systemd driver's <pod slice>:cri-containerd:<id> and the cgroupfs driver's
# /kubepods/<qos>/pod<uid>/<id>. Names come from containerd's own API
# (containers.containerd_socket), checked against `ctr containers info`.
if want k8s; then
k8s_image=localhost/memcg-test:1
k8s_image_args=()
podman image exists "$img" 2>/dev/null || podman import /var/tmp/rootfs.tar "$img" >/dev/null 2>&1
if podman save -o /var/tmp/k8s-image.tar "$img" >/dev/null 2>&1 && k8s images import /var/tmp/k8s-image.tar >/dev/null 2>&1 &&
   k8s images ls -q | grep -qx "$k8s_image"; then
  k8s_image_args=("$k8s_image")
else
  log "k8s: image import failed; containers run from a root directory"
fi
# k8s_check DRIVER ID WHEN: every label the exporter gives the container's
# cgroup equals what containerd says.
k8s_check() {
  local drv=$1 id=$2 when=$3 line want_rt=containerd
  [ "$drv" = cgroupfs ] && want_rt=cri  # the cgroupfs driver's path names no runtime
  if ! wait_for 40 info_line "$id"; then
    row k8s.io "$drv" "identity-$when" FAIL "no memcg_cgroup_info for $id"
    return
  fi
  # Names come from containerd's list or its events: a few seconds.
  wait_for 30 sh -c "curl -sf http://127.0.0.1:9756/metrics | grep '^memcg_cgroup_info{.*container_id=\"$id\"' | grep -q 'pod=\"'"
  line=$(info_line "$id")
  log "k8s.io/$drv $when $line"
  local want_name want_image
  want_name=$(ctr_field "$id" io.kubernetes.container.name)
  [ -n "$want_name" ] || want_name=$(ctr_field "$id" io.cri-containerd.kind)
  want_image=$(ctr_field "$id" Image)
  check k8s.io "$drv" "runtime-$when" sh -c "echo 'runtime=$(label "$line" runtime)'; test '$(label "$line" runtime)' = $want_rt"
  check k8s.io "$drv" "names-$when" sh -c "echo 'container_name=$(label "$line" container_name) pod=$(label "$line" pod) namespace=$(label "$line" namespace) pod_uid=$(label "$line" pod_uid)';
    test '$(label "$line" container_name)' = '$want_name' && test '$(label "$line" pod)' = '$(ctr_field "$id" io.kubernetes.pod.name)' &&
    test '$(label "$line" namespace)' = '$(ctr_field "$id" io.kubernetes.pod.namespace)' &&
    test '$(label "$line" pod_uid)' = '$(ctr_field "$id" io.kubernetes.pod.uid)'"
  if [ -n "$want_image" ]; then
    check k8s.io "$drv" "image-$when" sh -c "echo 'image=$(label "$line" image)'; test '$(label "$line" image)' = '$want_image'"
  else
    row k8s.io "$drv" "image-$when" n/a "run from a root directory: containerd has no image for it"
  fi
}

# containerd's socket is root's (0660): a group for it, and the exporter in it.
groupadd --system containerd-api
gid=$(getent group containerd-api | cut -d: -f3)
mkdir -p /etc/containerd
if grep -q '^\[grpc\]' /etc/containerd/config.toml 2>/dev/null; then
  sed -i "/^\[grpc\]/a\  gid = $gid" /etc/containerd/config.toml
else
  printf '\n[grpc]\n  gid = %s\n' "$gid" >> /etc/containerd/config.toml
fi
systemctl restart containerd
wait_for 60 ctr version
log "k8s: socket $(ls -l /run/containerd/containerd.sock)"
# Pod A (Burstable, systemd driver), created before the exporter asks containerd.
uid_a=$(cat /proc/sys/kernel/random/uuid); sb_a=$(new_id); a1=$(new_id); a2=$(new_id)
k8s_run "$sb_a" sandbox "" web-0 shop "$uid_a" burstable systemd
k8s_run "$a1" container web web-0 shop "$uid_a" burstable systemd
k8s_run "$a2" container sidecar web-0 shop "$uid_a" burstable systemd
sed -i 's|^containerd_socket = ""|containerd_socket = "/run/containerd/containerd.sock"|' "$cfg"
mkdir -p /etc/systemd/system/memcg-exporter.service.d
printf '[Service]\nSupplementaryGroups=containerd-api\n' > /etc/systemd/system/memcg-exporter.service.d/containerd.conf
systemctl daemon-reload
systemctl restart "$unit"
wait_for 60 systemctl is-active --quiet "$unit"
check k8s.io - connected sh -c "for i in \$(seq 60); do test \"\$(curl -sf http://127.0.0.1:9756/metrics | awk '\$1 == \"memcg_exporter_containerd_connected\" {print \$2}')\" = 1 && exit 0; sleep 0.5; done; echo 'connected=$(connected)'; exit 1"
for id in "$sb_a" "$a1" "$a2"; do k8s_check systemd "$id" before; done
# Pods B (Guaranteed, systemd) and C (BestEffort, cgroupfs) after it started.
uid_b=$(cat /proc/sys/kernel/random/uuid); sb_b=$(new_id); b1=$(new_id); b2=$(new_id)
k8s_run "$sb_b" sandbox "" db-0 store "$uid_b" "" systemd
k8s_run "$b1" container db db-0 store "$uid_b" "" systemd
k8s_run "$b2" container backup db-0 store "$uid_b" "" systemd
uid_c=$(cat /proc/sys/kernel/random/uuid); sb_c=$(new_id); c1=$(new_id); c2=$(new_id)
k8s_run "$sb_c" sandbox "" batch-0 jobs "$uid_c" besteffort cgroupfs
k8s_run "$c1" container worker batch-0 jobs "$uid_c" besteffort cgroupfs
k8s_run "$c2" container reporter batch-0 jobs "$uid_c" besteffort cgroupfs
for id in "$sb_b" "$b1" "$b2"; do k8s_check systemd "$id" after; done
for id in "$sb_c" "$c1" "$c2"; do k8s_check cgroupfs "$id" after; done
log "k8s: $(metrics | grep -E '^memcg_exporter_(containerd|engine_lookups_total\{engine="containerd")' | tr '\n' ' ')"
# The cadvisor profile over the same containers: the kubelet's labels, equal
# to containerd's own, and cAdvisor's working set from the cgroup's files.
cadvisor_line() { metrics | grep "^container_memory_working_set_bytes{" | grep "name=\"$1\"" | grep 'pod="'; }  # named: containerd listed
cadvisor_check() {  # cadvisor_check ID WHAT
  local id=$1 what=$2 line want_container cg ws
  wait_for 30 cadvisor_line "$id" || { row k8s.io cadvisor "labels-$what" FAIL "no container_memory_working_set_bytes for $id"; return; }
  line=$(cadvisor_line "$id")
  want_container=$(ctr_field "$id" io.kubernetes.container.name)
  check k8s.io cadvisor "labels-$what" sh -c "echo 'container=$(label "$line" container) pod=$(label "$line" pod) namespace=$(label "$line" namespace) image=$(label "$line" image)';
    test '$(label "$line" container)' = '$want_container' && test '$(label "$line" pod)' = '$(ctr_field "$id" io.kubernetes.pod.name)' &&
    test '$(label "$line" namespace)' = '$(ctr_field "$id" io.kubernetes.pod.namespace)' && test '$(label "$line" image)' = '$(ctr_field "$id" Image)'"
  cg=/sys/fs/cgroup$(label "$line" id)
  ws=$(( $(cat "$cg/memory.current") - $(awk '$1 == "inactive_file" {print $2}' "$cg/memory.stat") ))
  check k8s.io cadvisor "working-set-$what" within "${line##* }" "$ws"
}
cp "$cfg" /root/config.k8s
sed -i 's/^profile = .*/profile = "cadvisor"/' "$cfg"
systemctl restart "$unit"
wait_for 60 systemctl is-active --quiet "$unit"
cadvisor_check "$sb_b" sandbox
cadvisor_check "$b1" systemd
cadvisor_check "$c1" cgroupfs
log "k8s cadvisor: $(metrics | grep "^container_memory_working_set_bytes{.*name=\"$b1\"")"
cp /root/config.k8s "$cfg"
systemctl restart "$unit"
wait_for 60 systemctl is-active --quiet "$unit"

# containerd restarted under the exporter: it reconnects, lists again, and a
# container created after the restart is named too.
systemctl restart containerd
wait_for 60 ctr version
b3=$(new_id)
k8s_run "$b3" container cache db-0 store "$uid_b" "" systemd
k8s_check systemd "$b3" restarted
check k8s.io - reconnected sh -c "test \"\$(curl -sf http://127.0.0.1:9756/metrics | awk '\$1 == \"memcg_exporter_containerd_connected\" {print \$2}')\" = 1 && echo connected=1"
# containerd gone: a clear metric, the exporter otherwise fine.
systemctl stop containerd
check k8s.io - socket-absent sh -c "for i in \$(seq 60); do test \"\$(curl -sf http://127.0.0.1:9756/metrics | awk '\$1 == \"memcg_exporter_containerd_connected\" {print \$2}')\" = 0 && curl -sf http://127.0.0.1:9756/-/healthy >/dev/null && echo 'connected=0, healthy' && exit 0; sleep 0.5; done; echo 'connected=$(connected)'; exit 1"
log "k8s: journal $(journalctl -u "$unit" --no-pager -o cat | grep -i containerd | tail -3 | tr '\n' ' ')"
systemctl start containerd
wait_for 60 ctr version
# A removed container goes within a rescan, its labels with it.
last_path=$(label "$(info_line "$c2")" cgroup)
k8s task kill -s KILL "$c2" >/dev/null 2>&1
wait_for 20 sh -c "! ctr -n k8s.io task ls | grep -q '^$c2 .*RUNNING'"
k8s task rm "$c2" >/dev/null 2>&1
k8s c rm "$c2" >/dev/null 2>&1
removed k8s.io cgroupfs "$c2" "containerd runs no hooks.d hooks"
for id in "$sb_a" "$a1" "$a2" "$sb_b" "$b1" "$b2" "$b3" "$sb_c" "$c1"; do
  k8s task kill -s KILL "$id" >/dev/null 2>&1
done
fi  # k8s

# ---------------------------------------------------------------- the image
# The container image (packaging/container/build) run as the DaemonSet runs it
# (packaging/kubernetes/memcg-exporter.yaml, translated by manifest_run.py:
# spec.json and identity.spec.json for containerd, podman.args and
# identity.podman.args for podman), both of the pod's containers sharing the
# records directory, scraped on the host's network: the exporter must see
# the guest's containers with the names the identity container wrote from
# containerd's API (a k8s.io pod, and itself under containerd), while its own
# process holds neither containerd's socket nor group 0, and the identity
# container listens on nothing.
if want image; then
. /var/lib/memcg-image/image.env
# The image's exporter listens on :9756: the package's own stops meanwhile.
systemctl stop "$unit"
# containerd as a node has it: its socket root:root 0660 (the k8s section gave it a group).
sed -i '/^ *gid = /d' /etc/containerd/config.toml 2>/dev/null
systemctl restart containerd
wait_for 60 ctr version
log "image: socket $(ls -l /run/containerd/containerd.sock)"
check image - import sh -c "ctr -n k8s.io images import '$IMG_ARCHIVE' >/dev/null && ctr -n k8s.io images ls -q | grep -x '$IMG_REF'"
uid_i=$(cat /proc/sys/kernel/random/uuid); sb_i=$(new_id); app_i=$(new_id)
k8s_run "$sb_i" sandbox "" shop-0 shop "$uid_i" burstable systemd
k8s_run "$app_i" container web shop-0 shop "$uid_i" burstable systemd
# podman containers under kubepods.slice (which the ConfigMap collects;
# podman's own machine.slice is not) with CRI-O's annotations.
pod_slice=kubepods-besteffort.slice
crio() {  # crio POD NAMESPACE CONTAINER IMAGE: podman run's arguments
  echo "--cgroup-parent=$pod_slice --annotation=io.kubernetes.pod.name=$1 --annotation=io.kubernetes.pod.namespace=$2"
  echo "--annotation=io.kubernetes.container.name=$3 --annotation=io.kubernetes.cri-o.ImageName=$4"
}

# The pid of k8s.io task $1 once it runs.
task_pid() {
  wait_for 60 sh -c "ctr -n k8s.io task ls | grep -q '^$1 .*RUNNING'" || return 1
  ctr -n k8s.io task ls | awk -v id="$1" '$1 == id {print $2}'
}
# has_labels ID LABEL=VALUE...: memcg_cgroup_info of container ID carries them all.
has_labels() {
  local line l
  line=$(info_line "$1")
  shift
  for l in "$@"; do [ "$(label "$line" "${l%%=*}")" = "${l#*=}" ] || return 1; done
}
# image_named RUNTIME ID WHAT EXPECT...: within 30 s, memcg_cgroup_info of
# container ID carries every label=value in EXPECT.
image_named() {
  local rt=$1 id=$2 what=$3
  shift 3
  if wait_for 30 has_labels "$id" "$@"; then
    row image "$rt" "$what" ok "$*"
  else
    row image "$rt" "$what" FAIL "want $*: $(info_line "$id" || echo "no memcg_cgroup_info for $id")"
  fi
}
# The process as the manifest asks: its user and groups, no capabilities, no
# new privileges, a read-only root.
proc_hardened() {
  local st root uid=${2:-$IMG_UID} gid=${3:-$IMG_GID} g
  st=$(grep -E '^(Uid|Gid|Groups|CapEff|NoNewPrivs):' "/proc/$1/status" | tr -s '\t ' ' ' | paste -sd' ')
  root=$(awk '$5 == "/" {print $6}' "/proc/$1/mountinfo")
  echo "$st root=$root"
  [[ "$st" == *"Uid: $uid $uid $uid $uid "* && "$st" == *"Gid: $gid $gid $gid $gid "* &&
     "$st" == *"CapEff: 0000000000000000"* && "$st" == *"NoNewPrivs: 1"* && "$root" == ro* ]] || return 1
  # Every supplementary group is the manifest's or the primary one (podman
  # lists the primary group there too; runc does not).
  for g in $(grep '^Groups:' "/proc/$1/status" | cut -d: -f2); do
    [[ " $IMG_GROUPS $gid " == *" $g "* ]] || return 1
  done
}
# The exporter's process cannot reach containerd: no socket at containerd's
# path in its mount namespace (a runtime may leave the empty file it bound
# another container's socket over, where both share a root), no group 0.
no_containerd() {
  if [ -S "/proc/$1/root/run/containerd/containerd.sock" ]; then echo "containerd.sock visible"; return 1; fi
  if grep -qE '^(Gid:[[:space:]]+0[[:space:]]|Groups:.*[[:space:]]0([[:space:]]|$))' "/proc/$1/status"; then echo "group 0"; return 1; fi
  echo "no socket at /run/containerd/containerd.sock; $(grep -E '^(Gid|Groups):' "/proc/$1/status" | tr -s '\t ' ' ' | paste -sd' ')"
}
# The identity container listens on nothing (TCP or Unix).
listens_on_nothing() {
  local inodes l
  inodes=$(find "/proc/$1/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | sed 's/socket:\[\(.*\)\]/\1/' | sort -u)
  l=$(for i in $inodes; do awk -v i="$i" '$10 == i && $4 == "0A"' /proc/net/tcp /proc/net/tcp6; awk -v i="$i" '$7 == i && $6 == "01"' /proc/net/unix; done)
  echo "sockets: $(echo "$inodes" | grep -c .), listening: $(echo "$l" | grep -c .)"
  [ -z "$l" ]
}
# The process's cgroup has the manifest's memory limit.
proc_limited() {
  local cg
  cg=/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$1/cgroup")
  echo "memory.max=$(cat "$cg/memory.max") memory.current=$(cat "$cg/memory.current")"
  [ "$(cat "$cg/memory.max")" = "$IMG_MEMORY_LIMIT" ]
}
# The exporter sizes what it collects by that limit, found from inside its
# container (its own cgroup through the runtime's /sys/fs/cgroup mount).
budget_is_limit() {
  local b
  b=$(metrics | awk '$1 == "memcg_exporter_memory_budget_bytes" {print $2}')
  echo "memcg_exporter_memory_budget_bytes=$b"
  [ "$b" = "$IMG_MEMORY_LIMIT" ]
}
# /metrics answers with cgroups, the exporter talking to no containerd.
serving() {
  for _ in $(seq 60); do
    if metrics | grep -q '^memcg_cgroup_info{' && [ -z "$(connected)" ]; then echo "metrics, no containerd client"; return 0; fi
    sleep 1
  done
  metrics | grep -E '^memcg_exporter_(containerd|root)' | tr '\n' ' '
  return 1
}
# image_checks RUNTIME PID IDENTITY_PID [SELF_ID SELF_LABELS...]: the
# running image's two processes, then what the exporter serves, then the
# names it gives.
image_checks() {
  local rt=$1 pid=$2 idn=$3 self=${4:-}
  shift 3
  [ -n "$self" ] && shift
  check image "$rt" hardened proc_hardened "$pid"
  check image "$rt" no-containerd no_containerd "$pid"
  check image "$rt" identity-hardened proc_hardened "$idn" "$IDN_UID" "$IDN_GID"
  check image "$rt" identity-no-port listens_on_nothing "$idn"
  check image "$rt" memory-limit proc_limited "$pid"
  check image "$rt" serves serving
  check image "$rt" memory-budget budget_is_limit
  image_named "$rt" "$app_i" names-pod "container_name=$(ctr_field "$app_i" io.kubernetes.container.name)" \
    "pod=$(ctr_field "$app_i" io.kubernetes.pod.name)" "namespace=$(ctr_field "$app_i" io.kubernetes.pod.namespace)"
  if [ -n "$self" ]; then image_named "$rt" "$self" names-self "$@"; fi
}

# 1. containerd, the image's own configuration (entrypoint, cmd, user) with
# what ctr's flags can harden: read-only, containerd's seccomp profile, every
# default capability dropped. No group for the socket: paths and records only.
caps=()
for c in CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE; do
  caps+=(--cap-drop "CAP_$c")
done
k8s run -d --net-host --read-only --seccomp "${caps[@]}" --mount type=bind,src=/sys/fs/cgroup,dst=/host/cgroup,options=rbind:ro \
  "$IMG_REF" memcg-image-defaults >/var/tmp/img-defaults.log 2>&1 &
proc_user() {
  grep -E '^(Uid|CapEff):' "/proc/$1/status" | tr -s '\t' ' ' | paste -sd' ' | grep 'Uid: 65534 65534 65534 65534 CapEff: 0000000000000000'
}
named_by_path() { wait_for 60 info_line "$1" && echo "memcg_cgroup_info for container_id=$1"; }
if ! pid=$(task_pid memcg-image-defaults); then
  row image ctr-defaults start FAIL "$(tail -3 /var/tmp/img-defaults.log | tr '\n' ' ')"
else
  check image ctr-defaults user proc_user "$pid"
  check image ctr-defaults serves named_by_path "$app_i"
  log "image ctr-defaults: $(metrics | grep -c '^memcg_cgroup_info{') cgroups"
fi
k8s task kill -s TERM memcg-image-defaults >/dev/null 2>&1
wait_for 20 sh -c "! ctr -n k8s.io task ls | grep -q '^memcg-image-defaults '"
k8s task rm memcg-image-defaults >/dev/null 2>&1; k8s c rm memcg-image-defaults >/dev/null 2>&1

# 2. containerd with the manifest's settings: the CRI plugin's spec, the
# image's root (a writable snapshot the runtime mounts read-only, as CRI does).
mkdir -p /var/lib/memcg-image/rootfs "$IDN_ROOTFS"
k8s images mount --rw "$IMG_REF" /var/lib/memcg-image/rootfs >/dev/null
k8s images mount --rw "$IMG_REF" "$IDN_ROOTFS" >/dev/null
k8s run -d --config /var/lib/memcg-image/identity.spec.json --label "io.kubernetes.pod.name=$IMG_POD" \
  --label "io.kubernetes.pod.namespace=$IMG_NAMESPACE" --label "io.kubernetes.pod.uid=$IMG_POD_UID" \
  --label "io.kubernetes.container.name=$IDN_CONTAINER" --label io.cri-containerd.kind=container "$IDN_CID" >/var/tmp/img-idn.log 2>&1 &
k8s run -d --config /var/lib/memcg-image/spec.json --label "io.kubernetes.pod.name=$IMG_POD" \
  --label "io.kubernetes.pod.namespace=$IMG_NAMESPACE" --label "io.kubernetes.pod.uid=$IMG_POD_UID" \
  --label "io.kubernetes.container.name=$IMG_CONTAINER" --label io.cri-containerd.kind=container "$IMG_CID" >/var/tmp/img-ctr.log 2>&1 &
if ! pid=$(task_pid "$IMG_CID") || ! idn=$(task_pid "$IDN_CID"); then
  row image ctr-manifest start FAIL "$(tail -3 /var/tmp/img-ctr.log /var/tmp/img-idn.log | tr '\n' ' ')"
else
  image_checks ctr-manifest "$pid" "$idn" "$IMG_CID" "pod=$IMG_POD" "namespace=$IMG_NAMESPACE" "container_name=$IMG_CONTAINER"
  log "image ctr-manifest: $(metrics | grep -E '^process_resident_memory_bytes' | tr '\n' ' ') records: $(ls /var/lib/memcg-image/volumes/records | wc -l)"
fi
for id in "$IMG_CID" "$IDN_CID"; do
  k8s task kill -s TERM "$id" >/dev/null 2>&1
  wait_for 20 sh -c "! ctr -n k8s.io task ls | grep -q '^$id '"
  k8s task rm "$id" >/dev/null 2>&1; k8s c rm "$id" >/dev/null 2>&1
done
k8s images unmount --rm /var/lib/memcg-image/rootfs >/dev/null 2>&1
k8s images unmount --rm "$IDN_ROOTFS" >/dev/null 2>&1

# 3. podman with the manifest's settings (its default seccomp profile too).
check image - podman-load sh -c "podman load -i '$IMG_ARCHIVE' >/dev/null && podman image exists '$IMG_REF' && echo '$IMG_REF'"
mapfile -t pargs < /var/lib/memcg-image/podman.args
mapfile -t iargs < /var/lib/memcg-image/identity.podman.args
# Both containers; under podman the identity container still names
# containerd's containers (the k8s.io pod), not podman's own: a CRI-O node
# uses the OCI hook's records instead (the manifest's header).
# shellcheck disable=SC2086  # IMG_ARGS, IDN_ARGS: the manifest's args, split as they were listed
# shellcheck disable=SC2046
if out=$(podman run -d --name memcg-identity "${iargs[@]}" "$IMG_REF" $IDN_ARGS 2>&1) &&
   out=$(podman run -d --name memcg-image $(crio "$IMG_POD" "$IMG_NAMESPACE" "$IMG_CONTAINER" "$IMG_REF") "${pargs[@]}" "$IMG_REF" $IMG_ARGS 2>&1); then
  image_checks podman-manifest "$(podman inspect --format '{{.State.Pid}}' memcg-image)" \
    "$(podman inspect --format '{{.State.Pid}}' memcg-identity)"
else
  row image podman-manifest start FAIL "$(echo "$out" | tail -2 | tr '\n' ' ')"
fi
log "image podman: $(podman logs memcg-image 2>&1 | tail -3 | tr '\n' ' ') identity: $(podman logs memcg-identity 2>&1 | tail -3 | tr '\n' ' ')"
podman rm -f -t 5 memcg-image memcg-identity >/dev/null 2>&1
for id in "$sb_i" "$app_i"; do k8s task kill -s KILL "$id" >/dev/null 2>&1; done
systemctl start "$unit"
fi  # image

# ---------------------------------------------------------------- systemd-nspawn
if want nspawn; then
# A command inside machine $1: in its leader's cgroup and mount namespace
# (busybox has no systemd for systemd-run -M or machinectl shell).
nspawn_exec() {
  local m=$1 leader cg
  shift
  leader=$(machinectl show -p Leader --value "$m")
  cg=$(sed -n 's/^0:://p' "/proc/$leader/cgroup")
  bash -c 'echo $$ > "$0/cgroup.procs" && exec nsenter -t "$1" -m -p -- "${@:2}"' "/sys/fs/cgroup$cg" "$leader" "$@"
}
nspawn_view() { systemctl show -p MemoryCurrent --value "$(machinectl show -p Unit --value "$1")"; }
mkdir -p /var/lib/machines
cp -a "$rootfs" /var/lib/machines/memcgns
for drv in scope service; do
  m=memcg-$drv
  if [ "$drv" = scope ]; then
    # Run from a shell: machined puts the payload in machine-<name>.scope.
    cp -a "$rootfs" "/var/lib/memcg-test/$m"
    setsid systemd-nspawn -q --register=yes -M "$m" -D "/var/lib/memcg-test/$m" /bin/sh -c "$workload" </dev/null >/dev/null 2>&1 &
  else
    # machinectl start: systemd-nspawn@<name>.service, booting busybox init.
    cp -a "$rootfs" "/var/lib/machines/$m"
    machinectl start "$m"
  fi
  if ! wait_for 60 sh -c "machinectl list --no-legend | grep -q '^$m '"; then
    row nspawn "$drv" start FAIL "machine $m not registered"
    continue
  fi
  wait_for 20 sh -c "machinectl shell $m /bin/true" >/dev/null 2>&1 || true
  check nspawn "$drv" listed sh -c "machinectl list --no-legend | grep '^$m '"
  verify nspawn "$drv" "$m" "" "" nspawn_view
  grows nspawn "$drv" "$m" nspawn_exec "$m"
  machinectl terminate "$m"
  wait_for 30 sh -c "! machinectl list --no-legend | grep -q '^$m '"
  removed nspawn "$drv" "$m" "systemd-nspawn runs no OCI hooks"
done

fi  # nspawn

# --- Fixtures: what the hook received (podman's createRuntime).
for d in /var/tmp/hookcap/*; do
  [ -d "$d" ] || continue
  for f in state.json config.json; do
    [ -f "$d/$f" ] || continue
    echo "FIXTURE-BEGIN $(basename "$d") $f"
    base64 -w 120 "$d/$f"
    echo "FIXTURE-END"
  done
done
echo "RUNTIME cgroups under machine.slice, system.slice, libpod_parent, docker, default:"
find /sys/fs/cgroup -maxdepth 3 -type d | grep -E 'libpod|docker|default|containerd|machine' | sed 's/^/RUNTIME path /'

echo "--- journal of $unit"
journalctl -u "$unit" --no-pager -o short-monotonic | grep -v 'Started\|Starting' | tail -n 25 | sed 's/^/RUNTIME journal /'
echo "RESULT $([ $fail = 0 ] && echo PASS || echo FAIL) uptime=$(cut -d' ' -f1 /proc/uptime)"
systemctl poweroff --no-block
