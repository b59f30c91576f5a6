// chiprt._chiprt: the module definition, the chiprt::Error translation, the argument conversions
// and the plain value types (Buffer, Tensor, TaskArgs).
#include <pybind11/stl.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "bindings.h"

namespace chiprt::python {

void throw_argument(const std::string& message) {
  throw Error(StatusCode::InvalidArgument, message);
}

namespace {

// The Python exception for a chiprt::Error: chiprt._errors builds the class of its code family
// with code, name, hint and message, the hint and str() in Python's terms.
void raise_python_error(const Error& error) {
  try {
    py::object errors = py::module_::import("chiprt._errors");
    py::object exc = errors.attr("_from_native")(static_cast<int>(error.code()), error.message(),
                                                 std::string(error.hint()));
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  } catch (py::error_already_set&) {
    // chiprt._errors itself failed to import: the message still reaches the user.
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

DataType dtype_from_numpy(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f') {
    if (size == 4) return DataType::F32;
    if (size == 2) return DataType::F16;
    if (size == 8) return DataType::F64;
  } else if (kind == 'i') {
    if (size == 1) return DataType::I8;
    if (size == 2) return DataType::I16;
    if (size == 4) return DataType::I32;
    if (size == 8) return DataType::I64;
  } else if (kind == 'u') {
    if (size == 1) return DataType::U8;
    if (size == 2) return DataType::U16;
    if (size == 4) return DataType::U32;
    if (size == 8) return DataType::U64;
  } else if (kind == 'b') {
    return DataType::Bool;
  }
  throw_argument("numpy dtype " + py::str(static_cast<py::handle>(dt)).cast<std::string>() +
                 " has no chiprt data type (chiprt: f32, f16, bf16 as uint16, f64, i8..i64, "
                 "u8..u64, bool)");
}

template <class Enum>
Enum enum_from_int(py::handle obj, int count, const char* what) {
  const long long value = obj.cast<long long>();
  if (value < 0 || value >= count) {
    throw_argument(std::string(what) + " " + std::to_string(value) + " is outside [0, " +
                   std::to_string(count) + ")");
  }
  return static_cast<Enum>(value);
}

bool is_int(py::handle obj) {
  return PyLong_Check(obj.ptr()) != 0;
}

}  // namespace

DataType to_dtype(py::handle obj) {
  if (is_int(obj) && !PyBool_Check(obj.ptr())) {
    return enum_from_int<DataType>(obj, kDataTypeCount, "data type");
  }
  if (py::isinstance<py::str>(obj)) {
    const std::string name = lower(obj.cast<std::string>());
    DataType dtype;
    if (parse_dtype(name, &dtype)) return dtype;
    if (name == "bfloat16") return DataType::BF16;
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
  } catch (py::error_already_set&) {
    throw_argument("'" + py::str(obj).cast<std::string>() +
                   "' is not a data type (a chiprt.DataType, a name such as \"f32\" or "
                   "\"bf16\", or a numpy dtype)");
  }
  return dtype_from_numpy(dt);
}

CoreType to_core(py::handle obj) {
  if (is_int(obj)) return enum_from_int<CoreType>(obj, kCoreTypeCount, "core type");
  if (py::isinstance<py::str>(obj)) {
    const std::string name = lower(obj.cast<std::string>());
    if (name == "aic") return CoreType::AIC;
    if (name == "aiv") return CoreType::AIV;
    if (name == "mix") return CoreType::MIX;
  }
  throw_argument("'" + py::str(obj).cast<std::string>() +
                 "' is not a core type (chiprt.CoreType, \"aic\", \"aiv\" or \"mix\")");
}

RuntimeVariant to_runtime(py::handle obj) {
  if (is_int(obj)) return enum_from_int<RuntimeVariant>(obj, 3, "runtime variant");
  if (py::isinstance<py::str>(obj)) {
    const std::string name = lower(obj.cast<std::string>());
    RuntimeVariant runtime;
    if (parse_runtime_variant(name, &runtime)) return runtime;
    if (name == "default") return RuntimeVariant::Default;
  }
  throw_argument("'" + py::str(obj).cast<std::string>() +
                 "' is not a runtime variant (chiprt.RuntimeVariant, \"host_build_graph\" or "
                 "\"tensormap_ringbuffer\")");
}

ArgTag to_tag(py::handle obj) {
  if (is_int(obj)) return enum_from_int<ArgTag>(obj, kArgTagCount, "argument tag");
  if (py::isinstance<py::str>(obj)) {
    const std::string name = lower(obj.cast<std::string>());
    if (name == "in" || name == "input") return ArgTag::In;
    if (name == "out" || name == "output") return ArgTag::Out;
    if (name == "inout") return ArgTag::InOut;
    if (name == "output_existing") return ArgTag::OutputExisting;
    if (name == "no_dep") return ArgTag::NoDep;
  }
  throw_argument("'" + py::str(obj).cast<std::string>() +
                 "' is not an argument tag (chiprt.ArgTag or \"in\", \"out\", \"inout\", "
                 "\"output_existing\", \"no_dep\")");
}

py::dtype numpy_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::F32:
      return py::dtype("float32");
    case DataType::F16:
      return py::dtype("float16");
    case DataType::BF16:
      return py::dtype("uint16");
    case DataType::F64:
      return py::dtype("float64");
    case DataType::I8:
      return py::dtype("int8");
    case DataType::I16:
      return py::dtype("int16");
    case DataType::I32:
      return py::dtype("int32");
    case DataType::I64:
      return py::dtype("int64");
    case DataType::U8:
      return py::dtype("uint8");
    case DataType::U16:
      return py::dtype("uint16");
    case DataType::U32:
      return py::dtype("uint32");
    case DataType::U64:
      return py::dtype("uint64");
    case DataType::Bool:
      return py::dtype("bool");
  }
  throw_argument("data type " + std::to_string(static_cast<int>(dtype)) + " is not valid");
}

py::object enum_member(const char* enum_name, int value) {
  return py::module_::import("chiprt._enums").attr(enum_name)(value);
}

std::vector<uint64_t> to_u64_list(py::handle obj, const char* what) {
  std::vector<uint64_t> out;
  auto append = [&](py::handle item) {
    if (!is_int(item) && !py::hasattr(item, "__index__")) {
      throw_argument(std::string(what) + ": '" + py::str(item).cast<std::string>() +
                     "' is not an integer");
    }
    const auto value = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
    if (!value) throw py::error_already_set();
    if (py::reinterpret_borrow<py::int_>(value) < py::int_(0)) {
      throw_argument(std::string(what) + ": " + py::str(item).cast<std::string>() + " is negative");
    }
    if (py::reinterpret_borrow<py::int_>(value) > py::int_(std::numeric_limits<uint64_t>::max())) {
      throw_argument(std::string(what) + ": " + py::str(item).cast<std::string>() +
                     " does not fit 64 bits");
    }
    out.push_back(value.cast<uint64_t>());
  };
  if (is_int(obj) || (py::hasattr(obj, "__index__") && !py::isinstance<py::sequence>(obj))) {
    append(obj);
    return out;
  }
  if (!py::isinstance<py::sequence>(obj) && !py::isinstance<py::iterable>(obj)) {
    throw_argument(std::string(what) + " must be a sequence of integers");
  }
  for (py::handle item : py::iter(obj)) append(item);
  return out;
}

std::vector<uint8_t> read_object_bytes(py::handle obj) {
  if (PyObject_CheckBuffer(obj.ptr()) != 0) {
    py::buffer buffer = py::reinterpret_borrow<py::buffer>(obj);
    py::buffer_info info = buffer.request();
    const auto* begin = static_cast<const uint8_t*>(info.ptr);
    const auto bytes = static_cast<std::size_t>(info.size * info.itemsize);
    return std::vector<uint8_t>(begin, begin + bytes);
  }
  if (py::isinstance<py::str>(obj) || py::hasattr(obj, "__fspath__")) {
    const std::string path = py::module_::import("os")
                                 .attr("fsdecode")(py::module_::import("os").attr("fspath")(obj))
                                 .cast<std::string>();
    std::ifstream file(path, std::ios::binary);
    std::error_code fs_error;
    if (!file || !std::filesystem::is_regular_file(path, fs_error)) {
      throw Error(StatusCode::LoadFailed,
                  "cannot open chip object '" + path + "' (not a readable file)");
    }
    try {
      return std::vector<uint8_t>((std::istreambuf_iterator<char>(file)),
                                  std::istreambuf_iterator<char>());
    } catch (const std::exception& e) {
      throw Error(StatusCode::LoadFailed, "cannot read chip object '" + path + "': " + e.what());
    }
  }
  throw_argument("a chip object must be bytes or a path (str / os.PathLike) of a .so, not " +
                 py::str(py::type::of(obj)).cast<std::string>());
}

namespace {

// Bits of a Python number as TaskArgs::scalar<T> stores a T (zero-extended to 64 bits).
template <class T>
uint64_t bits_of(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
uint64_t integer_bits(py::handle value, DataType dtype) {
  if (!is_int(value)) {
    throw_argument("scalar of type " + std::string(dtype_name(dtype)) + " needs an integer, not " +
                   py::str(value).cast<std::string>());
  }
  const py::int_ number = py::reinterpret_borrow<py::int_>(value);
  const bool negative = number < py::int_(0);
  if (negative ? (number < py::int_(std::numeric_limits<T>::min()))
               : (number > py::int_(std::numeric_limits<T>::max()))) {
    throw_argument("scalar " + py::str(value).cast<std::string>() + " does not fit " +
                   std::string(dtype_name(dtype)));
  }
  if constexpr (std::is_signed_v<T>) {
    return bits_of(static_cast<T>(number.cast<long long>()));
  } else {
    return bits_of(static_cast<T>(number.cast<unsigned long long>()));
  }
}

// bf16 of a double rounded once: to float rounded to odd (toward zero, the lowest bit set when
// inexact), which keeps what rounding to bf16 needs, then to nearest even.
uint16_t float_to_bf16_bits(float value);
uint16_t double_to_bf16_bits(double value) {
  if (std::isnan(value) || std::isinf(value)) return float_to_bf16_bits(static_cast<float>(value));
  float narrow = static_cast<float>(value);
  if (std::fabs(static_cast<double>(narrow)) > std::fabs(value)) {
    narrow = std::nextafter(narrow, 0.0f);
  }
  if (static_cast<double>(narrow) != value) {
    narrow = std::bit_cast<float>(std::bit_cast<uint32_t>(narrow) | 1u);
  }
  return float_to_bf16_bits(narrow);
}

uint16_t float_to_bf16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint64_t scalar_bits(py::handle value, py::handle dtype_obj) {
  // A numpy scalar carries its own type unless one is given.
  if (dtype_obj.is_none() && py::hasattr(value, "dtype") && py::hasattr(value, "item") &&
      !is_int(value) && !PyFloat_Check(value.ptr())) {
    const DataType dtype = to_dtype(value.attr("dtype"));
    return scalar_bits(value.attr("item")(), enum_member("DataType", static_cast<int>(dtype)));
  }
  DataType dtype;
  if (dtype_obj.is_none()) {
    if (PyBool_Check(value.ptr())) return value.cast<bool>() ? 1 : 0;
    if (is_int(value)) {
      const py::int_ number = py::reinterpret_borrow<py::int_>(value);
      // Non-negative values up to 2^64-1 keep their bits (u64 counts, masks).
      if (number > py::int_(std::numeric_limits<int64_t>::max())) {
        return integer_bits<uint64_t>(value, DataType::U64);
      }
      return integer_bits<int64_t>(value, DataType::I64);
    }
    if (PyFloat_Check(value.ptr())) return bits_of(value.cast<double>());
    throw_argument("a scalar must be an int, a float or a numpy scalar, not " +
                   py::str(py::type::of(value)).cast<std::string>());
  }
  dtype = to_dtype(dtype_obj);
  switch (dtype) {
    case DataType::F32:
      return bits_of(py::float_(py::reinterpret_borrow<py::object>(value)).cast<float>());
    case DataType::F64:
      return bits_of(py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>());
    case DataType::F16:
      return py::module_::import("numpy")
          .attr("float16")(py::float_(py::reinterpret_borrow<py::object>(value)))
          .attr("view")("uint16")
          .attr("item")()
          .cast<uint64_t>();
    case DataType::BF16:
      return double_to_bf16_bits(
          py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>());
    case DataType::I8:
      return integer_bits<int8_t>(value, dtype);
    case DataType::I16:
      return integer_bits<int16_t>(value, dtype);
    case DataType::I32:
      return integer_bits<int32_t>(value, dtype);
    case DataType::I64:
      return integer_bits<int64_t>(value, dtype);
    case DataType::U8:
      return integer_bits<uint8_t>(value, dtype);
    case DataType::U16:
      return integer_bits<uint16_t>(value, dtype);
    case DataType::U32:
      return integer_bits<uint32_t>(value, dtype);
    case DataType::U64:
      return integer_bits<uint64_t>(value, dtype);
    case DataType::Bool: {
      const int truth = PyObject_IsTrue(value.ptr());
      if (truth < 0) throw py::error_already_set();
      return truth == 1 ? 1 : 0;
    }
  }
  throw_argument("scalar data type is not valid");
}

py::tuple tuple_of(const std::array<uint64_t, kMaxTensorDims>& values, uint32_t ndim) {
  py::tuple out(ndim);
  for (uint32_t i = 0; i < ndim; ++i) out[i] = py::int_(values[i]);
  return out;
}

void bind_buffer(py::module_& m) {
  py::class_<DeviceBuffer>(m, "Buffer",
                           "A device buffer from Worker.malloc: a device address and a size in "
                           "bytes (plain data; the Worker owns the memory).")
      .def(py::init([](uint64_t addr, uint64_t size) {
             return DeviceBuffer{addr, size};
           }),
           py::arg("addr") = 0, py::arg("size") = 0)
      .def_readonly("addr", &DeviceBuffer::addr)
      .def_readonly("size", &DeviceBuffer::size)
      .def_property_readonly("empty", &DeviceBuffer::empty)
      .def("__eq__",
           [](const DeviceBuffer& a, py::object b) {
             return py::isinstance<DeviceBuffer>(b) && a == b.cast<DeviceBuffer>();
           })
      .def("__hash__",
           [](const DeviceBuffer& b) { return py::hash(py::make_tuple(b.addr, b.size)); })
      .def("__repr__", [](const DeviceBuffer& b) {
        char text[96];
        std::snprintf(text, sizeof(text), "Buffer(addr=0x%llx, size=%llu)",
                      static_cast<unsigned long long>(b.addr),
                      static_cast<unsigned long long>(b.size));
        return std::string(text);
      });
}

void bind_tensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor",
                     "A typed, strided view over one device buffer (plain data; strides in "
                     "elements). Every view is bounds-checked (ViewOutOfBounds).")
      .def_static(
          "make",
          [](DeviceBuffer buffer, py::handle shape, py::handle dtype, uint64_t start_offset) {
            const std::vector<uint64_t> dims = to_u64_list(shape, "shape");
            return Tensor::make(buffer, dims, to_dtype(dtype), start_offset);
          },
          py::arg("buffer"), py::arg("shape"), py::arg("dtype"), py::arg("start_offset") = 0)
      .def(
          "view",
          [](const Tensor& t, py::handle shape, py::handle offsets) {
            const std::vector<uint64_t> dims = to_u64_list(shape, "shape");
            std::vector<uint64_t> starts = offsets.is_none() ? std::vector<uint64_t>(dims.size(), 0)
                                                             : to_u64_list(offsets, "offsets");
            return t.view(dims, starts);
          },
          py::arg("shape"), py::arg("offsets") = py::none())
      .def("slice", &Tensor::slice, py::arg("dim"), py::arg("start"), py::arg("end"),
           py::arg("step") = 1)
      .def(
          "reshape",
          [](const Tensor& t, py::handle shape) { return t.reshape(to_u64_list(shape, "shape")); },
          py::arg("shape"))
      .def("transpose", &Tensor::transpose, py::arg("dim_a"), py::arg("dim_b"))
      .def(
          "permute",
          [](const Tensor& t, py::handle order) {
            const std::vector<uint64_t> wide = to_u64_list(order, "order");
            std::vector<uint32_t> narrow;
            for (uint64_t v : wide) {
              if (v >= kMaxTensorDims) throw_argument("permute: dimension out of range");
              narrow.push_back(static_cast<uint32_t>(v));
            }
            return t.permute(narrow);
          },
          py::arg("order"))
      .def_readonly("buffer", &Tensor::buffer)
      .def_property_readonly("shape", [](const Tensor& t) { return tuple_of(t.shape, t.ndim); })
      .def_property_readonly("strides", [](const Tensor& t) { return tuple_of(t.strides, t.ndim); })
      .def_property_readonly("dtype",
                             [](const Tensor& t) { return enum_member("DataType", int(t.dtype)); })
      .def_readonly("ndim", &Tensor::ndim)
      .def_property_readonly("numel", &Tensor::numel)
      .def_readonly("start_offset", &Tensor::start_offset)
      .def_property_readonly("is_contiguous", &Tensor::is_contiguous)
      .def_property_readonly("element_bytes", &Tensor::element_bytes)
      .def_property_readonly("nbytes",
                             [](const Tensor& t) { return t.numel() * t.element_bytes(); })
      .def_property_readonly("data_addr", &Tensor::data_addr)
      .def_readonly("owner_task", &Tensor::owner_task)
      .def_property_readonly("byte_extent",
                             [](const Tensor& t) {
                               uint64_t lo = 0, hi = 0;
                               t.byte_extent(&lo, &hi);
                               return py::make_tuple(lo, hi);
                             })
      .def("__eq__",
           [](const Tensor& a, py::object other) {
             if (!py::isinstance<Tensor>(other)) return false;
             const Tensor& b = other.cast<const Tensor&>();
             return a.buffer == b.buffer && a.start_offset == b.start_offset && a.ndim == b.ndim &&
                    a.dtype == b.dtype && a.shape == b.shape && a.strides == b.strides;
           })
      .def("__repr__", [](const Tensor& t) { return "Tensor(" + t.to_string() + ")"; });
}

void bind_task_args(py::module_& m) {
  const auto self = py::return_value_policy::reference_internal;
  py::class_<TaskArgs>(m, "TaskArgs",
                       "The arguments of a run or a task: tagged tensors, then scalars (64-bit "
                       "patterns), explicit dependencies and a predicate. Chainable.")
      .def(py::init<>())
      .def("input", &TaskArgs::in, py::arg("tensor"), self)
      .def("in_", &TaskArgs::in, py::arg("tensor"), self)
      .def("inout", &TaskArgs::inout, py::arg("tensor"), self)
      .def("output_existing", &TaskArgs::output_existing, py::arg("tensor"), self)
      .def("no_dep", &TaskArgs::no_dep, py::arg("tensor"), self)
      .def(
          "add",
          [](TaskArgs& a, py::handle tag, const Tensor& t) -> TaskArgs& {
            return a.add(to_tag(tag), t);
          },
          py::arg("tag"), py::arg("tensor"), self)
      .def(
          "out",
          [](TaskArgs& a, py::handle shape, py::handle dtype) -> TaskArgs& {
            return a.out(to_u64_list(shape, "shape"), to_dtype(dtype));
          },
          py::arg("shape"), py::arg("dtype"), self)
      .def(
          "scalar",
          [](TaskArgs& a, py::handle value, py::handle dtype) -> TaskArgs& {
            return a.add_scalar_bits(scalar_bits(value, dtype));
          },
          py::arg("value"), py::arg("dtype") = py::none(), self)
      .def("add_scalar_bits", &TaskArgs::add_scalar_bits, py::arg("bits"), self)
      .def("after", &TaskArgs::after, py::arg("task_id"), self)
      .def("when", &TaskArgs::when, py::arg("flag"), self)
      .def_property_readonly("tensor_count", &TaskArgs::tensor_count)
      .def_property_readonly("scalar_count", &TaskArgs::scalar_count)
      .def_property_readonly("dep_count", &TaskArgs::dep_count)
      .def_property_readonly("has_predicate", &TaskArgs::has_predicate)
      .def_property_readonly("predicate", &TaskArgs::predicate)
      .def("tensor", py::overload_cast<int>(&TaskArgs::tensor, py::const_), py::arg("i"))
      .def(
          "tag", [](const TaskArgs& a, int i) { return enum_member("ArgTag", int(a.tag(i))); },
          py::arg("i"))
      .def("scalar_bits", &TaskArgs::scalar_bits, py::arg("i"))
      .def("dep", &TaskArgs::dep, py::arg("i"))
      .def("output", &TaskArgs::output, py::arg("k") = 0)
      .def("clear", &TaskArgs::clear, self)
      .def("copy", [](const TaskArgs& a) { return TaskArgs(a); })
      .def("__copy__", [](const TaskArgs& a) { return TaskArgs(a); })
      .def("__repr__", [](const TaskArgs& a) {
        return "TaskArgs(tensors=" + std::to_string(a.tensor_count()) +
               ", scalars=" + std::to_string(a.scalar_count()) +
               ", deps=" + std::to_string(a.dep_count()) + ")";
      });
}

}  // namespace

void bind_types(py::module_& m) {
  bind_buffer(m);
  bind_tensor(m);
  bind_task_args(m);
}

}  // namespace chiprt::python

PYBIND11_MODULE(_chiprt, m) {
  namespace py = pybind11;
  using namespace chiprt::python;
  m.doc() = "chiprt native bindings; use the `chiprt` package.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chiprt::Error& error) {
      raise_python_error(error);
    }
  });

  m.attr("MAX_TENSOR_DIMS") = chiprt::kMaxTensorDims;
  m.attr("MAX_TASK_TENSORS") = chiprt::kMaxTaskTensors;
  m.attr("MAX_TASK_SCALARS") = chiprt::kMaxTaskScalars;
  m.attr("MAX_EXPLICIT_DEPS") = chiprt::kMaxExplicitDeps;
  m.attr("MAX_CALLABLE_IDS") = chiprt::kMaxCallableIds;
  m.attr("MAX_FUNC_ID") = chiprt::kMaxFuncId;
  m.def("format_task_count", &chiprt::format_task_count, py::arg("kernel_tasks"),
        py::arg("dependency_only_tasks") = 0,
        "format_task_count(kernel_tasks, dependency_only_tasks=0) -> str\n\n"
        "A task count as chiprt states it everywhere (the CLI, report.html, the docs):\n"
        "'1,024 kernel tasks + 64 dependency-only'; the dependency-only part only when there\n"
        "are some.");
  m.def("status_codes", [] {
    std::size_t count = 0;
    const chiprt::StatusCode* codes = chiprt::all_status_codes(&count);
    py::list out;
    for (std::size_t i = 0; i < count; ++i) {
      const chiprt::StatusInfo& info = chiprt::status_info(codes[i]);
      out.append(py::make_tuple(std::string(info.name), static_cast<int>(codes[i]),
                                std::string(info.detail), std::string(info.hint)));
    }
    return out;
  });
  m.def("status_info", [](int code) {
    const chiprt::StatusInfo& info = chiprt::status_info(static_cast<chiprt::StatusCode>(code));
    return py::make_tuple(std::string(info.name), std::string(info.detail), std::string(info.hint));
  });
  m.def("dtype_name", [](int dtype) {
    return std::string(chiprt::dtype_name(static_cast<chiprt::DataType>(dtype)));
  });
  m.def("element_size", [](py::handle dtype) { return chiprt::element_size(to_dtype(dtype)); });
  m.def("to_dtype", [](py::handle obj) { return static_cast<int>(to_dtype(obj)); });
  m.def("numpy_dtype", [](py::handle obj) { return numpy_dtype(to_dtype(obj)); });
  m.def("to_core", [](py::handle obj) { return static_cast<int>(to_core(obj)); });
  m.def("to_runtime", [](py::handle obj) { return static_cast<int>(to_runtime(obj)); });
  m.def("to_tag", [](py::handle obj) { return static_cast<int>(to_tag(obj)); });
  m.def("runtime_name", [](int v) {
    return std::string(chiprt::runtime_variant_name(static_cast<chiprt::RuntimeVariant>(v)));
  });
  // Raises the Python error of a chiprt::Error (tests of the translation).
  m.def("_raise_error", [](int code, const std::string& message) {
    throw chiprt::Error(static_cast<chiprt::StatusCode>(code), message);
  });

  bind_types(m);
  bind_callables(m);
  bind_worker(m);
}
