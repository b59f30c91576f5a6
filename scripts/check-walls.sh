#!/usr/bin/env bash
# The walls between chiprt's rooms, checked on every #include (docs/architecture.md, "Rooms and
# walls"). Each rule names a folder and the include prefixes its files may use; an include of a
# room's header from a folder that may not use it fails the check, naming the file, the line and
# the rule. Includes without a room prefix (the standard library, third-party headers, a tool's
# own local headers) are not checked.
#   scripts/check-walls.sh [ROOT]    # check the tree at ROOT (default: this repository)
#   scripts/check-walls.sh --self-test
set -euo pipefail

# Every folder prefix that names a room; an include starting with one of them is checked.
readonly ROOMS="chiprt/ common/ platform/ orchestrator/ scheduler/ aicore/ host/ node/ diagnostics/ capi/"

# folder | allowed include prefixes (a prefix ending in .h names one header). The most specific
# folder wins (src/platform/sim before src/platform).
readonly RULES=(
  "src/common|chiprt/ common/"
  "src/aicore|chiprt/ common/ aicore/"
  "src/orchestrator|chiprt/ common/ orchestrator/"
  "src/scheduler|chiprt/ common/ scheduler/ orchestrator/"
  "src/platform/sim|chiprt/ common/ platform/ scheduler/chip_entry.h aicore/core_executor.h"
  "src/platform|chiprt/ common/ platform/platform.h platform/registry.h platform/sim/sim_platform.h"
  "src/diagnostics|chiprt/ common/ diagnostics/"
  "src/host|chiprt/ common/ host/ orchestrator/ diagnostics/ platform/platform.h platform/registry.h"
  "src/node|chiprt/ host/ node/ orchestrator/task_dependencies.h orchestrator/tensor_map.h orchestrator/task_checks.h platform/platform.h platform/registry.h"
  "src/capi|chiprt/"
  "python|chiprt/"
  "tests/package|chiprt/"
  "tools|chiprt/"
  "examples|chiprt/"
  "bench|chiprt/"
)

rule_for() {  # prints the allowed prefixes of the most specific rule covering file $1
  local file=$1 best="" best_len=-1 folder allowed
  for rule in "${RULES[@]}"; do
    folder=${rule%%|*}
    allowed=${rule#*|}
    if [[ $file == "$folder"/* ]] && ((${#folder} > best_len)); then
      best=$allowed best_len=${#folder}
    fi
  done
  printf '%s' "$best"
}

allowed_by() {  # is include $1 allowed by prefixes $2?
  local include=$1 prefix
  for prefix in $2; do
    if [[ $prefix == *.h ]]; then
      [[ $include == "$prefix" ]] && return 0
    elif [[ $include == "$prefix"* ]]; then
      return 0
    fi
  done
  return 1
}

names_a_room() {
  local include=$1 room
  for room in $ROOMS; do
    [[ $include == "$room"* ]] && return 0
  done
  return 1
}

readonly LITERAL_INCLUDE='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"][[:space:]]*(//.*|/\*.*)?$'

check_tree() {  # prints one line per violation under root $1; returns 1 if any
  local root=$1 violations=0 file line number include written allowed
  while IFS= read -r file; do
    allowed=$(rule_for "$file")
    [[ -z $allowed ]] && continue
    while IFS=: read -r number line; do
      # Only a literal path can be checked: a macro, a comment before the path or a line
      # continuation could name any header.
      if [[ ! $line =~ $LITERAL_INCLUDE ]]; then
        echo "$file:$number: '$line' is not an #include of a literal \"path\" or <path>;" \
             "write the path on the #include line so the walls can be checked"
        violations=$((violations + 1))
        continue
      fi
      include=${BASH_REMATCH[1]}
      written=$include
      if [[ $include == ./* || $include == ../* ]]; then
        # A path relative to the including file ("../scheduler/x.h") names the room it reaches.
        include=$(realpath -m --relative-to="$root/src" "$root/$(dirname "$file")/$include")
      elif [[ $include == */./* || $include == */../* ]]; then
        # "orchestrator/../scheduler/x.h" is "scheduler/x.h".
        include=$(realpath -m --relative-to=/w "/w/$include")
      fi
      names_a_room "$include" || continue
      if ! allowed_by "$include" "$allowed"; then
        echo "$file:$number: includes \"$written\"; files under $(dirname "$file") may include" \
             "only: $allowed (docs/architecture.md, Rooms and walls)"
        violations=$((violations + 1))
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$root/$file" || true)
  # Every file of the checked folders that holds an #include, whatever its extension (.inc too).
  done < <(cd "$root" && grep -rlE '^[[:space:]]*#[[:space:]]*include' src tools examples bench python tests/package \
                           --exclude='*.md' --exclude='*.txt' --exclude='*.cmake' 2>/dev/null | sort)
  ((violations == 0))
}

self_test() {
  local scratch failures=0
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  mkdir -p "$scratch"/src/{host,node,orchestrator,scheduler,aicore,common,diagnostics,capi,platform/sim} \
    "$scratch"/tools "$scratch"/python/src "$scratch"/tests/package
  printf '#include "chiprt/worker.h"\n#include "host/log.h"\n#include <vector>\n' \
    >"$scratch/src/host/ok.cpp"
  printf '#include "platform/platform.h"\n' >"$scratch/src/host/platform_ok.cpp"
  printf '#include "scheduler/chip_entry.h"\n' >"$scratch/src/platform/sim/ok.cpp"
  printf '#include "host/run_pipeline.h"\n#include "platform/registry.h"\n' >"$scratch/src/node/ok.cpp"
  check_tree "$scratch" >/dev/null || { echo "self-test: a clean tree was refused"; failures=1; }
  # Each line: file | include that must be refused there.
  local cases=(
    "src/host/bad.cpp|scheduler/chip_entry.h"
    "src/host/bad2.cpp|aicore/core_executor.h"
    "src/host/bad3.cpp|platform/sim/sim_platform.h"
    "src/orchestrator/bad.cpp|host/log.h"
    "src/orchestrator/bad2.cpp|scheduler/shared_state.h"
    "src/scheduler/bad.cpp|host/device_runner.h"
    "src/aicore/bad.cpp|scheduler/dispatch_loop.h"
    "src/aicore/bad2.cpp|platform/platform.h"
    "src/scheduler/bad2.cpp|platform/platform.h"
    "src/platform/sim/bad.cpp|host/log.h"
    "src/platform/bad.cpp|scheduler/dispatch_loop.h"
    "src/common/bad.cpp|orchestrator/tensor_map.h"
    "tools/bad.cpp|host/ring_sizing.h"
    "tools/bad2.cpp|diagnostics/run_model.h"
    "src/diagnostics/bad.cpp|host/device_runner.h"
    "src/diagnostics/bad2.cpp|platform/platform.h"
    "src/scheduler/bad3.cpp|diagnostics/run_model.h"
    "src/host/relative.cpp|../scheduler/dispatch_loop.h"
    "src/orchestrator/relative.cpp|./../aicore/core_executor.h"
    "src/host/dotdot.cpp|orchestrator/../scheduler/chip_entry.h"
    "src/host/fragment.inc|scheduler/chip_entry.h"
    "src/node/bad.cpp|platform/sim/fork_server.h"
    "src/node/bad2.cpp|aicore/core_executor.h"
    "src/node/bad4.cpp|common/shared_layout.h"
    "src/node/bad3.cpp|scheduler/chip_entry.h"
    "src/host/bad4.cpp|node/node_chips.h"
    "src/capi/bad3.cpp|node/node_chips.h"
    "src/capi/bad.cpp|host/device_runner.h"
    "src/capi/bad2.cpp|common/callable_format.h"
    "python/src/bad.cpp|host/worker_access.h"
    "python/src/bad2.cpp|capi/c_handles.h"
    "tests/package/bad.cpp|common/status_table.h"
  )
  local case file include output
  for case in "${cases[@]}"; do
    file=${case%%|*}
    include=${case#*|}
    printf '#include "%s"\n' "$include" >"$scratch/$file"
    if output=$(check_tree "$scratch"); then
      echo "self-test: $file including $include was accepted"
      failures=1
    elif ! grep -q "^$file:1: includes \"$include\"" <<<"$output"; then
      echo "self-test: $file including $include was refused without naming it: $output"
      failures=1
    fi
    rm "$scratch/$file"
  done
  # Includes the checker cannot read as a literal path are refused.
  local tricks=('#define H "scheduler/chip_entry.h"\n#include H\n'
                '#include \\\n"scheduler/chip_entry.h"\n'
                '#include/**/"platform/sim/sim_platform.h"\n')
  local trick
  for trick in "${tricks[@]}"; do
    printf "$trick" >"$scratch/src/host/trick.cpp"
    if output=$(check_tree "$scratch"); then
      echo "self-test: a non-literal include was accepted: $(printf "$trick")"
      failures=1
    elif ! grep -q "is not an #include of a literal" <<<"$output"; then
      echo "self-test: a non-literal include was refused without saying why: $output"
      failures=1
    fi
    rm "$scratch/src/host/trick.cpp"
  done
  ((failures == 0)) && echo "check-walls self-test: ${#cases[@]} violations and ${#tricks[@]} non-literal includes caught, clean tree accepted"
  return $failures
}

if [[ ${1:-} == --self-test ]]; then
  self_test
  exit $?
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if output=$(check_tree "$root"); then
  echo "check-walls: every #include respects the room walls"
else
  echo "$output"
  echo "check-walls: $(wc -l <<<"$output") include(s) cross a wall" >&2
  exit 1
fi
