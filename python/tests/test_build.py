"""build_chip_object: a kernel written here, compiled, cached by content, run; compiler errors."""

import csv
import os

import numpy as np
import pytest

import chiprt
from conftest import chip_object

SCALE_KERNEL = r"""
// out[i] = x[i] * factor. Args: x, out; scalars n, factor (f32).
#include <cstdint>
#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t* args) {
  using chiprt::kernel::scalar_arg;
  using chiprt::kernel::tensor_arg;
  const float* x = tensor_arg<const float>(args, 0);
  float* out = tensor_arg<float>(args, 1);
  const int64_t n = scalar_arg<int64_t>(args, 2);
  const float factor = scalar_arg<float>(args, 3);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * factor * SCALE_EXTRA;
}
"""

SCALE_ORCHESTRATION = r"""
// One scale task over the whole tensor: args x (In), out (OutputExisting); scalar factor bits.
#include "chiprt/orchestration.h"

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  chiprt::TaskArgs task;
  const int64_t n = static_cast<int64_t>(args.tensor(0).numel());
  task.in(args.tensor(0)).output_existing(args.tensor(1)).scalar(n).add_scalar_bits(args.scalar_bits(0));
  orch.submit(0, chiprt::CoreType::AIV, task);
}
"""


def test_paths_name_existing_parts():
    where = chiprt.paths()
    assert os.path.isfile(os.path.join(where["include_dir"], "chiprt", "kernel.h"))
    assert os.path.isfile(where["common_library"])
    assert os.path.isdir(where["chip_object_dir"])


def test_paths_honour_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CHIPRT_CHIP_OBJECT_DIR", str(tmp_path))
    assert chiprt.paths()["chip_object_dir"] == str(tmp_path)


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_ringbuffer"])
def test_built_kernel_and_orchestration_run_and_are_cached(tmp_path, runtime):
    cache = tmp_path / "cache"
    kernel = chiprt.build_chip_object([SCALE_KERNEL], name="scale", defines=["SCALE_EXTRA=2.0f"], cache_dir=cache)
    assert os.path.isfile(kernel) and os.path.basename(kernel).startswith("scale-")
    mtime = os.stat(kernel).st_mtime_ns
    again = chiprt.build_chip_object([SCALE_KERNEL], name="scale", defines=["SCALE_EXTRA=2.0f"], cache_dir=cache)
    assert again == kernel and os.stat(again).st_mtime_ns == mtime  # compiled nothing
    other = chiprt.build_chip_object([SCALE_KERNEL], name="scale", defines=["SCALE_EXTRA=3.0f"], cache_dir=cache)
    assert other != kernel
    source = tmp_path / "scale_orchestration.cpp"
    source.write_text(SCALE_ORCHESTRATION)
    orchestration = chiprt.build_chip_object(source, cache_dir=cache)
    assert os.path.basename(orchestration).startswith("scale_orchestration-")
    callable_ = (
        chiprt.CallableBuilder()
        .orchestration_object(orchestration, chiprt.signature(["in", "output_existing"], 1))
        .kernel_object(0, "aiv", kernel, chiprt.signature(["in", "output_existing"], 2))
        .build()
    )
    with chiprt.Worker(runtime=runtime, clusters=2) as w:
        w.register_callable(0, callable_)
        x = np.arange(100, dtype=np.float32)
        tx, tout = w.upload(x), w.upload(np.zeros_like(x))
        w.run(0, chiprt.TaskArgs().input(tx).output_existing(tout).scalar(1.5, "f32"))
        np.testing.assert_allclose(w.download(tout), x * 3.0)


def test_compiler_error_raises_build_error_with_the_output(tmp_path):
    broken = "#include \"chiprt/kernel.h\"\nextern \"C\" void kernel_entry(int64_t* args) { undeclared_thing(args); }\n"
    with pytest.raises(chiprt.BuildError) as info:
        chiprt.build_chip_object([broken], name="broken", cache_dir=tmp_path)
    e = info.value
    assert isinstance(e, chiprt.Error) and e.code is chiprt.StatusCode.BuildFailed
    assert str(e).startswith("[BuildFailed] compiling broken failed")
    assert "undeclared_thing" in e.output and "undeclared_thing" in e.message
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".so")]
    with pytest.raises(chiprt.BuildError, match="cannot read"):
        chiprt.build_chip_object([tmp_path / "missing.cpp"], cache_dir=tmp_path)
    with pytest.raises(chiprt.BuildError, match="cannot run the compiler"):
        chiprt.build_chip_object([broken], cache_dir=tmp_path, compiler="/nonexistent/c++")


def test_example_chip_objects_are_found():
    assert chip_object("vector_example_add").endswith("vector_example_add.so")


# Two sources, one chip object of three kernels, each exported under its own symbol.
ARITH_KERNELS = r"""
#include <cstdint>
#include "chiprt/kernel.h"

namespace {
template <class Op>
void update(int64_t* args, Op op) {
  float* x = chiprt::kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < chiprt::kernel::view(args, 0).numel(); ++i) x[i] = op(x[i]);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) void py_double(int64_t* args) {
  update(args, [](float v) { return 2 * v; });
}
extern "C" __attribute__((visibility("default"))) void py_add_one(int64_t* args) {
  update(args, [](float v) { return v + 1; });
}
"""

SIGN_KERNEL = r"""
#include <cstdint>
#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void py_negate(int64_t* args) {
  float* x = chiprt::kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < chiprt::kernel::view(args, 0).numel(); ++i) x[i] = -x[i];
}
"""


CHAIN_ORCHESTRATION = r"""
#include "chiprt/orchestration.h"

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  for (int32_t func_id = 0; func_id < 4; ++func_id) {
    chiprt::TaskArgs task;
    task.inout(args.tensor(0));
    orch.submit(func_id, chiprt::CoreType::AIV, task);
  }
}
"""


def _chain(orch, args):
    for func_id in (0, 1, 2, 3):
        orch.submit(func_id, "aiv", chiprt.TaskArgs().inout(args.tensor(0)))


def _tasks_csv_kernels(run_dir):
    with open(os.path.join(run_dir, "tasks.csv"), newline="") as f:
        return {int(row["func_id"]): row["kernel"] for row in csv.DictReader(f)}


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_ringbuffer"])
def test_one_object_of_several_named_kernels(tmp_path, runtime):
    # One object: the orchestration and three kernels, from three sources.
    so = chiprt.build_chip_object([ARITH_KERNELS, SIGN_KERNEL, CHAIN_ORCHESTRATION], name="arith",
                                  cache_dir=tmp_path / "cache")
    sig = chiprt.signature(["inout"])
    callable_ = (
        chiprt.CallableBuilder()
        .orchestration_object(so, sig)
        .kernel_object(0, "aiv", so, sig, symbol="py_double", name="double")
        .kernel_object(1, "aiv", so, sig, symbol="py_add_one")
        .kernel_object(2, "aiv", so, sig, symbol="py_negate", name="negate")
        .kernel_object(3, "aiv", so, sig, symbol="py_add_one", name="add one, again")
        .build()
    )
    # The object is in the container once, not four times.
    assert len(callable_) < 2 * os.path.getsize(so)
    with chiprt.Worker(runtime=runtime, clusters=2) as w:
        w.register_callable(0, callable_)
        x = np.arange(64, dtype=np.float32)
        tx = w.upload(x)
        report = w.run(0, chiprt.TaskArgs().inout(tx), diagnostics={"task_timing": True},
                       diagnostics_dir=str(tmp_path / "diag"))
        np.testing.assert_array_equal(w.download(tx), -2 * x)
    assert _tasks_csv_kernels(report.diagnostics_dir) == {
        0: "double (func 0)",
        1: "py_add_one (func 1)",
        2: "negate (func 2)",
        3: "add one, again (func 3)",
    }


def test_kernel_symbols_and_names_are_checked(tmp_path):
    so = chiprt.build_chip_object([SIGN_KERNEL], name="sign", cache_dir=tmp_path)
    sig = chiprt.signature(["inout"])

    def builder(**naming):
        return chiprt.CallableBuilder().orchestration_function(_chain, sig).kernel_object(0, "aiv", so, sig, **naming)

    with pytest.raises(chiprt.ArgumentError, match="symbol 'py negate' is not a C identifier"):
        builder(symbol="py negate").build()
    with pytest.raises(chiprt.ArgumentError, match="display name .* is not printable ASCII"):
        builder(symbol="py_negate", name="tab\there").build()
    with chiprt.Worker(clusters=1) as w:
        # The default symbol, kernel_entry, is not in this object.
        with pytest.raises(chiprt.Error) as info:
            w.register_callable(0, builder().build())
        assert info.value.code is chiprt.StatusCode.LoadFailed
        assert "symbol 'kernel_entry' not found" in info.value.message
        assert 'extern "C"' in info.value.hint
        assert not w.has_callable(0)
        w.register_callable(0, builder(symbol="py_negate").build())
        assert w.has_callable(0)
