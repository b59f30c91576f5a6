#include "support.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "chiprt/status.h"

#ifndef CHIPRT_CHIP_OBJECT_DIR
#error "CHIPRT_CHIP_OBJECT_DIR must name the directory chip objects are built into"
#endif
#ifndef CHIPRT_INSTALLED_CHIP_OBJECT_DIR
#error "CHIPRT_INSTALLED_CHIP_OBJECT_DIR must name the installed chip objects (prefix-relative)"
#endif

namespace chiprt::examples {

std::string chip_object_dir() {
  const char* from_env = std::getenv(kChipObjectDirEnv);
  if (from_env != nullptr && from_env[0] != '\0') return from_env;
  // An installed program (P/bin/chiprt) reads the chip objects installed beside the library
  // (P/lib/chiprt/chip_objects); a program in the build tree has none there and reads the build's.
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed =
        exe.parent_path() / ".." / CHIPRT_INSTALLED_CHIP_OBJECT_DIR;
    if (std::filesystem::is_directory(installed, error)) return installed.lexically_normal();
  }
  return CHIPRT_CHIP_OBJECT_DIR;
}

std::vector<uint8_t> read_chip_object(std::string_view target) {
  const std::string dir = chip_object_dir();
  const std::string path = dir + "/" + std::string(target) + ".so";
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw Error(StatusCode::LoadFailed,
                "chip object '" + path + "' cannot be opened (chip object directory '" + dir +
                    "'); build the examples (target chiprt_examples) or point " +
                    kChipObjectDirEnv + " at the directory holding " + std::string(target) + ".so");
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  if (file.bad() || bytes.empty()) {
    throw Error(StatusCode::LoadFailed, "chip object '" + path + "' could not be read (" +
                                            std::to_string(bytes.size()) +
                                            " bytes); rebuild it or fix " + kChipObjectDirEnv);
  }
  return bytes;
}

DeviceAllocation::DeviceAllocation(Worker& worker, uint64_t bytes)
    : worker_(worker), buffer_(worker.malloc(bytes)) {}

DeviceAllocation::~DeviceAllocation() {
  if (buffer_.empty()) return;
  try {
    worker_.free(buffer_);
  } catch (const std::exception&) {
    // Only reached while another error unwinds the run; that error is the one to report.
  }
}

void DeviceAllocation::release() {
  const DeviceBuffer buffer = buffer_;
  buffer_ = {};
  if (!buffer.empty()) worker_.free(buffer);
}

RegisteredCallable::RegisteredCallable(Worker& worker, std::span<const uint8_t> container)
    : worker_(worker) {
  int32_t id = 0;
  while (id < kMaxCallableIds && worker.has_callable(id)) ++id;
  if (id == kMaxCallableIds) {
    throw Error(StatusCode::CapacityExceeded,
                "every callable id in [0, " + std::to_string(kMaxCallableIds) +
                    ") is registered; unregister a callable before running an example");
  }
  worker.register_callable(id, container);
  id_ = id;
}

RegisteredCallable::~RegisteredCallable() {
  if (id_ < 0) return;
  try {
    worker_.unregister_callable(id_);
  } catch (const std::exception&) {
    // Only reached while another error unwinds the run; that error is the one to report.
  }
}

void RegisteredCallable::release() {
  const int32_t id = id_;
  id_ = -1;
  if (id >= 0) worker_.unregister_callable(id);
}

Comparison compare_results(std::span<const float> got, std::span<const double> want,
                           double tolerance, uint64_t row_width) {
  Comparison result;
  if (got.size() != want.size()) {
    result.mismatches = 1;
    result.max_abs_error = INFINITY;
    result.first_mismatch = "result has " + std::to_string(got.size()) +
                            " elements but the reference has " + std::to_string(want.size());
    return result;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(static_cast<double>(got[i]) - want[i]);
    // A NaN error must fail and must show up as the largest error.
    const double counted = std::isnan(error) ? INFINITY : error;
    if (counted > result.max_abs_error) result.max_abs_error = counted;
    if (counted <= tolerance) continue;
    if (result.mismatches++ == 0) {
      std::ostringstream text;
      text.precision(9);
      text << "element " << i;
      if (row_width != 0) text << " (row " << i / row_width << ", col " << i % row_width << ")";
      text << ": got " << got[i] << ", expected " << want[i] << ", |error| " << error
           << " > tolerance " << tolerance;
      result.first_mismatch = text.str();
    }
  }
  return result;
}

Outcome make_outcome(const Comparison& comparison, double tolerance, const RunReport& report,
                     uint64_t kernel_tasks) {
  Outcome outcome;
  outcome.max_abs_error = comparison.max_abs_error;
  outcome.tolerance = tolerance;
  outcome.task_count = report.task_count;
  outcome.kernel_tasks = kernel_tasks;
  outcome.report = report;
  const bool tasks_match = report.task_count >= kernel_tasks;
  outcome.passed = comparison.mismatches == 0 && tasks_match;
  std::ostringstream text;
  if (comparison.mismatches != 0) {
    text << comparison.mismatches
         << " element(s) outside the tolerance; first: " << comparison.first_mismatch;
  }
  if (!tasks_match) {
    if (comparison.mismatches != 0) text << "; ";
    text << "the run executed " << report.task_count << " tasks, fewer than the " << kernel_tasks
         << " kernel tasks the orchestration submits";
  }
  if (outcome.passed) text << "all elements within tolerance " << tolerance;
  outcome.message = text.str();
  return outcome;
}

}  // namespace chiprt::examples
