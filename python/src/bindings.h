// Shared parts of the chiprt Python module (chiprt._chiprt): argument conversions, the callable
// object that may carry a Python orchestration function, and the binders of each source file.
//
// Threading: everything here runs with the GIL held unless it says otherwise; the Python
// orchestration slot table (orchestration.cpp) is guarded by the GIL.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "chiprt/chiprt.h"

namespace chiprt::python {

namespace py = pybind11;

// Throws chiprt::Error(InvalidArgument): the module's own argument checks surface as
// chiprt.ArgumentError like the runtime's.
[[noreturn]] void throw_argument(const std::string& message);

// A DataType from a DataType, an int, a name ("f32", "bf16", "float32") or anything numpy.dtype
// takes (np.float32, an array's dtype).
DataType to_dtype(py::handle obj);
CoreType to_core(py::handle obj);
RuntimeVariant to_runtime(py::handle obj);
ArgTag to_tag(py::handle obj);
// The numpy dtype data of `dtype` travels in (bf16: uint16, its raw bit patterns).
py::dtype numpy_dtype(DataType dtype);
// A member of an IntEnum of chiprt._enums (DataType, CoreType, ArgTag, RuntimeVariant,
// StatusCode) for `value`.
py::object enum_member(const char* enum_name, int value);
// A shape or index list: a sequence of non-negative ints (or one int).
std::vector<uint64_t> to_u64_list(py::handle obj, const char* what);

// bytes, bytearray, memoryview or a path (str / os.PathLike) of a file read whole.
std::vector<uint8_t> read_object_bytes(py::handle obj);

// A built callable: its container and, for a Python orchestration function, the slot of the
// trampoline its container names (released when this object is destroyed).
struct PyCallable {
  std::string container;
  int slot = -1;
  py::object function;  // the Python orchestration function, None for a compiled one
  // Callable(bytes) of another Callable's container with a Python orchestration function: that
  // Callable, kept alive (it holds the slot). None otherwise.
  py::object origin = py::none();
  PyCallable() = default;
  PyCallable(const PyCallable&) = delete;
  PyCallable& operator=(const PyCallable&) = delete;
  ~PyCallable();
  bool python_orchestration() const { return slot >= 0 || !origin.is_none(); }
};

// Python orchestration slots (orchestration.cpp): a free slot holding `fn`, its trampoline, and
// its release. Throws CapacityExceeded when every slot is taken.
int acquire_orchestration_slot(py::object fn);
OrchestrationEntry orchestration_slot_entry(int slot);
void release_orchestration_slot(int slot);
// The slot's Callable and the container built for it (CallableBuilder.build).
void set_orchestration_slot_owner(int slot, PyCallable* owner);
// For container bytes: the live Callable with a Python orchestration function they were built
// for, or None when they name no Python orchestration function. Throws InvalidArgument for the
// bytes of a destroyed one (its slot may run another function by now).
py::object python_orchestration_callable(const std::string& container);
// Whether a KeyboardInterrupt ended a Python orchestration function since the last call.
bool orchestration_interrupted();

void bind_types(py::module_& m);      // module.cpp: enums' helpers, Buffer, Tensor, TaskArgs
void bind_callables(py::module_& m);  // orchestration.cpp: signature, builder, orchestration
void bind_worker(py::module_& m);     // worker.cpp: Worker, RunHandle, RunReport, GraphExport

}  // namespace chiprt::python
