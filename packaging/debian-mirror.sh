# Sourced by the scripts that bootstrap a Debian root with mmdebstrap (the
# VM guests, the container image, the first-run test): where this machine's
# Debian packages come from, and its apt options (e.g. a mirror that serves
# old Release files), so that a root is built from the same mirror as the host.
# MIRROR in the environment overrides the mirror.

# Prints the mirror's URL.
debian_mirror() {
  local m=${MIRROR:-}
  [ -n "$m" ] || m=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [ -n "$m" ] || m=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  echo "${m:-http://deb.debian.org/debian}"
}

# mmdebstrap --aptopt arguments for the host's local apt settings (99*).
debian_aptopts=()
for _f in /etc/apt/apt.conf.d/99*; do [ -f "$_f" ] && debian_aptopts+=(--aptopt="$_f"); done
unset _f

# Prints the host's apt source files (deb822 .sources and a sources.list with
# entries), one per line: mmdebstrap takes them as its mirrors, so that a root
# gets the host's suites (updates and security too). Falls back to the mirror.
debian_sources() {
  local f found=
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
    [ -f "$f" ] && grep -qE '^(deb |Types:)' "$f" && { echo "$f"; found=1; }
  done
  [ -n "$found" ] || debian_mirror
}
