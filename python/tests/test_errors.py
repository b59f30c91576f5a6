"""Errors and help in Python's terms: hints name Python calls and keywords, a kernel that does not
compile is BuildFailed, a kernel that does not export its entry gets a hint saying so, and the
Worker's docstrings give its real options."""

import pydoc
import re

import numpy as np
import pytest

import chiprt

# What a hint written for C++ callers names and a Python caller cannot call.
CPP_SPELLINGS = re.compile(r"::|CallConfig|WorkerOptions|SimOptions|kMax|DeviceRunner")


@pytest.mark.parametrize("name", [name for name, *_ in chiprt._chiprt.status_codes()])
def test_every_hint_names_python_calls(name):
    code = chiprt.StatusCode[name]
    _name, _detail, cpp_hint = chiprt._chiprt.status_info(int(code))
    hint = chiprt.Error(code, "x").hint
    assert not CPP_SPELLINGS.search(hint), f"{name}: {hint!r}"
    if CPP_SPELLINGS.search(cpp_hint):
        assert name in chiprt._errors.PYTHON_HINTS, f"{name}'s C++ hint needs a Python one"


def test_a_native_error_reads_in_python_terms():
    with pytest.raises(chiprt.DeviceError) as info:
        chiprt._chiprt._raise_error(int(chiprt.StatusCode.KernelCrashed),
                                    "device crash; device memory is lost; call Worker::reset()")
    e = info.value
    assert e.message == "device crash; device memory is lost; call worker.reset()"
    assert "then call worker.reset()" in e.hint
    assert str(e) == f"[KernelCrashed] {e.message} (hint: {e.hint})"
    assert "Worker::" not in str(e)


@pytest.mark.parametrize("native, python", [
    ("raise CallConfig::rings.task_window[1] or CHIPRT_RING_TASK_WINDOW",
     "raise rings['task_window'][1] or CHIPRT_RING_TASK_WINDOW"),
    ("the heap (or CallConfig::output_heap_bytes)",
     "the heap (or the run keyword output_heap_bytes=)"),
    ("65536 bytes (CallConfig::kMaxUserDataBytes); pass", "65536 bytes; pass"),
    ("set diagnostics.output_dir to the directory", "set diagnostics_dir= to the directory"),
])
def test_run_config_fields_read_as_run_keywords(native, python):
    with pytest.raises(chiprt.ArgumentError) as info:
        chiprt._chiprt._raise_error(int(chiprt.StatusCode.InvalidConfig), native)
    assert info.value.message == python
    assert "CallConfig" not in str(info.value)


def test_a_simulated_chip_field_reads_as_the_worker_keyword():
    with pytest.raises(chiprt.ArgumentError) as info:
        chiprt.Worker(clusters=0)
    assert "Worker keyword clusters must be in [1, 24] (got 0)" in str(info.value)
    assert "SimOptions" not in str(info.value)


def test_a_kernel_that_does_not_compile_is_build_failed(tmp_path):
    with pytest.raises(chiprt.BuildError) as info:
        chiprt.build_chip_object(["int broken("], name="broken", cache_dir=tmp_path)
    e = info.value
    assert e.code is chiprt.StatusCode.BuildFailed and e.name == "BuildFailed"
    assert str(e).startswith("[BuildFailed] ")
    assert "LoadFailed" not in str(e) and "compiler error" in e.hint


HIDDEN_KERNEL = r"""
#include <cstdint>
#include "chiprt/kernel.h"
extern "C" void kernel_entry(int64_t* args) { (void)args; }  // no visibility("default")
"""


def test_a_kernel_without_default_visibility_gets_a_hint_saying_so(tmp_path):
    hidden = chiprt.build_chip_object([HIDDEN_KERNEL], name="hidden", cache_dir=tmp_path)

    def orchestration(orch, args):
        pass

    callable_ = (chiprt.CallableBuilder()
                 .orchestration_function(orchestration, chiprt.signature([], 0))
                 .kernel_object(0, "aiv", hidden, chiprt.signature([], 0))
                 .build())
    with chiprt.Worker(clusters=1) as worker:
        with pytest.raises(chiprt.Error) as info:
            worker.register_callable(0, callable_)
    e = info.value
    assert e.code is chiprt.StatusCode.LoadFailed
    assert "symbol 'kernel_entry' not found" in e.message
    assert 'visibility("default")' in e.hint and "-fvisibility=hidden" in e.hint
    assert "rebuild the shared object for this platform" not in str(e)
    assert f"(hint: {e.hint})" in str(e)


def test_worker_docstrings_give_the_real_options():
    text = pydoc.render_doc(chiprt.Worker, renderer=pydoc.plaintext)
    for option in ("platform='sim'", "clusters=8", "aicpu_threads=4", "memory_bytes=",
                   "isolation='default'"):
        assert option in text, option
    run_doc = chiprt.Worker.run.__doc__
    for keyword in ("runtime=None", "max_tasks=0", "rings=None", "diagnostics_dir=None",
                    "-> RunReport"):
        assert keyword in run_doc, keyword
    assert "-> RunHandle" in chiprt.Worker.submit.__doc__
    assert "-> GraphExport" in chiprt.Worker.export_graph.__doc__
