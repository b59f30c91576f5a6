#!/usr/bin/env bash
# The latency of a small run on this tree against a baseline commit (default bf0c255), measured the
# same way on both: tools/perf/latency_probe.cpp, a small program over the public API both share,
# is compiled against each build's include/ and libchiprt.so and times Worker::run from the
# caller's side. The two builds run alternately in batches (so load hits both alike); the script
# prints p50 and p99 of each, in microseconds, and the ratio current / baseline.
#   scripts/latency-baseline.sh                       # hbg/replay, empty and 1 task, in process
#   scripts/latency-baseline.sh --runs 2000 --columns hbg,hbg/replay,ring --isolated
#   scripts/latency-baseline.sh --commit <rev>        # another baseline
# The baseline is built in a git worktree of the commit in a temporary directory (release preset,
# only the library), removed at exit; CHIPRT_BASELINE_DIR=DIR keeps it in DIR for the next call.
# The current tree's library is built in build/release. ccache is used when CCACHE_DIR is set.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

commit=bf0c255
runs=1000
batches=10
columns=hbg/replay
isolated=0
while [ $# -gt 0 ]; do
  case $1 in
    --commit) commit=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --columns) columns=$2; shift 2 ;;
    --isolated) isolated=1; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "latency-baseline.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
done
if ((runs < batches)); then batches=$runs; fi

launcher=()
if [ -n "${CCACHE_DIR:-}" ] && command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

base=${CHIPRT_BASELINE_DIR:-}
temp=$(mktemp -d)
cleanup() {
  if [ -z "${CHIPRT_BASELINE_DIR:-}" ] && [ -d "$temp/baseline" ]; then
    git -C "$root" worktree remove --force "$temp/baseline" >/dev/null 2>&1 || true
  fi
  rm -rf "$temp"
}
trap cleanup EXIT
if [ -z "$base" ]; then base=$temp/baseline; fi

# One build's library (release preset, target chiprt_shared) and the probe against it.
build_side() {  # $1 source tree, $2 probe output
  local log=$temp/build.log
  if ! { (cd "$1" && cmake --preset release "${launcher[@]}") &&
    cmake --build "$1/build/release" --target chiprt_shared; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "latency-baseline.sh: building $1 failed" >&2
    exit 1
  fi
  g++ -std=c++20 -O2 -Wall -Wextra -Werror -I"$1/include" "$root/tools/perf/latency_probe.cpp" \
    -L"$1/build/release/lib" -Wl,-rpath,"$1/build/release/lib" -lchiprt -pthread -o "$2"
}

if [ ! -d "$base/.git" ] && [ ! -f "$base/.git" ]; then
  echo "latency-baseline.sh: checking out $commit in $base" >&2
  git -C "$root" worktree add --detach "$base" "$commit" >/dev/null 2>&1
fi
echo "latency-baseline.sh: building the baseline ($commit) and this tree (library only)" >&2
build_side "$base" "$temp/probe-baseline"
build_side "$root" "$temp/probe-current"

percentile() {  # $1 file of ns samples, $2 fraction: the sample at that rank, in us
  sort -n "$1" | awk -v p="$2" '{ a[NR] = $1 } END {
    i = int(NR * p + 0.5); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.1f", a[i] / 1000 }'
}

where=$([ "$isolated" = 1 ] && echo "isolated" || echo "in process")
flag=$([ "$isolated" = 1 ] && echo "--isolated" || true)
echo "baseline $(git -C "$root" rev-parse --short "$commit") against this tree" \
  "($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo ', modified'))," \
  "$runs runs per cell in $batches alternating batches, chip $where"
echo "host: $(nproc) hardware threads, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
printf '%-11s %-6s %14s %14s %14s %14s %8s %8s\n' column tasks "base p50 us" "base p99 us" \
  "this p50 us" "this p99 us" p50x p99x
for column in ${columns//,/ }; do
  for tasks in 0 1; do
    : >"$temp/baseline.ns"
    : >"$temp/current.ns"
    per_batch=$((runs / batches))
    for ((b = 0; b < batches; ++b)); do
      # Alternate which side goes first so that neither always follows the other.
      sides=(baseline current)
      if ((b % 2 == 1)); then sides=(current baseline); fi
      for side in "${sides[@]}"; do
        "$temp/probe-$side" --runs "$per_batch" --tasks "$tasks" --column "$column" $flag \
          >>"$temp/$side.ns"
      done
    done
    bp50=$(percentile "$temp/baseline.ns" 0.50)
    bp99=$(percentile "$temp/baseline.ns" 0.99)
    cp50=$(percentile "$temp/current.ns" 0.50)
    cp99=$(percentile "$temp/current.ns" 0.99)
    printf '%-11s %-6s %14s %14s %14s %14s %8s %8s\n' "$column" "$tasks" "$bp50" "$bp99" "$cp50" \
      "$cp99" "$(awk -v a="$cp50" -v b="$bp50" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
      "$(awk -v a="$cp99" -v b="$bp99" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
  done
done
echo "host load average $(cut -d' ' -f1-3 /proc/loadavg) at end; p50x, p99x = this tree / baseline"
