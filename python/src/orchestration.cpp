// Callables from Python: argument signatures, CallableBuilder / Callable, and orchestration
// functions written in Python for host_build_graph runs.
//
// CallableBuilder::orchestration_function takes a plain function pointer with no context, so a
// Python function is reached through a fixed table of trampolines (one per slot, generated over
// the slot index); each slot holds one Python callable. A slot is taken by Callable creation and
// released when that Callable is destroyed (a Worker keeps the Callable alive while registered).
// The slot table is guarded by the GIL: slots change only from Python, and a trampoline reads its
// slot after taking the GIL.
#include <pybind11/stl.h>

#include <array>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "bindings.h"

namespace chiprt::python {

namespace {

constexpr int kOrchestrationSlots = 64;

struct Slot {
  PyObject* function = nullptr;  // owned reference while taken
  bool taken = false;
  // The Callable that holds the slot and the container built for it: its bytes, registered or
  // wrapped in a new Callable, reach the function only through that Callable (kept alive).
  PyCallable* owner = nullptr;
  std::string container;
};
Slot g_slots[kOrchestrationSlots];

// A KeyboardInterrupt that ended a Python orchestration function, raised again by the Worker
// call that waited for the run (orchestration_interrupted()).
std::atomic<bool> g_interrupted{false};

// The Orchestration handed to a Python orchestration function, valid only during that call:
// every method refuses afterwards (StateError).
struct PyOrchestration {
  Orchestration* orch = nullptr;

  Orchestration& get() const {
    if (orch == nullptr) {
      throw Error(StatusCode::AlreadyClosed,
                  "this Orchestration object was valid only during its orchestration function's "
                  "call");
    }
    return *orch;
  }
};

// orch.scope(mode): scope_begin on enter, scope_end on exit (not while an exception unwinds:
// the run is failing anyway, as chiprt::Scope does).
struct PyScope {
  PyOrchestration* owner;
  py::object keep_alive;
  ScopeMode mode;
};

ScopeMode to_scope_mode(py::handle obj) {
  if (py::isinstance<py::str>(obj)) {
    const std::string name = obj.cast<std::string>();
    if (name == "auto") return ScopeMode::Auto;
    if (name == "manual") return ScopeMode::Manual;
  } else if (PyLong_Check(obj.ptr())) {
    const int value = obj.cast<int>();
    if (value == 0 || value == 1) return static_cast<ScopeMode>(value);
  }
  throw_argument("scope mode must be \"auto\" or \"manual\", not '" +
                 py::str(obj).cast<std::string>() + "'");
}

// An exception that left a Python orchestration function, as the chiprt::Error that fails the
// run: a chiprt.Error keeps its code and message, anything else is OrchestrationFailed carrying
// the exception's text.
[[noreturn]] void throw_as_run_error(py::error_already_set& error) {
  py::object value = error.value();
  if (error.matches(PyExc_KeyboardInterrupt)) g_interrupted.store(true);
  py::object error_class = py::module_::import("chiprt._errors").attr("Error");
  if (value && py::isinstance(value, error_class)) {
    // A chiprt.Error keeps its code when it is a valid one (a subclass may have set anything).
    StatusCode code = StatusCode::OrchestrationFailed;
    std::string message;
    try {
      const long long raw = py::int_(value.attr("code")).cast<long long>();
      std::size_t count = 0;
      const StatusCode* codes = all_status_codes(&count);
      for (std::size_t i = 0; i < count; ++i) {
        if (static_cast<long long>(codes[i]) == raw && codes[i] != StatusCode::Ok) code = codes[i];
      }
      message = py::str(value.attr("message")).cast<std::string>();
    } catch (py::error_already_set&) {
      message = py::str(value).cast<std::string>();
    } catch (py::cast_error&) {
      message = py::str(value).cast<std::string>();
    }
    throw Error(code, message);
  }
  std::string text;
  try {
    py::object lines =
        py::module_::import("traceback").attr("format_exception_only")(error.type(), value);
    text = py::str("").attr("join")(lines).attr("strip")().cast<std::string>();
  } catch (py::error_already_set&) {
    text = error.what();
  }
  throw Error(StatusCode::OrchestrationFailed, "the Python orchestration function raised " + text);
}

void run_python_orchestration(int slot, Orchestration& orch, const TaskArgs& args) {
  if (!Py_IsInitialized()) {
    throw Error(StatusCode::OrchestrationFailed,
                "the Python interpreter has shut down; its orchestration functions cannot run");
  }
  py::gil_scoped_acquire gil;
  if (!g_slots[slot].taken || g_slots[slot].function == nullptr) {
    throw Error(StatusCode::OrchestrationFailed,
                "the Python orchestration function of this callable was released (its "
                "chiprt.Callable was destroyed; register the Callable itself, not its bytes, to "
                "keep it alive)");
  }
  py::object function = py::reinterpret_borrow<py::object>(g_slots[slot].function);
  py::object orch_object = py::cast(PyOrchestration{&orch});
  auto& handle = orch_object.cast<PyOrchestration&>();
  py::object args_object = py::cast(TaskArgs(args));
  try {
    function(orch_object, args_object);
    handle.orch = nullptr;
  } catch (py::error_already_set& error) {
    handle.orch = nullptr;
    throw_as_run_error(error);
  } catch (...) {
    handle.orch = nullptr;
    throw;
  }
}

template <int Slot>
void orchestration_trampoline(Orchestration& orch, const TaskArgs& args) {
  run_python_orchestration(Slot, orch, args);
}

template <int... Slots>
constexpr std::array<OrchestrationEntry, sizeof...(Slots)> make_trampolines(
    std::integer_sequence<int, Slots...>) {
  return {&orchestration_trampoline<Slots>...};
}

constexpr auto kTrampolines =
    make_trampolines(std::make_integer_sequence<int, kOrchestrationSlots>());

ArgSignature make_signature(py::handle tags, int scalars) {
  ArgSignature sig;
  std::vector<ArgTag> list;
  if (!tags.is_none()) {
    for (py::handle tag : py::iter(tags)) list.push_back(to_tag(tag));
  }
  if (list.size() > static_cast<std::size_t>(kMaxTaskTensors)) {
    throw Error(StatusCode::TooManyArgs, "a signature takes at most " +
                                             std::to_string(kMaxTaskTensors) + " tensors, not " +
                                             std::to_string(list.size()));
  }
  if (scalars < 0 || scalars > kMaxTaskScalars) {
    throw Error(StatusCode::TooManyArgs, "a signature takes 0.." + std::to_string(kMaxTaskScalars) +
                                             " scalars, not " + std::to_string(scalars));
  }
  sig.tensor_count = static_cast<uint8_t>(list.size());
  sig.scalar_count = static_cast<uint8_t>(scalars);
  for (std::size_t i = 0; i < list.size(); ++i) sig.tags[i] = list[i];
  return sig;
}

// CallableBuilder with a Python orchestration function kept aside until build(), which takes a
// slot for it.
struct PyCallableBuilder {
  CallableBuilder builder;
  py::object function;  // None unless orchestration_function was the last orchestration given
  ArgSignature function_sig;
};

py::array tensor_array(const Tensor& tensor) {
  std::vector<py::ssize_t> shape(tensor.shape.begin(), tensor.shape.begin() + tensor.ndim);
  return py::array(numpy_dtype(tensor.dtype), shape);
}

void bind_orchestration(py::module_& m) {
  py::class_<PyScope>(m, "OrchestrationScope")
      .def("__enter__",
           [](PyScope& s) -> PyScope& {
             s.owner->get().scope_begin(s.mode);
             return s;
           })
      .def("__exit__", [](PyScope& s, py::handle type, py::handle, py::handle) {
        if (type.is_none()) s.owner->get().scope_end();
        return false;
      });

  py::class_<PyOrchestration>(m, "Orchestration",
                              "What a Python orchestration function gets: submit tasks, scopes, "
                              "tensor data. Valid only during the function's call.")
      .def(
          "submit",
          [](PyOrchestration& o, int32_t func_id, py::handle core, TaskArgs& args,
             uint32_t block_num) {
            return o.get().submit(TaskSpec::kernel(func_id, to_core(core), block_num), args);
          },
          py::arg("func_id"), py::arg("core"), py::arg("args"), py::arg("block_num") = 1)
      .def(
          "submit_mix",
          [](PyOrchestration& o, int32_t aic, int32_t aiv0, int32_t aiv1, TaskArgs& args,
             uint32_t block_num) {
            return o.get().submit(TaskSpec::mixed(MixKernels{aic, aiv0, aiv1}, block_num), args);
          },
          py::arg("aic"), py::arg("aiv0"), py::arg("aiv1"), py::arg("args"),
          py::arg("block_num") = 1)
      .def(
          "submit_dummy",
          [](PyOrchestration& o, TaskArgs& args) { return o.get().submit_dummy(args); },
          py::arg("args"))
      .def(
          "allocate", [](PyOrchestration& o, TaskArgs& args) { return o.get().allocate(args); },
          py::arg("outputs"))
      .def(
          "scope",
          [](py::object self, py::handle mode) {
            return PyScope{&self.cast<PyOrchestration&>(), self, to_scope_mode(mode)};
          },
          py::arg("mode") = "auto")
      .def(
          "scope_begin",
          [](PyOrchestration& o, py::handle mode) { o.get().scope_begin(to_scope_mode(mode)); },
          py::arg("mode") = "auto")
      .def("scope_end", [](PyOrchestration& o) { o.get().scope_end(); })
      .def(
          "get_tensor_data",
          [](PyOrchestration& o, const Tensor& tensor) {
            Orchestration& orch = o.get();
            py::array out = tensor_array(tensor);
            orch.get_tensor_data(tensor, out.mutable_data(), static_cast<uint64_t>(out.nbytes()));
            return out;
          },
          py::arg("tensor"))
      .def(
          "set_tensor_data",
          [](PyOrchestration& o, const Tensor& tensor, py::handle data) {
            Orchestration& orch = o.get();
            py::array array = py::module_::import("numpy").attr("ascontiguousarray")(
                data, numpy_dtype(tensor.dtype));
            const uint64_t bytes = tensor.numel() * tensor.element_bytes();
            if (static_cast<uint64_t>(array.nbytes()) != bytes) {
              throw_argument("set_tensor_data: the data has " + std::to_string(array.size()) +
                             " elements, the tensor " + std::to_string(tensor.numel()));
            }
            orch.set_tensor_data(tensor, array.data(), bytes);
          },
          py::arg("tensor"), py::arg("data"))
      .def_property_readonly("failed", [](PyOrchestration& o) { return o.get().failed(); })
      .def_property_readonly("error_message",
                             [](PyOrchestration& o) { return o.get().error().to_string(); })
      .def_property_readonly("task_count", [](PyOrchestration& o) { return o.get().task_count(); })
      .def_property_readonly("cluster_count",
                             [](PyOrchestration& o) { return o.get().cluster_count(); })
      .def_property_readonly("user_data",
                             [](PyOrchestration& o) {
                               const auto data = o.get().user_data();
                               return py::bytes(reinterpret_cast<const char*>(data.data()),
                                                data.size());
                             })
      .def_property_readonly("valid", [](PyOrchestration& o) { return o.orch != nullptr; });
}

}  // namespace

int acquire_orchestration_slot(py::object fn) {
  for (int i = 0; i < kOrchestrationSlots; ++i) {
    if (!g_slots[i].taken) {
      g_slots[i].taken = true;
      g_slots[i].function = fn.release().ptr();
      return i;
    }
  }
  throw Error(StatusCode::CapacityExceeded,
              "every one of the " + std::to_string(kOrchestrationSlots) +
                  " Python orchestration slots is taken by a live chiprt.Callable; drop "
                  "Callables you no longer need");
}

void set_orchestration_slot_owner(int slot, PyCallable* owner) {
  g_slots[slot].owner = owner;
  g_slots[slot].container = owner->container;
}

py::object python_orchestration_callable(const std::string& container) {
  for (const Slot& slot : g_slots) {
    if (slot.taken && slot.owner != nullptr && slot.container == container) {
      return py::cast(slot.owner, py::return_value_policy::reference);
    }
  }
  // No live Callable built it: does it name a trampoline anyway (the bytes of a Callable since
  // destroyed, whose slot may now hold another function)?
  for (int i = 0; i < kOrchestrationSlots; ++i) {
    const auto addr = reinterpret_cast<uint64_t>(kTrampolines[static_cast<std::size_t>(i)]);
    char pattern[sizeof(addr)];
    std::memcpy(pattern, &addr, sizeof(addr));
    if (container.find(std::string_view(pattern, sizeof(pattern))) != std::string::npos) {
      throw Error(StatusCode::InvalidArgument,
                  "these container bytes name a Python orchestration function whose "
                  "chiprt.Callable was destroyed (its slot may now run another function); "
                  "build the Callable again and register the Callable object itself");
    }
  }
  return py::none();
}

bool orchestration_interrupted() {
  return g_interrupted.exchange(false);
}

OrchestrationEntry orchestration_slot_entry(int slot) {
  return kTrampolines[static_cast<std::size_t>(slot)];
}

void release_orchestration_slot(int slot) {
  if (slot < 0 || slot >= kOrchestrationSlots || !g_slots[slot].taken) return;
  PyObject* function = g_slots[slot].function;
  g_slots[slot].function = nullptr;
  g_slots[slot].taken = false;
  g_slots[slot].owner = nullptr;
  g_slots[slot].container.clear();
  Py_XDECREF(function);
}

PyCallable::~PyCallable() {
  release_orchestration_slot(slot);
}

void bind_callables(py::module_& m) {
  py::class_<ArgSignature>(m, "ArgSignature",
                           "The tags a callable's tensor arguments must have, and its scalar "
                           "count (chiprt.signature builds one).")
      .def(py::init([](py::handle tags, int scalars) { return make_signature(tags, scalars); }),
           py::arg("tags") = py::none(), py::arg("scalars") = 0)
      .def_property_readonly("tensor_count",
                             [](const ArgSignature& s) { return int(s.tensor_count); })
      .def_property_readonly("scalar_count",
                             [](const ArgSignature& s) { return int(s.scalar_count); })
      .def_property_readonly("tags",
                             [](const ArgSignature& s) {
                               py::list out;
                               for (int i = 0; i < s.tensor_count; ++i) {
                                 out.append(enum_member("ArgTag", int(s.tags[i])));
                               }
                               return py::tuple(out);
                             })
      .def("__repr__", [](const ArgSignature& s) {
        std::string text = "signature([";
        for (int i = 0; i < s.tensor_count; ++i) {
          if (i > 0) text += ", ";
          text += "\"" + std::string(arg_tag_name(s.tags[i])) + "\"";
        }
        return text + "], scalars=" + std::to_string(s.scalar_count) + ")";
      });
  m.def("signature", &make_signature, py::arg("tags"), py::arg("scalars") = 0,
        "ArgSignature from tensor tags (chiprt.ArgTag or \"in\", \"out\", \"inout\", "
        "\"output_existing\", \"no_dep\") in argument order and a scalar count.");

  py::class_<PyCallable>(m, "Callable",
                         "A built chip callable: its container bytes, and the Python "
                         "orchestration function it runs (kept alive by this object).")
      .def(py::init([](py::bytes container) {
             auto callable = std::make_unique<PyCallable>();
             callable->container = container.cast<std::string>();
             callable->function = py::none();
             // The bytes of a Callable with a Python orchestration function: this one keeps
             // that Callable (and so its slot) alive.
             callable->origin = python_orchestration_callable(callable->container);
             if (!callable->origin.is_none()) {
               callable->function = callable->origin.cast<const PyCallable&>().function;
             }
             return callable;
           }),
           py::arg("container"))
      .def_property_readonly("container",
                             [](const PyCallable& c) { return py::bytes(c.container); })
      .def_property_readonly("python_orchestration", &PyCallable::python_orchestration)
      .def_property_readonly("orchestration_function",
                             [](const PyCallable& c) { return c.function; })
      .def("__len__", [](const PyCallable& c) { return c.container.size(); })
      .def("__repr__", [](const PyCallable& c) {
        return std::string("Callable(") + std::to_string(c.container.size()) + " bytes" +
               (c.python_orchestration() ? ", Python orchestration" : "") + ")";
      });

  const auto self = py::return_value_policy::reference_internal;
  py::class_<PyCallableBuilder>(m, "CallableBuilder",
                                "Assembles a chip callable from chip objects (bytes or paths of "
                                ".so files) or a Python orchestration function.")
      .def(py::init([] {
        auto builder = std::make_unique<PyCallableBuilder>();
        builder->function = py::none();
        return builder;
      }))
      .def(
          "orchestration_object",
          [](PyCallableBuilder& b, py::handle so, const ArgSignature& sig) -> PyCallableBuilder& {
            b.builder.orchestration_object(read_object_bytes(so), sig);
            b.function = py::none();
            return b;
          },
          py::arg("so"), py::arg("sig") = ArgSignature{}, self)
      .def(
          "orchestration_function",
          [](PyCallableBuilder& b, py::object fn, const ArgSignature& sig) -> PyCallableBuilder& {
            if (!PyCallable_Check(fn.ptr())) {
              throw_argument("orchestration_function needs a callable fn(orch, args)");
            }
            b.function = std::move(fn);
            b.function_sig = sig;
            return b;
          },
          py::arg("fn"), py::arg("sig") = ArgSignature{}, self)
      .def(
          "kernel_object",
          [](PyCallableBuilder& b, int32_t func_id, py::handle core, py::handle so,
             const ArgSignature& sig, const std::string& symbol,
             const std::optional<std::string>& name) -> PyCallableBuilder& {
            b.builder.kernel_object(func_id, to_core(core), read_object_bytes(so), sig, symbol,
                                    name.value_or(""));
            return b;
          },
          py::arg("func_id"), py::arg("core"), py::arg("so"), py::arg("sig") = ArgSignature{},
          py::arg("symbol") = std::string(kKernelSymbol), py::arg("name") = py::none(), self,
          "The kernel `symbol` (an extern \"C\" function; default \"kernel_entry\") of the chip "
          "object `so` (a path or bytes) under `func_id`, for `core`, shown as `name` in "
          "diagnostics, reports and errors (default: the symbol). One object may export several "
          "kernels: pass it once per func_id with each kernel's symbol; the callable holds it "
          "once. build() raises chiprt.ArgumentError for a symbol that is not a C identifier or a "
          "name that is not 1..64 printable ASCII characters; register_callable raises "
          "chiprt.Error (code LoadFailed) naming the symbol when the object does not export it.")
      .def("build", [](const PyCallableBuilder& b) {
        auto callable = std::make_unique<PyCallable>();
        callable->function = py::none();
        if (b.function.is_none()) {
          const std::vector<uint8_t> bytes = b.builder.build();
          callable->container.assign(bytes.begin(), bytes.end());
          return callable;
        }
        const int slot = acquire_orchestration_slot(b.function);
        callable->slot = slot;  // released by ~PyCallable, also when build() throws below
        callable->function = b.function;
        CallableBuilder with_function = b.builder;
        with_function.orchestration_function(orchestration_slot_entry(slot), b.function_sig);
        const std::vector<uint8_t> bytes = with_function.build();
        callable->container.assign(bytes.begin(), bytes.end());
        set_orchestration_slot_owner(slot, callable.get());
        return callable;
      });

  bind_orchestration(m);
}

}  // namespace chiprt::python
