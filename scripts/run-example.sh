#!/usr/bin/env bash
# The main job: builds chiprt (release) and runs an example workload on the simulated chip,
# checked against its reference result, with its timing summary.
#   scripts/run-example.sh                    # bgemm, medium case (1,024 kernel tasks)
#   scripts/run-example.sh wavefront --case large --rounds 5
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" >/dev/null

if [ $# -eq 0 ]; then
  set -- bgemm --case medium
fi
exec build/release/tools/chiprt run "$@"
