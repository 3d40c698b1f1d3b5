# Sourced by packaging/run-tests and packaging/run-fuzz: compile through
# ccache where it is installed (install-build-deps installs it with the test
# tools), so that a machine running the builds again (CI builds the plain,
# the two sanitizer and the fuzz builds from scratch in a fresh clone each
# time) compiles only what changed. ccache keys each object by a hash of
# the compiler, its arguments and every input file, so a hit is the object
# that compiler would have made; CCACHE_BASEDIR makes the paths under this
# checkout relative, so a clone in another directory hits too (a unity
# batch names its sources by absolute path: those hit only from the same
# directory). MEMCG_CCACHE=0 turns it off; CCACHE_DIR (default
# /var/cache/memcg-exporter-ccache, or ccache's own where that is not
# writable) and CCACHE_MAXSIZE (default 8G) as ccache reads them.
# Sets ccache_args: the CMake arguments that route the compilers through it.
ccache_args=()
if [ "${MEMCG_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  if [ -z "${CCACHE_DIR:-}" ] && { [ -w /var/cache/memcg-exporter-ccache ] || [ -w /var/cache ]; }; then
    export CCACHE_DIR=/var/cache/memcg-exporter-ccache
  fi
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)} CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  ccache_args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

# ccache_zero before a build, ccache_summary after it: one line of what the
# build took from the cache.
ccache_zero() {
  [ ${#ccache_args[@]} -eq 0 ] || ccache --zero-stats >/dev/null
}
ccache_summary() {
  [ ${#ccache_args[@]} -gt 0 ] || return 0
  ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {hit += $2}
    $1 == "cache_miss" {miss = $2}
    END {printf "ccache: %d of %d compilations from the cache\n", hit, hit + miss}'
}
