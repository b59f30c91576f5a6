#!/usr/bin/env bash
# Builds chiprt and passes its tests: unit, scene, stress and CLI suites on the default build,
# the same under AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrency suites under
# ThreadSanitizer. Installs missing dependencies first.
#   scripts/test.sh            # everything
#   scripts/test.sh default    # only the named configurations (default, asan, tsan)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# The walls between the rooms and the docs' links and contents, before spending minutes on builds.
scripts/check-walls.sh
scripts/check-doc-links.sh
scripts/check-docs.sh

configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then
  configs=(default asan tsan)
fi

jobs=$(nproc)
for config in "${configs[@]}"; do
  echo "=== chiprt: ${config} build ==="
  start=$(date +%s)
  cmake --preset "$config" >/dev/null
  cmake --build --preset "$config" -j"$jobs"
  case "$config" in
    # Sanitized runs are ~5-15x slower; fewer random-DAG seeds keep them inside the CI budget.
    # The isolated fault table likewise runs a sample that still covers every fault, task kind,
    # variant and mode (tests/isolation/fault_suite_test.cpp).
    asan) export CHIPRT_STRESS_SEEDS=${CHIPRT_STRESS_SEEDS_ASAN:-8}
          export CHIPRT_FAULT_CASES=${CHIPRT_FAULT_CASES_ASAN:-sampled} ;;
    tsan) export CHIPRT_STRESS_SEEDS=${CHIPRT_STRESS_SEEDS_TSAN:-6}
          export CHIPRT_FAULT_CASES=${CHIPRT_FAULT_CASES_TSAN:-sampled}
          export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" ;;
    default) unset CHIPRT_STRESS_SEEDS CHIPRT_FAULT_CASES ;;
  esac
  if [ "$config" = asan ]; then
    export ASAN_OPTIONS="detect_leaks=1 abort_on_error=1 ${ASAN_OPTIONS:-}"
    export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
  fi
  ctest --preset "$config" -j"$jobs"
  # The simulator runs kernels on executor threads or on the AICPU threads (SimCoreExecution);
  # Auto picks by core count (AICPU threads when the host has no more hardware threads than the
  # chip's 4 AICPU threads), and the pass above ran that mode: run the example scenes once more in
  # the other, so both run whatever this host has.
  if [ "$jobs" -le 4 ]; then other_cores=executors; else other_cores=aicpu; fi
  CHIPRT_SIM_CORES=$other_cores ctest --preset "$config" -j"$jobs" -L scene
  # And the example scenes once more with the chip in its own device process (SimIsolation); on
  # the plain build only (the isolation suite covers the device process under the sanitizers, and
  # a sanitized pass would cost two more minutes of the CI budget).
  if [ "$config" = default ]; then
    CHIPRT_SIM_ISOLATION=process ctest --preset "$config" -j"$jobs" -L scene
  fi
  echo "=== chiprt: ${config} done in $(( $(date +%s) - start )) s ==="
done
