# Shared by the VM test scripts: packages, the Debian cloud kernel (downloaded
# and unpacked, never installed on the host), QEMU invocation.
# MEMCG_VM_CACHE (default /var/cache/memcg-exporter-vm) keeps downloads between runs.

VM_CACHE=${MEMCG_VM_CACHE:-/var/cache/memcg-exporter-vm}
vm_log() { echo "[vm $(date +%H:%M:%S)] $*" >&2; }

vm_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  vm_log "installing ${missing[*]}"
  # One install at a time: guests may start side by side (packaging/run-tests
  # runs the OOM checks of both kernels at once), and apt-get fails at once
  # on a lock another holds.
  (
    flock 9
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  ) 9>/var/lock/memcg-vm-packages.lock
}

# What is kept in $VM_CACHE between runs (a kernel package unpacked, a
# bootstrapped root's tarball) is sealed with its checksums when made
# (PATH.sha256: every file of a directory) and checked before each use: an
# item whose seal is missing or no longer matches (a disk error, a run killed
# while writing, a hand edit) is made again, never used as it is.
vm_cache_seal() {
  local p=$1
  if [ -d "$p" ]; then
    (cd "$p" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$p.sha256.partial"
  else
    (cd "$(dirname "$p")" && sha256sum "$(basename "$p")") > "$p.sha256.partial"
  fi
  mv "$p.sha256.partial" "$p.sha256"
}
vm_cache_ok() {
  local p=$1
  [ -e "$p" ] && [ -s "$p.sha256" ] || return 1
  if [ -d "$p" ]; then
    [ "$(cd "$p" && find . -type f | wc -l)" = "$(wc -l < "$p.sha256")" ] || return 1
    (cd "$p" && sha256sum -c --quiet --strict "$p.sha256") >/dev/null 2>&1
  else
    (cd "$(dirname "$p")" && sha256sum -c --quiet --strict "$p.sha256") >/dev/null 2>&1
  fi
}
# vm_cache_check PATH: removes PATH when it is there but fails its seal.
vm_cache_check() {
  [ -e "$1" ] || return 0
  vm_cache_ok "$1" && return 0
  vm_log "cached $(basename "$1") fails its checksums (or has none): made again"
  rm -rf "$1" "$1.sha256"
}

# The kernel the guests boot: MEMCG_VM_KERNEL=6.1 (default: Debian 12's cloud
# kernel, from the host's own apt sources) or 6.12 (Debian 13's, fetched from
# the same mirror's trixie suite through a private sources list and private
# apt state under $VM_CACHE/trixie-apt: the host's apt setup is never changed).
VM_KERNEL=${MEMCG_VM_KERNEL:-6.1}

# apt-get/apt-cache options for the private trixie sources (created on first use).
vm_trixie_apt() {
  local d="$VM_CACHE/trixie-apt" mirror
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  if [ ! -f "$d/sources.list" ]; then
    . "$(dirname "${BASH_SOURCE[0]}")/../../packaging/debian-mirror.sh"
    mirror=$(debian_mirror)
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" > "$d/sources.list"
  fi
  # APT::Sandbox::User=root: the lists live outside /var/lib/apt, where _apt
  # could not write them.
  echo "-o Dir::Etc::sourcelist=$d/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$d/lists" \
       "-o Dir::Cache=$d/cache -o Dir::State::status=/dev/null -o APT::Sandbox::User=root"
}

# Prints the unsigned image package behind linux-image-cloud-amd64 for the
# apt options given (updating their lists once if they know no such package).
vm_kernel_package() {
  local meta
  meta=$(apt-cache "$@" depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [ -z "$meta" ]; then
    apt-get "$@" update -qq >&2
    meta=$(apt-cache "$@" depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  fi
  [ -n "$meta" ] && echo "$meta-unsigned"
}

# Prints the path of the chosen cloud kernel's vmlinuz (MEMCG, PSI, NVMe, ext4
# and the 8250 console built in: it boots without an initramfs's modules).
# Downloaded once into $VM_CACHE/kernel; a cached kernel of the requested
# series is used when the mirror cannot be reached.
vm_kernel() {
  mkdir -p "$VM_CACHE/kernel"
  local opts=() pkg series
  case "$VM_KERNEL" in
    6.1) series=6.1 ;;
    6.12) series=6.12; read -r -a opts <<<"$(vm_trixie_apt)" ;;
    *) vm_log "MEMCG_VM_KERNEL=$VM_KERNEL: expected 6.1 or 6.12"; return 1 ;;
  esac
  pkg=$(vm_kernel_package "${opts[@]}") || pkg=
  if [ -z "$pkg" ]; then
    pkg=$(ls -d "$VM_CACHE/kernel/linux-image-$series".*-unsigned 2>/dev/null | tail -1)
    [ -n "$pkg" ] || { vm_log "no $series cloud kernel in the mirror or in $VM_CACHE/kernel"; return 1; }
    pkg=$(basename "$pkg")
    vm_log "mirror unreachable: using the cached $pkg"
  fi
  case "$pkg" in linux-image-"$series".*) ;; *) vm_log "$pkg is not a $series kernel"; return 1 ;; esac
  # One fetch at a time: guests of one kernel may start side by side.
  exec 8>"$VM_CACHE/kernel/.lock"
  flock 8
  vm_cache_check "$VM_CACHE/kernel/$pkg"
  if [ ! -d "$VM_CACHE/kernel/$pkg" ]; then
    vm_log "downloading $pkg"
    local tmp
    tmp=$(mktemp -d "$VM_CACHE/kernel/dl.XXXXXX")
    chmod 777 "$tmp"  # apt-get download runs as _apt (apt checks the package against the signed index)
    (cd "$tmp" && apt-get "${opts[@]}" download -qq "$pkg" && dpkg -x "$pkg"_*.deb "$tmp/root") &&
      vm_cache_seal "$tmp/root" && mv "$tmp/root.sha256" "$VM_CACHE/kernel/$pkg.sha256" &&
      mv "$tmp/root" "$VM_CACHE/kernel/$pkg"
    rm -rf "$tmp"
    [ -d "$VM_CACHE/kernel/$pkg" ] || { flock -u 8; vm_log "could not download $pkg"; return 1; }
  fi
  flock -u 8
  exec 8>&-
  local config
  config=$(ls "$VM_CACHE/kernel/$pkg"/boot/config-*)
  for o in MEMCG PSI CGROUPS BLK_DEV_NVME EXT4_FS SERIAL_8250_CONSOLE DEVTMPFS; do
    grep -q "^CONFIG_$o=y" "$config" || { vm_log "kernel lacks CONFIG_$o=y"; return 1; }
  done
  ls "$VM_CACHE/kernel/$pkg"/boot/vmlinuz-*
}

# The skeleton of a busybox initramfs in DIR (the binaries go in afterwards).
vm_initramfs_root() {
  mkdir -p "$1"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc}
  cp /bin/busybox "$1/bin/"
  ln -s busybox "$1/bin/sh"
}

# Packs DIR into the gzipped cpio archive OUT.
vm_pack_initramfs() {
  (cd "$1" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 > "$2"
}

# Copies a dynamically linked binary and every library it needs into a root.
vm_copy_with_libs() {
  local bin=$1 root=$2 dest=$3
  install -D -m755 "$bin" "$root/$dest/$(basename "$bin")"
  ldd "$bin" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
    [ -e "$root$lib" ] || install -D -m755 "$lib" "$root$lib"  # the ELF interpreter must be executable
  done
}

# Software-emulated x86 machine: 2 CPUs, 2 GiB, serial console on stdout,
# isa-debug-exit so the guest can hand back a verdict as the exit status.
# The guest keeps time with the TSC, as real x86 hosts do. Left to choose, the
# emulated kernel marks the TSC unstable and falls back to the HPET, and every
# clock_gettime() becomes a system call with an emulated device read (the vDSO
# cannot read the HPET): a cost no production host pays, and one that fell on
# the daemon's timed memory.stat reads and not on the bare loops it is
# compared with.
VM_CLOCK="clocksource=tsc tsc=reliable"
VM_QEMU=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2048 -nodefaults -no-user-config
         -display none -serial stdio -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04)

# True when the serial log LOG ends in a kernel panic before anything but the
# kernel (or QEMU) wrote to the console: the guest's own programs never ran.
# Or when the kernel panicked at any time on a byte of its own text that is
# a no-op or a breakpoint (the oops's Code: line marks the faulting byte:
# <90>, <0f> 1f, <cc>): the bytes the kernel rewrites when it turns a static
# branch on (memcg turns some on with the first memory cgroup, where the OOM
# guest's kernel faulted). A no-op does not fault; a vCPU that ran a site
# half patched, most likely, is the emulator's doing.
vm_boot_panicked() {
  tr -d '\r' < "$1" | awk '/Kernel panic/ {panic = 1; exit}
    /Code: .*(<90>|<0f> 1f|<cc>)/ {patched = 1}
    NF && !/^\[ *[0-9]+\.[0-9]+\]/ && !/^qemu-system/ {ran = 1}
    END {exit !(panic && (!ran || patched))}'
}

# vm_boot LOG CMD...: runs CMD, a guest boot that writes its serial log to LOG,
# and once more when the kernel panicked before the guest's init ran, or on a
# patched site (vm_boot_panicked). Under multi-threaded emulation the 6.12
# kernel once panicked in its timer tick at 4.4 s of boot, two guests running
# side by side: RIP was inside the static branch of sched_clock_tick that the
# kernel patches when it marks sched_clock stable, most likely a race of code
# patched on one vCPU while the other ran it, and before any of the project's
# code ran. Once more at 8.2 s, in the OOM guest's first mkdir of a memory
# cgroup, before the exporter was up: kmem_cache_free faulted in an interrupt
# on the second byte of a two-byte no-op (66 <90>). The panic's first lines
# are printed, and a second panic fails the run.
vm_boot() {
  local log=$1 rc=0
  shift
  "$@" || rc=$?
  if vm_boot_panicked "$log"; then
    vm_log "the kernel panicked before the guest's init ran, or on a site it patches; its first lines, then one more boot:"
    tr -d '\r' < "$log" | grep -a -m 8 -E 'BUG|Oops|invalid opcode|general protection|RIP:|Kernel panic' >&2 || true
    rc=0
    "$@" || rc=$?
  fi
  return "$rc"
}

# The modules directory (lib/modules/VERSION) of an unpacked kernel package
# KDIR: Debian 13 ships it under usr/ (merged /usr), Debian 12 does not.
vm_modules_dir() {
  local d
  for d in "$1"/lib/modules/* "$1"/usr/lib/modules/*; do
    [ -d "$d" ] && { echo "$d"; return 0; }
  done
  return 1
}

# The virtio network driver of KERNEL's package, and the modules it needs, into
# DIR with DIR/order (insmod order, dependencies first): the cloud kernel
# builds it as a module and busybox's insmod does not resolve dependencies.
vm_net_modules() {
  local kdir mods
  kdir=$(dirname "$(dirname "$1")")
  mods=$(vm_modules_dir "$kdir")
  mkdir -p "$2"
  : > "$2/order"
  add() {
    local f dep
    grep -qx "$1" "$2/order" && return 0
    grep -q "/$1\.ko$" "$mods/modules.builtin" 2>/dev/null && return 0  # built in (6.12: virtio_pci)
    f=$(find "$mods" -name "$1.ko" -o -name "$1.ko.xz" | head -1)
    [ -n "$f" ] || { vm_log "no module $1 in $mods"; return 1; }
    for dep in $(/sbin/modinfo -F depends "$f" | tr ',' ' '); do add "$dep" "$2"; done
    case "$f" in *.xz) xz -dc "$f" > "$2/$1.ko" ;; *) cp "$f" "$2/$1.ko" ;; esac
    echo "$1" >> "$2/order"
  }
  add virtio_pci "$2"
  add virtio_net "$2"
}
