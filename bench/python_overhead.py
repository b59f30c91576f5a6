#!/usr/bin/python3
"""Per-run overhead of the Python layer against the C++ Worker::run on the same call.

One Worker, one registered callable (the bgemm example's, chiprt.examples), the same arguments:
each round times N runs through chiprt._native_run_loop (Worker::run in a C++ loop, the GIL
released, each run's wall time measured in C++ around Worker::run) and N runs of a Python loop
of Worker.run (each timed with time.perf_counter_ns around the call: argument conversion, config
keywords, the GIL release and the RunReport conversion included). Rounds interleave the two
loops, alternating which goes first, so drift on a shared machine hits both alike. Reported per
runtime variant: the median per-run time of each over all rounds, each round's ratio (its Python
median over its native median) and, as the headline, the median of those round ratios, which a
machine whose speed drifts between rounds moves least. bgemm accumulates into C; after timing,
C is restored and one more run is checked against the numpy reference, so the timed call is the
example's correct call. The case name is the C++ registry's (examples/bgemm/host/bgemm.cpp).

    PYTHONPATH=build/py/python CHIPRT_CHIP_OBJECT_DIR=build/py/chip_objects \\
        /usr/bin/python3 bench/python_overhead.py [--rounds 41] [--runs 20] [--case medium]
"""

import argparse
import statistics
import sys
import textwrap
import time

import chiprt
from chiprt import examples

RUNTIMES = ("host_build_graph", "tensormap_ringbuffer")


def python_loop(worker, callable_id, args, count, runtime):
    times = []
    for _ in range(count):
        start = time.perf_counter_ns()
        worker.run(callable_id, args, runtime=runtime)
        times.append(time.perf_counter_ns() - start)
    return times


def measure(worker, prepared, runtime, rounds, runs, warmup):
    callable_id, args = prepared.callable_id, prepared.args
    # Warm both paths (the variant's arenas, caches, branch predictors).
    chiprt._native_run_loop(worker, callable_id, args, warmup, runtime=runtime)
    python_loop(worker, callable_id, args, warmup, runtime)
    native_all, python_all, round_ratios, round_overheads = [], [], [], []
    for round_index in range(rounds):
        if round_index % 2 == 0:
            native = list(chiprt._native_run_loop(worker, callable_id, args, runs,
                                                  runtime=runtime))
            python = python_loop(worker, callable_id, args, runs, runtime)
        else:
            python = python_loop(worker, callable_id, args, runs, runtime)
            native = list(chiprt._native_run_loop(worker, callable_id, args, runs,
                                                  runtime=runtime))
        native_all += native
        python_all += python
        round_ratios.append(statistics.median(python) / statistics.median(native))
        round_overheads.append(statistics.median(python) - statistics.median(native))
    return (statistics.median(native_all), statistics.median(python_all), round_ratios,
            statistics.median(round_overheads))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Many short rounds: the simulated chip's run time drifts on a loaded host, and a short
    # round keeps its two loops close in time.
    parser.add_argument("--rounds", type=int, default=41, help="interleaved rounds (default 41)")
    parser.add_argument("--runs", type=int, default=20,
                        help="runs per loop and round (default 20)")
    parser.add_argument("--warmup", type=int, default=10,
                        help="untimed runs of each loop first (default 10)")
    parser.add_argument("--case", default="medium", help="bgemm case (default medium)")
    parser.add_argument("--runtime", choices=RUNTIMES + ("both",), default="both",
                        help="runtime variant (default both)")
    options = parser.parse_args(argv)
    if options.rounds < 1 or options.runs < 1 or options.warmup < 0:
        parser.error("--rounds and --runs must be >= 1, --warmup >= 0")
    bgemm = examples.find_example("bgemm")
    case = bgemm.find_case(options.case)
    if case is None:
        parser.error(f"unknown bgemm case '{options.case}'; valid cases: {bgemm.case_names()}")
    runtimes = RUNTIMES if options.runtime == "both" else (options.runtime,)

    print(f"bgemm/{case.name} ({case.params_text()}): {options.rounds} rounds x {options.runs} "
          f"runs per loop, interleaved; chiprt {chiprt.__version__}, Python "
          f"{sys.version.split()[0]}")
    print(f"{'runtime':<21} {'native us':>9} {'python us':>9} {'ratio':>6} {'ratio(all)':>10} "
          f"{'overhead us':>11} {'rounds':>6}")
    per_round = []
    all_checked = True
    with chiprt.Worker() as worker:
        with bgemm.prepare(worker, case) as prepared:
            for runtime in runtimes:
                native, python, round_ratios, overhead = measure(
                    worker, prepared, runtime, options.rounds, options.runs, options.warmup)
                print(f"{runtime:<21} {native / 1e3:9.1f} {python / 1e3:9.1f} "
                      f"{statistics.median(round_ratios):6.3f} {python / native:10.3f} "
                      f"{overhead / 1e3:11.1f} {len(round_ratios):6d}")
                per_round.append((runtime, round_ratios))
                # The timed runs accumulated into C: restore it and check one run.
                prepared.restore()
                prepared.config = {"runtime": runtime}
                outcome = prepared.check(prepared.run())
                if not outcome.passed:
                    all_checked = False
                    print(f"  FAIL reference check on {runtime}: {outcome.message}")
    for runtime, round_ratios in per_round:
        print(textwrap.fill(" ".join(f"{r:.3f}" for r in round_ratios), width=100,
                            initial_indent=f"per-round ratios, {runtime}: ",
                            subsequent_indent="  "))
    legend = ("native/python us: median per-run time over all rounds of C++ Worker::run "
              "(_native_run_loop) / of Python Worker.run. ratio: median over rounds of each "
              "round's python median / native median (robust to drift between rounds); "
              "ratio(all): python us / native us; overhead us: median over rounds of python "
              "median - native median.")
    print(textwrap.fill(legend, width=100))
    print("reference check after timing: " + ("PASS" if all_checked else "FAIL"))
    return 0 if all_checked else 1


if __name__ == "__main__":
    sys.exit(main())
