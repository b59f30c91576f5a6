// chiprt.Worker and what its calls return (RunHandle, RunReport, GraphExport), and
// _native_run_loop, the C++ baseline of the Python-overhead benchmark.
//
// The GIL is released around every Worker call (any may wait for the Worker's mutex or an
// admitted run, and a run's Python orchestration function needs the GIL on another thread).
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "bindings.h"

namespace chiprt::python {

namespace {

// A CallConfig with the storage its user_data points at.
struct RunConfig {
  CallConfig config;
  std::string user_data;
  bool placed = false;  // pipeline_slot or arena_bank given: Worker.run runs it synchronously
};

bool truthy(py::handle value) {
  const int truth = PyObject_IsTrue(value.ptr());
  if (truth < 0) throw py::error_already_set();
  return truth == 1;
}

uint64_t non_negative(py::handle value, const std::string& key) {
  if (PyLong_Check(value.ptr()) == 0 || py::reinterpret_borrow<py::int_>(value) < py::int_(0)) {
    throw_argument(key + " must be a non-negative integer, not " +
                   py::repr(value).cast<std::string>());
  }
  const unsigned long long v = PyLong_AsUnsignedLongLong(value.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr) {
    PyErr_Clear();  // beyond 64 bits: an argument error naming the key, not a cast error
    throw_argument(key + "=" + py::repr(value).cast<std::string>() + " is too large");
  }
  return v;
}

int small_int(py::handle value, const std::string& key) {
  const uint64_t v = non_negative(value, key);
  if (v > 1u << 30) throw_argument(key + "=" + std::to_string(v) + " is too large");
  return static_cast<int>(v);
}

void apply_diagnostics_dict(py::dict fields, DiagnosticsConfig* diag) {
  for (auto item : fields) {
    const std::string key = py::str(item.first).cast<std::string>();
    py::handle value = item.second;
    if (key == "swimlane_level") {
      diag->swimlane_level = small_int(value, key);
    } else if (key == "task_timing") {
      diag->task_timing = truthy(value);
    } else if (key == "dependency_graph") {
      diag->dependency_graph = truthy(value);
    } else if (key == "scope_stats") {
      diag->scope_stats = truthy(value);
    } else if (key == "args_dump_level") {
      diag->args_dump_level = small_int(value, key);
    } else if (key == "args_dump_budget_bytes") {
      diag->args_dump_budget_bytes = non_negative(value, key);
    } else if (key == "hardware_counters") {
      diag->hardware_counters = truthy(value);
    } else if (key == "output_dir") {
      diag->output_dir = py::str(value).cast<std::string>();
    } else if (key == "background_write") {
      diag->background_write = truthy(value);
    } else {
      throw_argument("unknown diagnostics field '" + key +
                     "' (swimlane_level, task_timing, dependency_graph, scope_stats, "
                     "args_dump_level, args_dump_budget_bytes, hardware_counters, output_dir, "
                     "background_write)");
    }
  }
}

void apply_diagnostics(py::handle value, DiagnosticsConfig* diag) {
  if (value.is_none() || (PyBool_Check(value.ptr()) && !truthy(value))) return;
  if (PyBool_Check(value.ptr())) {
    const std::string dir = diag->output_dir;
    *diag = DiagnosticsConfig::all(dir);
    return;
  }
  if (py::isinstance<py::str>(value)) {
    std::string error;
    if (!parse_diagnostics_list(value.cast<std::string>(), diag, &error)) {
      throw_argument("diagnostics: " + error);
    }
    return;
  }
  if (py::isinstance<py::dict>(value)) {
    apply_diagnostics_dict(py::reinterpret_borrow<py::dict>(value), diag);
    return;
  }
  throw_argument(
      "diagnostics must be None, \"all\", a switch list such as \"swimlane=2,tasks,deps\", or a "
      "dict of DiagnosticsConfig fields");
}

// CallConfig::rings from a dict of task_window / heap_bytes / dep_pool, each an int, a list of
// up to kRingScopeDepths ints (one per scope depth) or the text form ("1024,256").
void apply_rings(py::handle value, RingSizing* rings) {
  if (value.is_none()) return;
  if (!py::isinstance<py::dict>(value)) {
    throw_argument("rings must be a dict of task_window, heap_bytes, dep_pool");
  }
  for (auto item : py::reinterpret_borrow<py::dict>(value)) {
    const std::string key = py::str(item.first).cast<std::string>();
    RingField field;
    if (key == "task_window") {
      field = RingField::TaskWindow;
    } else if (key == "heap_bytes") {
      field = RingField::HeapBytes;
    } else if (key == "dep_pool") {
      field = RingField::DepPool;
    } else {
      throw_argument("unknown rings field '" + key + "' (task_window, heap_bytes, dep_pool)");
    }
    std::vector<uint64_t>& list = rings->list(field);
    if (py::isinstance<py::str>(item.second)) {
      throw_if_error(
          parse_ring_sizes(field, "rings." + key, item.second.cast<std::string>(), &list));
    } else {
      list = to_u64_list(item.second, ("rings." + key).c_str());
    }
  }
}

// The run's CallConfig from Worker.run's keywords (CallConfig's field names).
void parse_config(const py::kwargs& kwargs, RunConfig* out) {
  CallConfig& config = out->config;
  py::object diagnostics = py::none();
  std::string diagnostics_dir;
  bool has_dir = false, has_background = false, background = false;
  for (auto item : kwargs) {
    const std::string key = py::str(item.first).cast<std::string>();
    py::handle value = item.second;
    if (key == "runtime") {
      config.runtime = value.is_none() ? RuntimeVariant::Default : to_runtime(value);
    } else if (key == "aicpu_thread_num") {
      config.aicpu_thread_num = small_int(value, key);
    } else if (key == "cluster_count") {
      config.cluster_count = small_int(value, key);
    } else if (key == "serial") {
      config.serial = truthy(value);
    } else if (key == "output_heap_bytes") {
      config.output_heap_bytes = non_negative(value, key);
    } else if (key == "max_tasks") {
      config.max_tasks = non_negative(value, key);
    } else if (key == "user_data") {
      if (py::isinstance<py::str>(value)) {
        out->user_data = value.cast<std::string>();
      } else if (!value.is_none()) {
        const std::vector<uint8_t> bytes = read_object_bytes(value);
        out->user_data.assign(bytes.begin(), bytes.end());
      }
    } else if (key == "replay_graph") {
      config.replay_graph = truthy(value);
    } else if (key == "replay_key") {
      config.replay_key = non_negative(value, key);
    } else if (key == "measure_kernel_time") {
      config.measure_kernel_time = truthy(value);
    } else if (key == "pipeline_slot") {
      config.pipeline_slot = static_cast<uint32_t>(small_int(value, key));
      out->placed = true;
    } else if (key == "arena_bank") {
      config.arena_bank = static_cast<uint32_t>(small_int(value, key));
      out->placed = true;
    } else if (key == "rings") {
      apply_rings(value, &config.rings);
    } else if (key == "diagnostics") {
      diagnostics = py::reinterpret_borrow<py::object>(value);
    } else if (key == "diagnostics_dir") {
      if (!value.is_none()) {
        has_dir = true;
        diagnostics_dir =
            py::str(py::module_::import("os").attr("fspath")(value)).cast<std::string>();
      }
    } else if (key == "background_write") {
      has_background = true;
      background = truthy(value);
    } else {
      throw_argument(
          "unknown run keyword '" + key +
          "' (runtime, aicpu_thread_num, cluster_count, serial, output_heap_bytes, max_tasks, "
          "user_data, replay_graph, replay_key, measure_kernel_time, pipeline_slot, arena_bank, "
          "rings, diagnostics, diagnostics_dir, background_write)");
    }
  }
  if (has_dir) config.diagnostics.output_dir = diagnostics_dir;
  apply_diagnostics(diagnostics, &config.diagnostics);
  if (has_dir) config.diagnostics.output_dir = diagnostics_dir;
  if (has_background) config.diagnostics.background_write = background;
  config.user_data = std::span<const std::byte>(
      reinterpret_cast<const std::byte*>(out->user_data.data()), out->user_data.size());
}

WorkerOptions parse_worker_options(const py::args& args, const py::kwargs& kwargs) {
  static const char* const kNames[] = {"platform",       "device_id",    "runtime",      "clusters",
                                       "aicpu_threads",  "host_threads", "memory_bytes", "serial",
                                       "core_execution", "isolation"};
  constexpr std::size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);
  if (args.size() > kNameCount) throw_argument("Worker takes at most 10 positional arguments");
  std::map<std::string, py::object> values;
  for (std::size_t i = 0; i < args.size(); ++i) {
    values[kNames[i]] = py::reinterpret_borrow<py::object>(args[i]);
  }
  for (auto item : kwargs) {
    const std::string key = py::str(item.first).cast<std::string>();
    bool known = false;
    for (const char* name : kNames) known = known || key == name;
    if (!known) {
      throw_argument("unknown Worker option '" + key +
                     "' (platform, device_id, runtime, clusters, aicpu_threads, host_threads, "
                     "memory_bytes, serial, core_execution, isolation)");
    }
    if (values.count(key) != 0) throw_argument("Worker option '" + key + "' given twice");
    values[key] = py::reinterpret_borrow<py::object>(item.second);
  }
  WorkerOptions options;
  for (const auto& [key, value] : values) {
    if (key == "platform") {
      options.platform = py::str(value).cast<std::string>();
    } else if (key == "device_id") {
      options.device_id = small_int(value, key);
    } else if (key == "runtime") {
      options.runtime = to_runtime(value);
      if (options.runtime == RuntimeVariant::Default)
        options.runtime = RuntimeVariant::HostBuildGraph;
    } else if (key == "clusters") {
      options.sim.clusters = static_cast<uint32_t>(small_int(value, key));
    } else if (key == "aicpu_threads") {
      options.sim.aicpu_threads = static_cast<uint32_t>(small_int(value, key));
    } else if (key == "host_threads") {
      options.sim.host_threads = static_cast<uint32_t>(small_int(value, key));
    } else if (key == "memory_bytes") {
      options.sim.memory_bytes = non_negative(value, key);
    } else if (key == "serial") {
      options.sim.serial = truthy(value);
    } else if (key == "core_execution") {
      if (!parse_sim_core_execution(py::str(value).cast<std::string>(),
                                    &options.sim.core_execution)) {
        throw_argument("core_execution must be \"auto\", \"aicpu\" or \"executors\", not '" +
                       py::str(value).cast<std::string>() + "'");
      }
    } else if (key == "isolation") {
      if (!parse_sim_isolation(py::str(value).cast<std::string>(), &options.sim.isolation)) {
        throw_argument("isolation must be \"default\", \"none\" or \"process\", not '" +
                       py::str(value).cast<std::string>() + "'");
      }
    }
  }
  return options;
}

struct PyWorker;

// Worker(...)'s docstring: the options WorkerOptions / SimOptions hold, with their defaults.
constexpr const char* kWorkerInitDoc =
    "Worker(platform='sim', device_id=0, runtime='host_build_graph', clusters=8, "
    "aicpu_threads=4, host_threads=0, memory_bytes=4 GiB, serial=False, core_execution='auto', "
    "isolation='default')\n\n"
    "Creates and initialises a Worker on one device. platform: the platform by name ('sim', the "
    "simulated chip). runtime: the default runtime variant of its runs ('host_build_graph' or "
    "'tensormap_ringbuffer'). clusters: clusters of the simulated chip (1 AIC + 2 AIV each, "
    "1..24). aicpu_threads: its scheduler processors. host_threads: executor threads (0: the "
    "host's hardware threads). memory_bytes: device memory capacity. serial: run the chip side "
    "on one thread in a deterministic order. core_execution: where kernels run, 'auto', "
    "'aicpu' or 'executors'. isolation: 'none' (threads of this process), 'process' (a device "
    "process of its own: a crashing or hanging kernel raises DeviceError instead of ending "
    "Python) or 'default' (CHIPRT_SIM_ISOLATION, else none). An unknown option raises "
    "ArgumentError naming it; a Worker is a context manager (closed at the end of the with "
    "block).";
// Live Workers (guarded by the GIL), closed at interpreter exit while Python still runs: an
// admitted run with a Python orchestration function must finish before the interpreter goes.
std::set<PyWorker*> g_live_workers;

struct PyWorker {
  std::unique_ptr<Worker> worker = std::make_unique<Worker>();
  WorkerOptions options;
  bool closed = false;
  // What each registered id holds: the Callable object (kept alive while registered, so a
  // Python orchestration function's slot stays valid) or the bytes given.
  std::map<int32_t, py::object> registered;
  std::map<int32_t, bool> python_orchestration;
  // Runs of Worker.run calls that Ctrl-C interrupted: they go on, and nobody waits for them here
  // (close() finishes them; a run() after them queues behind them).
  std::vector<RunHandle> interrupted;

  PyWorker() { g_live_workers.insert(this); }
  PyWorker(const PyWorker&) = delete;
  PyWorker& operator=(const PyWorker&) = delete;
  // Runs during Python's deallocation (GIL held): the Worker's close() finishes admitted runs,
  // whose Python orchestration functions need the GIL.
  ~PyWorker() {
    g_live_workers.erase(this);
    {
      py::gil_scoped_release release;
      worker.reset();
      interrupted.clear();  // done by now (or a forked child's: dropped without waiting)
    }
    registered.clear();
  }

  Worker& get() { return *worker; }

  void close() {
    {
      py::gil_scoped_release release;
      worker->close();
    }
    closed = true;
    registered.clear();
    python_orchestration.clear();
  }

  void check_runtime(int32_t callable_id, const CallConfig& config) const {
    const auto it = python_orchestration.find(callable_id);
    if (it == python_orchestration.end() || !it->second) return;
    const RuntimeVariant runtime =
        config.runtime == RuntimeVariant::Default ? options.runtime : config.runtime;
    if (runtime == RuntimeVariant::TensormapRingbuffer) {
      throw Error(StatusCode::UnsupportedFeature,
                  "callable " + std::to_string(callable_id) +
                      " has a Python orchestration function, which runs only on "
                      "host_build_graph (on the host); the tensormap_ringbuffer variant runs the "
                      "orchestration on the chip and needs a compiled one: build it with "
                      "chiprt.build_chip_object and add it with "
                      "CallableBuilder.orchestration_object");
    }
  }
};

struct PyRunHandle {
  RunHandle handle;
  PyRunHandle() = default;
  explicit PyRunHandle(RunHandle h) : handle(std::move(h)) {}
  PyRunHandle(const PyRunHandle&) = delete;
  PyRunHandle& operator=(const PyRunHandle&) = delete;
  // Destroying a handle waits for its run, which may need the GIL (a Python orchestration); in a
  // forked child the handle of a parent's run is dropped without waiting (RunHandle does that).
  ~PyRunHandle() {
    if (!handle.valid()) return;
    py::gil_scoped_release release;
    RunHandle dropped = std::move(handle);
  }
};

py::dict phases_of(const RunReport& report) {
  py::dict phases;
  for (int i = 0; i < kPhaseCount; ++i) {
    const PhaseSpan& span = report.phases[static_cast<std::size_t>(i)];
    if (!span.present) continue;
    py::dict entry;
    entry["start_ns"] = span.start_ns;
    entry["span_ns"] = span.span_ns;
    phases[py::str(std::string(phase_name(static_cast<Phase>(i))))] = entry;
  }
  return phases;
}

py::dict task_dict(const GraphExport& graph, const ExportedTask& task) {
  py::dict d;
  d["task_id"] = task.task_id;
  d["func_id"] = task.func_id;
  d["core_type"] = enum_member("CoreType", static_cast<int>(task.core_type));
  d["mix_aiv"] = py::make_tuple(task.mix_aiv[0], task.mix_aiv[1]);
  d["block_num"] = task.block_num;
  d["dummy"] = task.dummy;
  d["scope_fence"] = task.scope_fence;
  d["predicated"] = task.predicated;
  d["tensor_count"] = task.tensor_count;
  d["arg_count"] = task.arg_count;
  d["producer_count"] = task.producer_count;
  py::list consumers;
  for (uint32_t c : graph.consumers_of(task)) consumers.append(c);
  d["consumers"] = consumers;
  return d;
}

py::array owned_bytes_array(uint64_t bytes) {
  return py::array(py::dtype("uint8"), std::vector<py::ssize_t>{static_cast<py::ssize_t>(bytes)});
}

std::string dtype_text(const py::dtype& dt) {
  return py::str(static_cast<py::handle>(dt)).cast<std::string>();
}

// Contiguous host data in this host's byte order of anything numpy.asarray takes (the buffer
// protocol included), or of a DLPack object (numpy.from_dlpack). Data of the other byte order
// (">i4" on a little-endian host) is converted to native order, a copy: the device holds values,
// and a kernel reads them in native order. An object whose DLPack export fails is read through
// the buffer protocol / __array__ when it has one; otherwise the export's error is an
// ArgumentError.
py::array host_array(py::handle data, bool numeric = true) {
  py::module_ np = py::module_::import("numpy");
  py::object source = py::reinterpret_borrow<py::object>(data);
  if (!py::isinstance<py::array>(data) && py::hasattr(data, "__dlpack__")) {
    try {
      source = np.attr("from_dlpack")(data);
    } catch (py::error_already_set& e) {
      if (PyObject_CheckBuffer(data.ptr()) == 0 && !py::hasattr(data, "__array__") &&
          !py::hasattr(data, "__array_interface__")) {
        throw_argument("the DLPack export of " + py::str(py::type::of(data)).cast<std::string>() +
                       " failed (" + std::string(e.what()) +
                       "); pass a numpy array or an object with the buffer protocol");
      }
    }
  }
  py::array array = np.attr("ascontiguousarray")(source);
  if (numeric && array.dtype().attr("hasobject").cast<bool>()) {
    // Its bytes are PyObject pointers: copying them out leaks addresses, copying in corrupts.
    throw_argument("numpy dtype " + dtype_text(array.dtype()) +
                   " holds Python objects, not data; pass a numeric array");
  }
  if (!array.dtype().attr("isnative").cast<bool>()) {
    array = np.attr("ascontiguousarray")(array, array.dtype().attr("newbyteorder")("="));
  }
  return array;
}

// An `out=` array must be in this host's byte order: the device's bytes are copied into it as
// they are, so another order would read every value byte-swapped.
void require_native_order(const py::array& out, const char* what) {
  if (out.dtype().attr("isnative").cast<bool>()) return;
  throw_argument(std::string(what) + ": out has dtype " + dtype_text(out.dtype()) +
                 ", not this host's byte order (the device's values would land byte-swapped); "
                 "pass an array of native order (dtype " +
                 dtype_text(out.dtype().attr("newbyteorder")("=")) +
                 ") and convert it afterwards (astype)");
}

void check_range(const DeviceBuffer& buffer, uint64_t offset, uint64_t bytes, const char* what) {
  if (offset > buffer.size || bytes > buffer.size - offset) {
    throw_argument(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                   std::to_string(offset) + " do not fit the buffer of " +
                   std::to_string(buffer.size) + " bytes");
  }
}

// A run's error, or KeyboardInterrupt when Ctrl-C (or a KeyboardInterrupt raised there) ended
// its Python orchestration function: the user asked to stop, not for an OrchestrationFailed.
[[noreturn]] void rethrow_run_error() {
  if (orchestration_interrupted()) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  throw;
}

// A run's report, waited for in slices with the GIL released: between slices Python's signal
// handlers run (Ctrl-C raises KeyboardInterrupt here; the run goes on and its handle stays
// valid). `timeout`: None (no limit), or seconds (inf: no limit); TimeoutError when it passes.
RunReport wait_interruptibly(const RunHandle& handle, py::handle timeout) {
  using Clock = std::chrono::steady_clock;
  bool limited = false;
  Clock::time_point deadline{};
  if (!timeout.is_none()) {
    if (!PyFloat_Check(timeout.ptr()) && !PyLong_Check(timeout.ptr()) &&
        !py::hasattr(timeout, "__float__")) {
      throw_argument("wait: timeout must be None or a number of seconds, not " +
                     py::repr(timeout).cast<std::string>());
    }
    const double seconds = py::float_(py::reinterpret_borrow<py::object>(timeout)).cast<double>();
    if (std::isnan(seconds)) throw_argument("wait: timeout is NaN");
    // Beyond a century: no limit (and no overflow of the clock).
    if (seconds < 3.2e9) {
      limited = true;
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::max(0.0, seconds)));
    }
  }
  constexpr auto kSlice = std::chrono::milliseconds(50);
  for (;;) {
    bool done = false;
    {
      py::gil_scoped_release release;
      auto slice = std::chrono::duration_cast<std::chrono::nanoseconds>(kSlice);
      if (limited) {
        const auto left = deadline - Clock::now();
        if (left < slice)
          slice = std::max(std::chrono::nanoseconds(0),
                           std::chrono::duration_cast<std::chrono::nanoseconds>(left));
      }
      done = handle.wait_for(slice);
    }
    if (done) break;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (limited && Clock::now() >= deadline) {
      PyErr_SetString(PyExc_TimeoutError, "the run is not done within the timeout");
      throw py::error_already_set();
    }
  }
  try {
    py::gil_scoped_release release;
    return handle.wait();
  } catch (const Error&) {
    rethrow_run_error();
  }
}

// Worker.run: submitted and waited for in slices (wait_interruptibly), so that Ctrl-C raises
// KeyboardInterrupt while the chip runs; the interrupted run goes on, as a dropped handle's does.
// A run placed by hand (pipeline_slot / arena_bank, which submit chooses itself) runs
// synchronously, as Worker::run does with nothing admitted.
RunReport run_once(PyWorker& w, int32_t callable_id, const TaskArgs& args, const RunConfig& cfg) {
  w.check_runtime(callable_id, cfg.config);
  orchestration_interrupted();  // forget an interrupt nobody collected
  if (cfg.placed) {
    try {
      py::gil_scoped_release release;
      return w.get().run(callable_id, args, cfg.config);
    } catch (const Error&) {
      rethrow_run_error();
    }
  }
  RunHandle handle;
  {
    py::gil_scoped_release release;
    handle = w.get().run_async(callable_id, args, cfg.config);
  }
  // Interrupted runs that are done by now are forgotten (after submit, which names a refusal
  // first: AlreadyClosed, InheritedWorker).
  std::erase_if(w.interrupted, [](const RunHandle& h) { return h.ready(); });
  try {
    return wait_interruptibly(handle, py::none());
  } catch (py::error_already_set&) {
    // A signal handler raised (KeyboardInterrupt) with the run not done: kept, not waited for.
    if (!handle.ready()) w.interrupted.push_back(std::move(handle));
    throw;
  }
}

py::array download(PyWorker& w, const Tensor& tensor, py::object out) {
  const py::dtype dt = numpy_dtype(tensor.dtype);
  std::vector<py::ssize_t> shape(tensor.shape.begin(), tensor.shape.begin() + tensor.ndim);
  py::array result;
  if (out.is_none()) {
    result = py::array(dt, shape);
  } else {
    if (!py::isinstance<py::array>(out)) throw_argument("download: out must be a numpy array");
    result = py::reinterpret_borrow<py::array>(out);
    require_native_order(result, "download");
    if (!result.dtype().is(dt) && !result.dtype().equal(dt)) {
      throw_argument("download: out has dtype " +
                     py::str(static_cast<py::handle>(result.dtype())).cast<std::string>() +
                     ", the tensor " + std::string(dtype_name(tensor.dtype)) + " (numpy " +
                     py::str(static_cast<py::handle>(dt)).cast<std::string>() + ")");
    }
    std::vector<py::ssize_t> got(result.shape(), result.shape() + result.ndim());
    if (got != shape) {
      throw_argument("download: out has shape " +
                     py::str(py::tuple(py::cast(got))).cast<std::string>() + ", the tensor " +
                     py::str(py::tuple(py::cast(shape))).cast<std::string>());
    }
    if (!(result.flags() & py::array::c_style) || !result.writeable()) {
      throw_argument("download: out must be a writable C-contiguous array");
    }
  }
  uint64_t lo = 0, hi = 0;
  tensor.byte_extent(&lo, &hi);
  if (hi <= lo) return result;
  const auto elem = static_cast<py::ssize_t>(tensor.element_bytes());
  if (tensor.is_contiguous()) {
    void* dst = result.mutable_data();
    py::gil_scoped_release release;
    w.get().copy_from(dst, tensor.buffer, hi - lo, lo);
    return result;
  }
  // The covering byte range, then a strided gather on the host.
  py::array staging = owned_bytes_array(hi - lo);
  {
    void* dst = staging.mutable_data();
    py::gil_scoped_release release;
    w.get().copy_from(dst, tensor.buffer, hi - lo, lo);
  }
  std::vector<py::ssize_t> strides;
  for (uint32_t i = 0; i < tensor.ndim; ++i) {
    strides.push_back(static_cast<py::ssize_t>(tensor.strides[i]) * elem);
  }
  const auto first = static_cast<py::ssize_t>(tensor.start_offset * tensor.element_bytes() - lo);
  py::array view(dt, shape, strides, static_cast<const uint8_t*>(staging.data()) + first, staging);
  py::module_::import("numpy").attr("copyto")(result, view);
  return result;
}

}  // namespace

void bind_worker(py::module_& m) {
  py::class_<RunReport>(m, "RunReport", "What one run did and how long each phase took.")
      .def_readonly("task_count", &RunReport::task_count)
      .def_readonly("internal_task_count", &RunReport::internal_task_count)
      .def_readonly("host_prepare_ns", &RunReport::host_prepare_ns)
      .def_readonly("device_wall_ns", &RunReport::device_wall_ns)
      .def_readonly("host_total_ns", &RunReport::host_total_ns)
      .def_readonly("aicpu_threads", &RunReport::aicpu_threads)
      .def_readonly("cores", &RunReport::cores)
      .def_readonly("serial", &RunReport::serial)
      .def_readonly("kernel_ns", &RunReport::kernel_ns)
      .def_readonly("kernel_time_measured", &RunReport::kernel_time_measured)
      .def_readonly("output_heap_committed_bytes", &RunReport::output_heap_committed_bytes)
      .def_readonly("diagnostics_dir", &RunReport::diagnostics_dir)
      .def_readonly("diagnostics_records_dropped", &RunReport::diagnostics_records_dropped)
      .def_property_readonly("phases", &phases_of)
      .def_property_readonly("rings",
                             [](const RunReport& r) {
                               py::dict d;
                               d["task_window"] = py::cast(r.rings.task_window);
                               d["heap_bytes"] = py::cast(r.rings.heap_bytes);
                               d["dep_pool"] = py::cast(r.rings.dep_pool);
                               return d;
                             })
      .def("__repr__", [](const RunReport& r) {
        return "RunReport(task_count=" + std::to_string(r.task_count) +
               ", host_total_ns=" + std::to_string(r.host_total_ns) +
               ", device_wall_ns=" + std::to_string(r.device_wall_ns) + ")";
      });

  py::class_<GraphExport>(m, "GraphExport",
                          "The task graph a callable's orchestration builds (Worker.export_graph).")
      .def_property_readonly("tasks",
                             [](const GraphExport& g) {
                               py::list out;
                               for (const ExportedTask& t : g.tasks) out.append(task_dict(g, t));
                               return out;
                             })
      .def_property_readonly("task_count", [](const GraphExport& g) { return g.tasks.size(); })
      .def_property_readonly("edge_count", &GraphExport::edge_count)
      .def_readonly("accessed_tensor_data", &GraphExport::accessed_tensor_data)
      .def_property_readonly("shape",
                             [](const GraphExport& g) {
                               const GraphShape s = g.shape();
                               py::dict d;
                               d["tasks"] = s.tasks;
                               d["kernel_tasks"] = s.kernel_tasks;
                               d["dependency_only_tasks"] = s.dependency_only_tasks;
                               d["scope_fences"] = s.scope_fences;
                               d["edges"] = s.edges;
                               d["sources"] = s.sources;
                               d["sinks"] = s.sinks;
                               d["depth"] = s.depth;
                               d["max_width"] = s.max_width;
                               return d;
                             })
      .def("to_dot", &GraphExport::to_dot)
      .def("__len__", [](const GraphExport& g) { return g.tasks.size(); })
      .def("__repr__", [](const GraphExport& g) {
        return "GraphExport(tasks=" + std::to_string(g.tasks.size()) +
               ", edges=" + std::to_string(g.edge_count()) + ")";
      });

  py::class_<PyRunHandle>(m, "RunHandle",
                          "A submitted run (Worker.submit), to be waited for. wait() returns its "
                          "RunReport or raises its error: CancelledError when it touches memory "
                          "an earlier failed run wrote (naming that run's sequence and error), "
                          "DeviceError after a device fault. wait() releases the GIL and lets "
                          "signal handlers run between slices: Ctrl-C raises KeyboardInterrupt "
                          "while the run goes on (the handle stays valid). sequence: its number on "
                          "its Worker (run() calls take numbers too).")
      .def(
          "wait",
          [](PyRunHandle& h, py::object timeout) {
            if (!h.handle.valid()) return h.handle.wait();  // throws InvalidArgument
            return wait_interruptibly(h.handle, timeout);
          },
          py::arg("timeout") = py::none())
      .def("ready", [](const PyRunHandle& h) { return h.handle.ready(); })
      .def_property_readonly("sequence", [](const PyRunHandle& h) { return h.handle.sequence(); })
      .def_property_readonly("valid", [](const PyRunHandle& h) { return h.handle.valid(); })
      .def("__repr__", [](const PyRunHandle& h) {
        if (!h.handle.valid()) return std::string("RunHandle(empty)");
        return "RunHandle(sequence=" + std::to_string(h.handle.sequence()) +
               (h.handle.ready() ? ", done)" : ", pending)");
      });

  py::class_<PyWorker>(m, "Worker",
                       "The host-side entry point to one device; initialised by the constructor, "
                       "closed by close() or at the end of a with block.\n\n"
                       "Arrays in (upload, copy_to: numpy arrays, the buffer protocol, DLPack) "
                       "are copied in this host's byte order: data of the other order is "
                       "converted (a copy). An out= array (copy_from, download) must be of "
                       "native byte order (ArgumentError otherwise).\n\n"
                       "A Worker belongs to the process that created it: after os.fork() every "
                       "call on it (and on its RunHandles) in the child raises StateError "
                       "InheritedWorker, and the child's exit neither waits for its runs nor "
                       "touches the parent's device; create a new Worker in the child.")
      .def(py::init([](py::args args, py::kwargs kwargs) {
             auto w = std::make_unique<PyWorker>();
             w->options = parse_worker_options(args, kwargs);
             {
               py::gil_scoped_release release;
               w->worker->init(w->options);
             }
             return w;
           }),
           kWorkerInitDoc)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyWorker& w, py::handle, py::handle, py::handle) {
             w.close();
             return false;
           })
      .def("close", &PyWorker::close,
           "close(): finishes every admitted run (their RunHandles then hold their results), "
           "waits for pending diagnostics writes (a failed one is only logged: call "
           "flush_diagnostics() first to have it raised) and releases the device. Every later "
           "call raises StateError AlreadyClosed; the end of a with block calls it.")
      .def(
          "register_callable",
          [](PyWorker& w, int32_t callable_id, py::object callable) {
            bool python = false;
            std::vector<uint8_t> bytes;
            std::span<const uint8_t> container;
            if (py::isinstance<PyCallable>(callable)) {
              const PyCallable& c = callable.cast<const PyCallable&>();
              python = c.python_orchestration();
              container = {reinterpret_cast<const uint8_t*>(c.container.data()),
                           c.container.size()};
            } else {
              bytes = read_object_bytes(callable);
              container = bytes;
              // The bytes of a Callable with a Python orchestration function: registered as that
              // Callable (kept alive, refused on tensormap_ringbuffer like it).
              py::object origin =
                  python_orchestration_callable(std::string(bytes.begin(), bytes.end()));
              if (!origin.is_none()) {
                python = true;
                callable = origin;
              }
            }
            {
              py::gil_scoped_release release;
              w.get().register_callable(callable_id, container);
            }
            w.registered[callable_id] = callable;
            w.python_orchestration[callable_id] = python;
          },
          py::arg("callable_id"), py::arg("callable"),
          "register_callable(callable_id, callable): registers a Callable (CallableBuilder's "
          "build()), or the bytes or path of a built container, under an id in "
          "[0, chiprt.MAX_CALLABLE_IDS); run() and submit() name it by that id. An id in use "
          "raises StateError DuplicateCallable; a chip object that does not load (a kernel "
          "without visibility(\"default\"), for one) raises LoadFailed.")
      .def(
          "unregister_callable",
          [](PyWorker& w, int32_t callable_id) {
            {
              py::gil_scoped_release release;
              w.get().unregister_callable(callable_id);
            }
            w.registered.erase(callable_id);
            w.python_orchestration.erase(callable_id);
          },
          py::arg("callable_id"),
          "unregister_callable(callable_id): frees the id (StateError UnknownCallable when "
          "nothing is registered under it).")
      .def(
          "has_callable",
          [](PyWorker& w, int32_t callable_id) {
            py::gil_scoped_release release;
            return w.get().has_callable(callable_id);
          },
          py::arg("callable_id"),
          "has_callable(callable_id): whether a callable is registered under the id (False for "
          "an id out of range).")
      .def(
          "malloc",
          [](PyWorker& w, uint64_t nbytes) {
            py::gil_scoped_release release;
            return w.get().malloc(nbytes);
          },
          py::arg("nbytes"),
          "malloc(nbytes): a new device Buffer of nbytes (at least 1) bytes; "
          "OutOfDeviceMemory when the device cannot hold it (chiprt.Worker(memory_bytes=...) "
          "sets the capacity). upload(array) allocates and copies in one call.")
      .def(
          "free",
          [](PyWorker& w, DeviceBuffer buffer) {
            py::gil_scoped_release release;
            w.get().free(buffer);
          },
          py::arg("buffer"),
          "free(buffer): returns a Buffer from malloc or upload to the device; the buffer must "
          "not be used afterwards.")
      .def(
          "copy_to",
          [](PyWorker& w, DeviceBuffer buffer, py::handle data, uint64_t offset) {
            const py::array array = host_array(data);
            const auto bytes = static_cast<uint64_t>(array.nbytes());
            check_range(buffer, offset, bytes, "copy_to");
            const void* src = array.data();
            py::gil_scoped_release release;
            w.get().copy_to(buffer, src, bytes, offset);
          },
          "copy_to(buffer, data, offset=0): copies the bytes of `data` (a numpy array or anything "
          "numpy takes, DLPack included) into `buffer` at `offset`; data of non-native byte "
          "order is converted to this host's order first.",
          py::arg("buffer"), py::arg("data"), py::arg("offset") = 0)
      .def(
          "copy_from",
          [](PyWorker& w, DeviceBuffer buffer, py::object out, py::object dtype, py::object shape,
             uint64_t offset) {
            py::array result;
            if (!out.is_none()) {
              if (!py::isinstance<py::array>(out)) {
                throw_argument("copy_from: out must be a numpy array");
              }
              result = py::reinterpret_borrow<py::array>(out);
              if (!(result.flags() & py::array::c_style) || !result.writeable()) {
                throw_argument("copy_from: out must be a writable C-contiguous array");
              }
              if (result.dtype().attr("hasobject").cast<bool>()) {
                throw_argument("copy_from: out has dtype " + dtype_text(result.dtype()) +
                               ", which holds Python objects; pass a numeric array");
              }
              require_native_order(result, "copy_from");
            } else {
              const py::dtype dt =
                  dtype.is_none() ? py::dtype("uint8") : numpy_dtype(to_dtype(dtype));
              std::vector<py::ssize_t> dims;
              if (shape.is_none()) {
                if (offset > buffer.size) throw_argument("copy_from: offset is past the buffer");
                dims.push_back(static_cast<py::ssize_t>((buffer.size - offset) /
                                                        static_cast<uint64_t>(dt.itemsize())));
              } else {
                uint64_t bytes = static_cast<uint64_t>(dt.itemsize());
                for (uint64_t d : to_u64_list(shape, "shape")) {
                  // The element count checked against the buffer before numpy allocates it.
                  bytes = (d != 0 && bytes > buffer.size / d) ? buffer.size + 1 : bytes * d;
                  dims.push_back(static_cast<py::ssize_t>(d));
                }
                if (bytes > buffer.size) {
                  throw_argument("copy_from: shape " + py::str(shape).cast<std::string>() + " of " +
                                 py::str(static_cast<py::handle>(dt)).cast<std::string>() +
                                 " does not fit the buffer of " + std::to_string(buffer.size) +
                                 " bytes");
                }
              }
              result = py::array(dt, dims);
            }
            const auto bytes = static_cast<uint64_t>(result.nbytes());
            check_range(buffer, offset, bytes, "copy_from");
            void* dst = result.mutable_data();
            {
              py::gil_scoped_release release;
              w.get().copy_from(dst, buffer, bytes, offset);
            }
            return result;
          },
          "copy_from(buffer, out=None, dtype=None, shape=None, offset=0): the buffer's bytes from "
          "`offset` as a new array of `dtype` (uint8 by default) and `shape` (all that fits by "
          "default), or into `out` (a writable C-contiguous numeric array of native byte order; "
          "ArgumentError otherwise).",
          py::arg("buffer"), py::arg("out") = py::none(), py::arg("dtype") = py::none(),
          py::arg("shape") = py::none(), py::arg("offset") = 0)
      .def(
          "memset",
          [](PyWorker& w, DeviceBuffer buffer, int value, py::object nbytes) {
            const uint64_t bytes = nbytes.is_none() ? buffer.size : non_negative(nbytes, "nbytes");
            check_range(buffer, 0, bytes, "memset");
            py::gil_scoped_release release;
            w.get().memset(buffer, value, bytes);
          },
          py::arg("buffer"), py::arg("value"), py::arg("nbytes") = py::none(),
          "memset(buffer, value, nbytes=None): sets the first nbytes bytes of the buffer (all "
          "of it by default) to value.")
      .def(
          "upload",
          [](PyWorker& w, py::handle data, py::object dtype) {
            // Converted to `dtype` below (an object array of numbers converts); without one,
            // to_dtype refuses what has no chiprt data type.
            py::array array = host_array(data, /*numeric=*/false);
            DataType target;
            if (dtype.is_none()) {
              target = to_dtype(array.dtype());
            } else {
              target = to_dtype(dtype);
              const py::dtype want = numpy_dtype(target);
              if (!array.dtype().equal(want)) {
                if (target == DataType::BF16 && array.dtype().kind() == 'f') {
                  array = py::module_::import("chiprt._dtypes").attr("float32_to_bf16")(array);
                } else {
                  array = py::module_::import("numpy").attr("ascontiguousarray")(array, want);
                }
              }
            }
            std::vector<uint64_t> shape(array.shape(), array.shape() + array.ndim());
            if (shape.empty()) shape.push_back(1);
            if (shape.size() > static_cast<std::size_t>(kMaxTensorDims)) {
              throw_argument("upload: an array of " + std::to_string(shape.size()) +
                             " dimensions; a Tensor has at most " + std::to_string(kMaxTensorDims));
            }
            const auto bytes = static_cast<uint64_t>(array.nbytes());
            const void* src = array.data();
            Tensor tensor;
            {
              py::gil_scoped_release release;
              const DeviceBuffer buffer = w.get().malloc(bytes == 0 ? 1 : bytes);
              try {
                tensor = Tensor::make(buffer, shape, target);
                if (bytes > 0) w.get().copy_to(buffer, src, bytes);
              } catch (...) {
                w.get().free(buffer);
                throw;
              }
            }
            return tensor;
          },
          "upload(array, dtype=None): a new device buffer holding `array` (numpy, the buffer "
          "protocol or DLPack) as a Tensor of its shape and dtype (or converted to `dtype`); "
          "data of non-native byte order is converted to this host's order.",
          py::arg("array"), py::arg("dtype") = py::none())
      .def("download", &download,
           "download(tensor, out=None): the tensor's elements (strides honoured) as a new array, "
           "or into `out` (the tensor's shape and dtype, writable, C-contiguous, native byte "
           "order; ArgumentError otherwise).",
           py::arg("tensor"), py::arg("out") = py::none())
      .def(
          "run",
          [](PyWorker& w, int32_t callable_id, const TaskArgs& args, py::kwargs kwargs) {
            RunConfig cfg;
            if (kwargs.size() > 0) parse_config(kwargs, &cfg);
            return run_once(w, callable_id, args, cfg);
          },
          "run(callable_id, args, *, runtime=None, serial=False, aicpu_thread_num=0, "
          "cluster_count=0, output_heap_bytes=0, max_tasks=0, user_data=None, "
          "replay_graph=False, replay_key=0, measure_kernel_time=False, rings=None, "
          "diagnostics=None, diagnostics_dir=None, background_write=False, pipeline_slot=None, "
          "arena_bank=None) -> RunReport\n\n"
          "Runs the callable and waits for it; the keywords are CallConfig's fields (0 or None: "
          "the default). "
          "runtime: 'host_build_graph' or 'tensormap_ringbuffer' (default: the Worker's). "
          "rings: {'task_window': ..., 'heap_bytes': ..., 'dep_pool': ...}, each an int, a list "
          "of up to 4 (one per scope depth) or the text form '1024,256'. diagnostics: 'all' or "
          "a `chiprt run --diag` list such as 'swimlane=2,tasks'; diagnostics_dir: where the "
          "run-NNNN directories go. user_data: bytes (at most 64 KiB) the orchestration reads "
          "with orch.user_data(). An unknown keyword raises ArgumentError naming it. The wait "
          "releases the GIL and lets signal handlers run: "
          "Ctrl-C raises KeyboardInterrupt at once while the run goes on in the background, "
          "like a dropped RunHandle's (runs_in_flight counts it, close() finishes it, a later "
          "run queues behind it). The run executes on the Worker's pipeline thread, as a "
          "submitted run does; given pipeline_slot or arena_bank it runs on the calling thread "
          "instead, and Ctrl-C is then seen only once it is done.",
          py::arg("callable_id"), py::arg("args"))
      .def(
          "submit",
          [](PyWorker& w, int32_t callable_id, const TaskArgs& args, py::kwargs kwargs) {
            RunConfig cfg;
            if (kwargs.size() > 0) parse_config(kwargs, &cfg);
            w.check_runtime(callable_id, cfg.config);
            RunHandle handle;
            {
              py::gil_scoped_release release;
              handle = w.get().submit(callable_id, args, cfg.config);
            }
            return std::make_unique<PyRunHandle>(std::move(handle));
          },
          py::arg("callable_id"), py::arg("args"),
          "submit(callable_id, args, **config) -> RunHandle\n\n"
          "Admits a run and returns its RunHandle at once (waits while two are admitted); run "
          "keywords as for run(). A failed submitted run cancels exactly the later runs (submit or "
          "run) touching memory it wrote or was writing (its inout and output_existing buffers): "
          "they raise CancelledError naming it, until the host rewrites that memory (copy_to, "
          "memset) or frees it; runs sharing no buffer with it run normally.")
      .def(
          "try_submit",
          [](PyWorker& w, int32_t callable_id, const TaskArgs& args,
             py::kwargs kwargs) -> py::object {
            RunConfig cfg;
            if (kwargs.size() > 0) parse_config(kwargs, &cfg);
            w.check_runtime(callable_id, cfg.config);
            RunHandle handle;
            bool admitted = false;
            {
              py::gil_scoped_release release;
              admitted = w.get().try_submit(callable_id, args, cfg.config, &handle);
            }
            if (!admitted) return py::none();
            return py::cast(std::make_unique<PyRunHandle>(std::move(handle)));
          },
          py::arg("callable_id"), py::arg("args"),
          "try_submit(callable_id, args, **config) -> RunHandle or None\n\n"
          "submit() that does not wait: None when two runs are already admitted. The keywords "
          "are run()'s.")
      .def(
          "export_graph",
          [](PyWorker& w, int32_t callable_id, const TaskArgs& args, py::kwargs kwargs) {
            RunConfig cfg;
            if (kwargs.size() > 0) parse_config(kwargs, &cfg);
            py::gil_scoped_release release;
            return w.get().export_graph(callable_id, args, cfg.config);
          },
          py::arg("callable_id"), py::arg("args"),
          "export_graph(callable_id, args, **config) -> GraphExport\n\n"
          "The task graph a host_build_graph run of this call would launch, without launching "
          "it: tasks, kernels, resolved arguments, edges with their kinds; to_dot() for "
          "Graphviz. The keywords are run()'s.")
      .def(
          "reset",
          [](PyWorker& w) {
            py::gil_scoped_release release;
            w.get().reset();
          },
          "reset(): replaces the device with a fresh one, between runs; needed after a device "
          "fault (DeviceError: KernelCrashed, OpExecuteTimeout, DeviceFaulted). Callables stay "
          "registered and the Worker's options are kept; device buffers are lost.")
      .def(
          "flush_diagnostics",
          [](PyWorker& w) {
            py::gil_scoped_release release;
            w.get().flush_diagnostics();
          },
          "flush_diagnostics(): waits until the diagnostics directories of earlier runs with "
          "background_write=True are written; raises DiagnosticsError naming each directory "
          "whose write failed, with the reason.")
      .def_property_readonly("initialized",
                             [](PyWorker& w) { return !w.closed && w.get().initialized(); })
      .def_property_readonly("closed", [](PyWorker& w) { return w.closed; })
      .def_property_readonly("device_bytes_in_use",
                             [](PyWorker& w) {
                               py::gil_scoped_release release;
                               return w.get().device_bytes_in_use();
                             })
      .def_property_readonly("runs_in_flight",
                             [](PyWorker& w) {
                               py::gil_scoped_release release;
                               return w.get().runs_in_flight();
                             })
      .def_property_readonly("reset_count",
                             [](PyWorker& w) {
                               py::gil_scoped_release release;
                               return w.get().reset_count();
                             })
      .def_property_readonly(
          "runtime",
          [](PyWorker& w) { return enum_member("RuntimeVariant", int(w.options.runtime)); })
      .def(
          "registered_callables",
          [](PyWorker& w) {
            py::list ids;
            for (const auto& entry : w.registered) ids.append(entry.first);
            return ids;
          },
          "registered_callables(): the ids registered on this Worker, ascending.");

  m.def(
      "_close_all_workers",
      [] {
        const std::vector<PyWorker*> live(g_live_workers.begin(), g_live_workers.end());
        for (PyWorker* w : live) {
          if (g_live_workers.count(w) == 0 || w->closed) continue;
          try {
            w->close();
          } catch (const Error&) {
            // At exit nothing can act on it; the Worker's destructor releases what is left.
          }
        }
      },
      "Closes every live Worker (registered with atexit by the package).");
  m.def(
      "_native_run_loop",
      [](PyWorker& w, int32_t callable_id, const TaskArgs& args, int64_t count, py::kwargs kwargs) {
        RunConfig cfg;
        if (kwargs.size() > 0) parse_config(kwargs, &cfg);
        w.check_runtime(callable_id, cfg.config);
        if (count < 0) throw_argument("_native_run_loop: count must be >= 0");
        std::vector<int64_t> wall_ns(static_cast<std::size_t>(count));
        {
          py::gil_scoped_release release;
          for (int64_t i = 0; i < count; ++i) {
            const auto start = std::chrono::steady_clock::now();
            w.get().run(callable_id, args, cfg.config);
            const auto end = std::chrono::steady_clock::now();
            wall_ns[static_cast<std::size_t>(i)] =
                std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
          }
        }
        return wall_ns;
      },
      py::arg("worker"), py::arg("callable_id"), py::arg("args"), py::arg("count"),
      "Runs Worker::run `count` times in a C++ loop (GIL released); each run's wall time in ns "
      "as measured around Worker::run.");
}

}  // namespace chiprt::python
