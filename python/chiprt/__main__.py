"""python3 -m chiprt: run the example workloads from Python, mirroring the ``chiprt`` CLI.

    python3 -m chiprt list
    python3 -m chiprt run EXAMPLE [--case NAME] [--runtime host_build_graph|tensormap_ringbuffer]
                              [--rounds N] [--clusters N] [--aicpu-threads N] [--serial]
                              [--diag SWITCHES --diag-dir DIR]

``run`` prints a line starting with PASS or FAIL in the CLI's shape, the runtime line and the
timing table. Exit codes as the CLI's: 0 every round passed, 1 a round failed or the runtime
reported an error, 2 usage error (bad option, unknown example or case).
"""

import argparse
import os
import statistics
import sys
from typing import List, Optional, Sequence

import chiprt
from chiprt import examples

EXIT_FAILURE = 1
EXIT_USAGE = 2
RUNTIMES = ("host_build_graph", "tensormap_ringbuffer")


def print_list() -> None:
    for example in examples.all_examples():
        print(f"{example.name}\n    {example.description}")
        for i, case in enumerate(example.cases):
            default = "  (default)" if i == 0 else ""
            print(f"    case {case.name:<8} {case.params_text()}{default}")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got '{text}'")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got '{text}'")
    return value


def timing_rows(reports) -> List[tuple]:
    """(name, starts_us or None, spans_us) per row: the report's totals, then each phase."""
    us = 1e-3
    rows = [("host prepare", None, [r.host_prepare_ns * us for r in reports]),
            ("device wall", None, [r.device_wall_ns * us for r in reports]),
            ("host total", None, [r.host_total_ns * us for r in reports])]
    phase_names: List[str] = []
    for report in reports:
        for name in report.phases:
            if name not in phase_names:
                phase_names.append(name)
    for name in phase_names:
        spans = [r.phases[name] for r in reports if name in r.phases]
        rows.append((name, [s["start_ns"] * us for s in spans], [s["span_ns"] * us for s in spans]))
    return rows


def print_timing(reports) -> None:
    rows = timing_rows(reports)
    if len(reports) == 1:
        print(f"timing (us)         {'start':>12} {'span':>12}")
        for name, starts, spans in rows:
            start = f"{starts[0]:12.1f}" if starts is not None else f"{'-':>12}"
            print(f"  {name:<17} {start} {spans[0]:12.1f}")
        return
    print(f"timing (us) over {len(reports)} rounds")
    print(f"  {'':<17} {'start(med)':>12} {'median':>12} {'min':>12} {'max':>12} {'rounds':>7}")
    for name, starts, spans in rows:
        start = f"{statistics.median(starts):.1f}" if starts is not None else "-"
        print(f"  {name:<17} {start:>12} {statistics.median(spans):12.1f} {min(spans):12.1f} "
              f"{max(spans):12.1f} {len(spans):7d}")


def usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


def config_error(worker, config) -> Optional[str]:
    """The runtime's message when it rejects ``config`` (a bad --diag list, a thread count out of
    range), else None: export_graph parses and validates the config before it looks the callable
    up, so asking it for an unregistered id checks the options without running anything."""
    free_id = next((i for i in range(64) if not worker.has_callable(i)), None)
    if free_id is None:
        return None
    try:
        worker.export_graph(free_id, chiprt.TaskArgs(), **config)
    except chiprt.ArgumentError as error:
        return str(error)
    except chiprt.Error:
        pass  # the unknown callable: the config itself is fine
    return None


def run_example(options: argparse.Namespace) -> int:
    example = examples.find_example(options.example)
    if example is None:
        return usage_error(f"unknown example '{options.example}'; valid examples: "
                           f"{examples.example_names()}")
    case = example.default_case if options.case is None else example.find_case(options.case)
    if case is None:
        return usage_error(f"unknown case '{options.case}' for example '{example.name}'; valid "
                           f"cases: {example.case_names()}")
    config = {}
    if options.aicpu_threads:
        config["aicpu_thread_num"] = options.aicpu_threads
    if options.serial:
        config["serial"] = True
    if options.diag or options.diag_dir:
        if not options.diag or not options.diag_dir:
            return usage_error(
                "--diag-dir names where diagnostics go; add --diag all (or a list)"
                if not options.diag else
                "--diag needs --diag-dir DIR: the directory the run directories go into")
        config["diagnostics"] = options.diag
        config["diagnostics_dir"] = options.diag_dir
        # Each round's directory is written while the next round runs; flushed before the summary.
        config["background_write"] = True

    rings = {field: text for field, text in (("task_window", options.ring_window),
                                             ("heap_bytes", options.ring_heap),
                                             ("dep_pool", options.ring_dep_pool)) if text}
    if rings:
        config["rings"] = rings

    worker_options = {"runtime": options.runtime, "core_execution": options.cores_on}
    if options.isolated:
        worker_options["isolation"] = "process"
    if options.clusters:
        worker_options["clusters"] = options.clusters
    if options.aicpu_threads > 4:
        # The chip must have at least as many scheduler processors as the run asks for.
        worker_options["aicpu_threads"] = options.aicpu_threads

    reports = []
    all_passed = True
    max_error = 0.0
    first_failure = ""
    last = None
    try:
        worker = chiprt.Worker(**worker_options)
    except chiprt.ArgumentError as error:  # e.g. more clusters than the chip can have
        return usage_error(str(error))
    except chiprt.Error as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        with worker:
            rejected = config_error(worker, config)
            if rejected is not None:
                return usage_error(rejected)
            for round_index in range(options.rounds):
                last = example.run(worker, case, **config)
                reports.append(last.report)
                max_error = max(max_error, last.max_abs_error)
                if not last.passed and all_passed:
                    all_passed = False
                    first_failure = f"round {round_index + 1}: {last.message}"
            worker.flush_diagnostics()
    except (chiprt.Error, OSError) as error:
        if isinstance(error, chiprt.Error) and error.code is chiprt.StatusCode.InvalidConfig:
            # A configuration refused as invalid (e.g. a CHIPRT_RING_* variable) is a usage error.
            return usage_error(str(error))
        print(f"error: {error}", file=sys.stderr)
        print(f"FAIL {example.name}/{case.name}: {error}")
        return EXIT_FAILURE

    report = reports[-1]
    print(f"{'PASS' if all_passed else 'FAIL'} {example.name}/{case.name}: max abs error "
          f"{max_error:.3g} (tolerance {last.tolerance:.3g}), "
          f"{chiprt.format_task_count(last.kernel_tasks, last.task_count - last.kernel_tasks)}")
    if not all_passed:
        print(f"  {first_failure}")
    serial = ", serial" if report.serial else ""
    print(f"runtime {options.runtime}, {report.cores} cores, {report.aicpu_threads} AICPU "
          f"threads{serial}, {options.rounds} round(s) (Python)")
    print_timing(reports)
    if report.diagnostics_dir:
        summary = getattr(chiprt, "diagnostics_summary", None)
        print()
        print(summary(report.diagnostics_dir) if summary else
              f"diagnostics: {report.diagnostics_dir}", end="" if summary else "\n")
    return 0 if all_passed else EXIT_FAILURE


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m chiprt",
        description="Run chiprt's example workloads on the simulated chip and check them "
                    "against their numpy references.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    commands.add_parser("list", help="list the examples and their cases")
    run = commands.add_parser("run", help="run an example and check it against its reference")
    run.add_argument("example", help="example name (see `python3 -m chiprt list`)")
    run.add_argument("--case", help="case name (default: the example's first case)")
    run.add_argument("--runtime", choices=RUNTIMES, default="host_build_graph",
                     help="runtime variant (default: host_build_graph)")
    run.add_argument("--rounds", type=positive_int, default=1,
                     help="run the example N times (default 1)")
    run.add_argument("--clusters", type=positive_int, default=None,
                     help="clusters of the simulated chip (1 AIC + 2 AIV each; default 8, at "
                          "most 24)")
    run.add_argument("--aicpu-threads", type=non_negative_int, default=0,
                     help="AICPU threads the run uses (0: auto)")
    run.add_argument("--serial", action="store_true",
                     help="run the chip side on one thread in a deterministic order")
    run.add_argument("--cores-on", choices=("auto", "aicpu", "executors"), default="auto",
                     help="where the simulated cores' kernels run (default auto, or "
                          "CHIPRT_SIM_CORES)")
    run.add_argument("--isolated", action="store_true",
                     help="run the simulated chip in a device process of its own (a crashing or "
                          "hanging kernel ends the run with a device error)")
    run.add_argument("--ring-window", default="",
                     help="tensormap_ringbuffer task slots per scope depth: N or N,N,...")
    run.add_argument("--ring-heap", default="",
                     help="tensormap_ringbuffer output heap bytes per scope depth: N or N,N,...")
    run.add_argument("--ring-dep-pool", default="",
                     help="tensormap_ringbuffer dependency entries per scope depth: N or N,N,...")
    run.add_argument("--diag", default="",
                     help="collect diagnostics: all, or a comma-separated list of switches "
                          "(as `chiprt run --diag` takes it)")
    run.add_argument("--diag-dir", default="",
                     help="directory the diagnostics run directories go into")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    options = make_parser().parse_args(argv)  # usage errors exit 2
    if options.command == "list":
        print_list()
        return 0
    return run_example(options)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # Output piped into a reader that stopped early (`| head`): quiet, like the C++ CLI.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_FAILURE)
