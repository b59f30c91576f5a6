// Building blocks shared by the example workloads: reading chip objects, scoped device buffers
// and callable registrations, and comparison against a reference.
//
// DeviceAllocation and RegisteredCallable own one resource of a Worker each and must not outlive
// it; like the Worker they are used from one thread at a time. release() frees the resource and
// reports errors by throwing; the destructor frees what release() did not (on the exception path)
// and swallows errors there, because the run is already failing with the first one.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/task_args.h"
#include "example.h"

namespace chiprt::examples {

// Environment variable that overrides the directory chip objects are read from.
inline constexpr char kChipObjectDirEnv[] = "CHIPRT_CHIP_OBJECT_DIR";

// $CHIPRT_CHIP_OBJECT_DIR when set and non-empty; else, for an installed program,
// <prefix>/lib/chiprt/chip_objects (found from the executable's place); else the build's
// chip_objects.
std::string chip_object_dir();
// The bytes of `<chip_object_dir()>/<target>.so`. Throws Error(LoadFailed) naming the path and
// the environment variable when the file is missing or unreadable.
std::vector<uint8_t> read_chip_object(std::string_view target);

class DeviceAllocation {
 public:
  DeviceAllocation(Worker& worker, uint64_t bytes);
  ~DeviceAllocation();
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  const DeviceBuffer& buffer() const noexcept { return buffer_; }
  void release();

 private:
  Worker& worker_;
  DeviceBuffer buffer_;
};

// Registers a container under the lowest callable id the Worker has free. One registration runs on
// either runtime variant (CallConfig::runtime picks it per run).
class RegisteredCallable {
 public:
  RegisteredCallable(Worker& worker, std::span<const uint8_t> container);
  ~RegisteredCallable();
  RegisteredCallable(const RegisteredCallable&) = delete;
  RegisteredCallable& operator=(const RegisteredCallable&) = delete;

  int32_t id() const noexcept { return id_; }
  void release();

 private:
  Worker& worker_;
  int32_t id_ = -1;
};

// Compares device results with a reference element by element. `row_width` (0 for 1-D data)
// only shapes the message: "element 70 (row 1, col 6)".
struct Comparison {
  double max_abs_error = 0;
  uint64_t mismatches = 0;  // elements with error > tolerance (NaN counts)
  std::string first_mismatch;
};
Comparison compare_results(std::span<const float> got, std::span<const double> want,
                           double tolerance, uint64_t row_width = 0);

// The Outcome of a finished run: passes when nothing mismatched and the run executed at least
// the `kernel_tasks` kernel tasks the orchestration submitted.
Outcome make_outcome(const Comparison& comparison, double tolerance, const RunReport& report,
                     uint64_t kernel_tasks);

}  // namespace chiprt::examples
