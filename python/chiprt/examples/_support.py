"""Building blocks shared by the example workloads (the Python side of examples/support.h).

ExampleCase, Outcome and Example mirror chiprt::examples (examples/example.h). An example's body
is split in two so that a benchmark can reuse the exact call an example makes:

- ``Example.prepare(worker, case, **config)`` generates the inputs, uploads them, registers the
  callable under the lowest free id and returns a PreparedRun holding ``callable_id``, ``args``
  and the resolved ``config``;
- ``PreparedRun.check(report)`` downloads the outputs and compares them with the reference.

A PreparedRun owns the device buffers and the registration it made and releases them in
``close()`` (it is a context manager): errors while releasing are raised on the normal path and
swallowed when another error is already unwinding, because that error is the one to report.
Like the Worker, a PreparedRun is used from one thread at a time.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

import chiprt

# Mirrors chiprt::kMaxCallableIds (include/chiprt/types.h) when the module does not export it.
_MAX_CALLABLE_IDS = int(getattr(chiprt, "MAX_CALLABLE_IDS", 64))


@dataclasses.dataclass(frozen=True)
class ExampleCase:
    """One configuration of an example (sizes, tile counts); params keep the C++ order."""

    name: str
    params: Tuple[Tuple[str, int], ...]
    # Takes noticeably longer than the others; test suites run it in one configuration only.
    large: bool = False

    def param(self, key: str) -> int:
        for name, value in self.params:
            if name == key:
                return value
        raise KeyError(f"case '{self.name}' has no parameter '{key}' (has: {self.params_text()})")

    def params_text(self) -> str:
        """"tiles_m=4 tiles_n=4 ..." for listings."""
        return " ".join(f"{name}={value}" for name, value in self.params)


@dataclasses.dataclass
class Outcome:
    """What one run of an example produced, checked against its reference."""

    passed: bool
    max_abs_error: float  # largest |device - reference| over all checked elements
    tolerance: float  # largest error accepted per element
    task_count: int  # tasks the orchestration submitted (RunReport.task_count)
    kernel_tasks: int  # kernel tasks the orchestration submits (task_count is at least this)
    report: Any  # the run's chiprt.RunReport
    message: str  # why it failed (first bad element, task count mismatch) or a summary


def chip_object_path(target: str) -> str:
    """The path of ``<chip_object_dir>/<target>.so``; FileNotFoundError says how to get it."""
    directory = chiprt.paths()["chip_object_dir"]
    path = os.path.join(directory, target + ".so")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"chip object '{path}' not found (chip object directory '{directory}'); build the "
            f"examples (target chiprt_examples) or point CHIPRT_CHIP_OBJECT_DIR at the directory "
            f"holding {target}.so"
        )
    return path


@dataclasses.dataclass
class Comparison:
    max_abs_error: float = 0.0
    mismatches: int = 0  # elements with error > tolerance (NaN counts)
    first_mismatch: str = ""


def compare_results(got: np.ndarray, want: np.ndarray, tolerance: float,
                    row_width: int = 0) -> Comparison:
    """Element-by-element comparison as examples/support.cpp's compare_results does.

    ``got`` holds the device's values, ``want`` the reference (compared in float64);
    ``row_width`` (0 for 1-D data) only shapes the message: "element 70 (row 1, col 6)".
    """
    got = np.asarray(got).reshape(-1)
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    if got.size != want.size:
        return Comparison(float("inf"), 1,
                          f"result has {got.size} elements but the reference has {want.size}")
    error = np.abs(got.astype(np.float64) - want)
    # A NaN error must fail and must show up as the largest error.
    counted = np.where(np.isnan(error), np.inf, error)
    bad = counted > tolerance
    mismatches = int(np.count_nonzero(bad))
    result = Comparison(float(counted.max()) if counted.size else 0.0, mismatches)
    if mismatches:
        i = int(np.argmax(bad))
        where = f"element {i}"
        if row_width:
            where += f" (row {i // row_width}, col {i % row_width})"
        result.first_mismatch = (f"{where}: got {float(got[i]):.9g}, expected {want[i]:.9g}, "
                                 f"|error| {error[i]:.9g} > tolerance {tolerance:.9g}")
    return result


def make_outcome(comparison: Comparison, tolerance: float, report: Any,
                 kernel_tasks: int) -> Outcome:
    """Passes when nothing mismatched and the run executed at least ``kernel_tasks`` tasks."""
    task_count = int(getattr(report, "task_count", 0))
    tasks_match = task_count >= kernel_tasks
    passed = comparison.mismatches == 0 and tasks_match
    parts = []
    if comparison.mismatches:
        parts.append(f"{comparison.mismatches} element(s) outside the tolerance; first: "
                     f"{comparison.first_mismatch}")
    if not tasks_match:
        parts.append(f"the run executed {task_count} tasks, fewer than the {kernel_tasks} "
                     f"kernel tasks the orchestration submits")
    if passed:
        parts.append(f"all elements within tolerance {tolerance:g}")
    return Outcome(passed, comparison.max_abs_error, tolerance, task_count, kernel_tasks, report,
                   "; ".join(parts))


# Executes the registered callable on the worker and returns its RunReport; the outputs must be
# in the buffers when it returns (the Python counterpart of chiprt::examples::Executor).
Executor = Callable[[Any, int, Any, Dict[str, Any]], Any]


def run_on_worker(worker, callable_id: int, args, config: Dict[str, Any]):
    """The default Executor: worker.run(callable_id, args, **config)."""
    return worker.run(callable_id, args, **config)


class PreparedRun:
    """An example's call, ready to run: inputs uploaded, callable registered (see module doc)."""

    def __init__(self, worker, config: Dict[str, Any]):
        self.worker = worker
        self.config: Dict[str, Any] = dict(config)
        self.callable_id: Optional[int] = None
        self.args = None
        self.kernel_tasks = 0
        self.tolerance = 0.0
        self._buffers: List[Any] = []
        # Initial contents of the buffers the call writes: (buffer, array) or (buffer, fill byte).
        self._written: List[Tuple[Any, Union[np.ndarray, int]]] = []
        self._checker: Optional[Callable[[Any], Outcome]] = None

    # --- set-up, used by the examples -------------------------------------------------------

    def alloc(self, nbytes: int):
        buffer = self.worker.malloc(nbytes)
        self._buffers.append(buffer)
        return buffer

    def upload(self, array: np.ndarray, dtype=None, written: bool = False):
        """A Tensor over a fresh buffer holding ``array`` (shape and dtype kept)."""
        array = np.ascontiguousarray(array)
        buffer = self.alloc(array.nbytes)
        self.worker.copy_to(buffer, array)
        if written:
            self._written.append((buffer, array.copy()))
        return chiprt.Tensor.make(buffer, list(array.shape), dtype or array.dtype)

    def filled(self, shape: Sequence[int], dtype, byte: int, written: bool = True):
        """A Tensor over a fresh buffer whose every byte is ``byte`` (outputs: poison or zero);
        ``dtype`` is a numpy dtype."""
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        buffer = self.alloc(nbytes)
        self.worker.memset(buffer, byte, nbytes)
        if written:
            self._written.append((buffer, byte))
        return chiprt.Tensor.make(buffer, list(shape), np.dtype(dtype))

    def register(self, callable_obj) -> int:
        """Registers under the lowest free callable id, as RegisteredCallable does."""
        callable_id = 0
        while callable_id < _MAX_CALLABLE_IDS and self.worker.has_callable(callable_id):
            callable_id += 1
        if callable_id == _MAX_CALLABLE_IDS:
            raise RuntimeError(f"every callable id in [0, {_MAX_CALLABLE_IDS}) is registered; "
                               f"unregister a callable before running an example")
        self.worker.register_callable(callable_id, callable_obj)
        self.callable_id = callable_id
        return callable_id

    def set_checker(self, checker: Callable[[Any], Outcome]) -> None:
        self._checker = checker

    def check_output(self, tensor, want: np.ndarray, row_width: int = 0) -> None:
        """The usual checker: after a run, `tensor` is downloaded and compared with the
        reference `want` within self.tolerance (set the tolerance and kernel_tasks first)."""
        def check(report):
            got = self.worker.download(tensor)
            return make_outcome(compare_results(got, want, self.tolerance, row_width),
                                self.tolerance, report, self.kernel_tasks)

        self.set_checker(check)

    # --- use ----------------------------------------------------------------------------------

    def restore(self) -> None:
        """Rewrites every buffer the call writes with its initial contents, so that the next run
        computes what the first would (bgemm accumulates into C)."""
        for buffer, initial in self._written:
            if isinstance(initial, np.ndarray):
                self.worker.copy_to(buffer, initial)
            else:
                self.worker.memset(buffer, initial, buffer.size)

    def run(self, executor: Optional[Executor] = None):
        """One run of the call through ``executor`` (default: Worker.run); returns its report."""
        return (executor or run_on_worker)(self.worker, self.callable_id, self.args, self.config)

    def check(self, report) -> Outcome:
        """Downloads the outputs and compares them with the reference."""
        if self._checker is None:
            raise RuntimeError("PreparedRun.check: the example set no checker")
        return self._checker(report)

    def close(self) -> None:
        """Unregisters the callable and frees every buffer; raises the first error."""
        first_error: Optional[BaseException] = None
        if self.callable_id is not None:
            callable_id, self.callable_id = self.callable_id, None
            try:
                self.worker.unregister_callable(callable_id)
            except Exception as error:  # keep freeing the buffers
                first_error = error
        while self._buffers:
            buffer = self._buffers.pop()
            try:
                self.worker.free(buffer)
            except Exception as error:
                first_error = first_error or error
        self._written.clear()
        if first_error is not None:
            raise first_error

    def __enter__(self) -> "PreparedRun":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except Exception:
            pass  # the error already unwinding is the one to report


class Example:
    """A named workload: cases, an input generator with a fixed seed, a numpy reference and a
    tolerance. Subclasses set name, description and cases and implement ``_prepare``."""

    name: str = ""
    description: str = ""
    cases: Tuple[ExampleCase, ...] = ()

    def _prepare(self, prepared: PreparedRun, case: ExampleCase) -> None:
        raise NotImplementedError

    def find_case(self, case_name: str) -> Optional[ExampleCase]:
        for case in self.cases:
            if case.name == case_name:
                return case
        return None

    def case_names(self) -> str:
        """"default, small" for error messages."""
        return ", ".join(case.name for case in self.cases)

    @property
    def default_case(self) -> ExampleCase:
        return self.cases[0]

    def resolve_case(self, case: Union[ExampleCase, str, None]) -> ExampleCase:
        """None -> the default case, a name -> that case (KeyError naming the valid ones)."""
        if case is None:
            return self.default_case
        if isinstance(case, ExampleCase):
            return case
        found = self.find_case(case)
        if found is None:
            raise KeyError(f"unknown case '{case}' for example '{self.name}'; valid cases: "
                           f"{self.case_names()}")
        return found

    def prepare(self, worker, case: Union[ExampleCase, str, None] = None,
                **config) -> PreparedRun:
        """Inputs uploaded and callable registered; close the result (``with``) when done."""
        prepared = PreparedRun(worker, config)
        try:
            self._prepare(prepared, self.resolve_case(case))
        except BaseException:
            try:
                prepared.close()
            except Exception:
                pass  # the set-up error is the one to report
            raise
        return prepared

    def run(self, worker, case: Union[ExampleCase, str, None] = None,
            executor: Optional[Executor] = None, **config) -> Outcome:
        """Runs ``case`` on ``worker`` (config keywords go to Worker.run, e.g. runtime=...) and
        checks the outputs; leaves the worker as it found it, also when it raises."""
        with self.prepare(worker, case, **config) as prepared:
            report = prepared.run(executor)
            return prepared.check(report)

    def __repr__(self) -> str:
        return f"<chiprt example {self.name}: {self.case_names()}>"
