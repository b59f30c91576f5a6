"""build_chip_object: a kernel written here, compiled, cached by content, run; compiler errors."""

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
