// libFuzzer target for parse_callable: any input must be rejected with a message or parse into a
// callable whose every promise holds (objects inside the input and matching their checksums,
// counts within limits, unique func_ids, kernel symbols and names that follow their rules).
// Crashes, sanitizer reports and broken promises all abort the fuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "chiprt/callable.h"
#include "common/callable_format.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void check_object(const chiprt::ParsedObject& o, std::span<const uint8_t> input) {
  const uint8_t* lo = input.data();
  const uint8_t* hi = input.data() + input.size();
  require(o.bytes.data() >= lo && o.bytes.data() + o.bytes.size() <= hi);
  require((o.bytes.data() - lo) % chiprt::kObjectAlign == 0);
  if (o.kind == chiprt::ObjectKind::InProcess) {
    require(o.bytes.size() == 8 && o.function_addr() != 0);
  } else {
    require(o.kind == chiprt::ObjectKind::SharedObject);
    require(!o.bytes.empty() && o.bytes.size() <= chiprt::kMaxObjectBytes);
  }
  require(o.checksum == chiprt::content_hash64(o.bytes));
  // Touch every byte so ASan would flag a span that escaped the input.
  volatile uint8_t sink = 0;
  for (uint8_t b : o.bytes) sink = sink ^ b;
  (void)sink;
}

void check_signature(const chiprt::ArgSignature& s) {
  require(s.tensor_count <= chiprt::kMaxTaskTensors && s.scalar_count <= chiprt::kMaxTaskScalars);
  for (int i = 0; i < s.tensor_count; ++i) {
    require(static_cast<int>(s.tags[i]) < chiprt::kArgTagCount);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  chiprt::ParsedCallable parsed;
  const chiprt::Status status = chiprt::parse_callable(input, &parsed);
  if (!status.is_ok()) {
    require(status.code() == chiprt::StatusCode::MalformedCallable ||
            status.code() == chiprt::StatusCode::EmptyCallable);
    require(!status.message().empty());
    return 0;
  }
  check_object(parsed.orchestration, input);
  check_signature(parsed.orchestration_signature);
  require(!parsed.kernels.empty() && parsed.kernels.size() <= chiprt::kMaxKernelsPerCallable);
  bool seen[chiprt::kMaxFuncId] = {};
  for (const chiprt::ParsedKernel& k : parsed.kernels) {
    require(k.func_id >= 0 && k.func_id < chiprt::kMaxFuncId && !seen[k.func_id]);
    seen[k.func_id] = true;
    require(static_cast<int>(k.core) < chiprt::kCoreTypeCount);
    check_object(k.object, input);
    check_signature(k.signature);
    // A shared-object kernel has a valid symbol and name; an in-process one no symbol.
    if (k.object.kind == chiprt::ObjectKind::SharedObject) {
      require(chiprt::kernel_symbol_problem(k.symbol) == nullptr);
      require(chiprt::kernel_name_problem(k.name) == nullptr);
    } else {
      require(k.symbol.empty() &&
              (k.name.empty() || chiprt::kernel_name_problem(k.name) == nullptr));
    }
  }
  require(parsed.content_hash == chiprt::content_hash64(input));
  return 0;
}
