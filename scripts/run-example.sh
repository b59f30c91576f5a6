#!/usr/bin/env bash
# The main job: builds chiprt (release) and runs an example workload on the simulated chip,
# checked against its reference result, with its timing summary.
#   scripts/run-example.sh                    # bgemm, medium case (1,024 kernel tasks)
#   scripts/run-example.sh wavefront --case large --rounds 5
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# The build's output goes to a log; a failed build shows its end.
mkdir -p build
log=build/run-example-build.log
echo "chiprt: building build/release (the first build takes several minutes; later ones rebuild" \
  "only what changed; output in $log)" >&2
if ! { cmake --preset release && cmake --build --preset release -j"$(nproc)"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "chiprt: the build failed; the whole output is in $log" >&2
  exit 1
fi

if [ $# -eq 0 ]; then
  set -- bgemm --case medium
fi
exec build/release/tools/chiprt run "$@"
