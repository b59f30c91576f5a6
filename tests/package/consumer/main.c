/* The consumer's program in C: the same callable as main.cpp, built and run through the C API
 * (chiprt/chiprt_c.h) of an installed libchiprt.so, on both runtime variants, checked against a
 * reference computed here. Prints one PASS or FAIL line per variant. */
#include <chiprt/chiprt_c.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "protocol_c.h"

enum { kLength = 4096, kChunk = 512 };

static int failed(const char* what) {
  printf("FAIL consumer_c: %s: [%s] %s (hint: %s)\n", what, chiprt_last_error_name(),
         chiprt_last_error_message(), chiprt_last_error_hint());
  return 0;
}

static int run_variant(chiprt_worker_t* worker, chiprt_runtime_t runtime) {
  static float x[kLength], y[kLength], got[kLength];
  double want[kLength];
  const float alpha = 0.5f;
  for (int i = 0; i < kLength; ++i) {
    x[i] = (float)(i % 97) * 0.125f - 3.0f;
    y[i] = (float)(i % 13);
    want[i] = y[i] + alpha * (x[i] * x[i]);
  }
  chiprt_buffer_t dev_x, dev_y;
  if (chiprt_worker_malloc(worker, sizeof x, &dev_x) != CHIPRT_OK) return failed("malloc x");
  if (chiprt_worker_malloc(worker, sizeof y, &dev_y) != CHIPRT_OK) return failed("malloc y");
  if (chiprt_worker_copy_to(worker, dev_x, x, sizeof x, 0) != CHIPRT_OK) return failed("copy x");
  if (chiprt_worker_copy_to(worker, dev_y, y, sizeof y, 0) != CHIPRT_OK) return failed("copy y");

  const uint64_t shape[1] = {kLength};
  chiprt_tensor_t tx, ty;
  chiprt_args_t* args = NULL;
  if (chiprt_tensor_make(dev_x, shape, 1, CHIPRT_DTYPE_F32, 0, &tx) != CHIPRT_OK ||
      chiprt_tensor_make(dev_y, shape, 1, CHIPRT_DTYPE_F32, 0, &ty) != CHIPRT_OK ||
      chiprt_args_create(&args) != CHIPRT_OK || chiprt_args_in(args, &tx) != CHIPRT_OK ||
      chiprt_args_inout(args, &ty) != CHIPRT_OK ||
      chiprt_args_scalar_i64(args, kChunk) != CHIPRT_OK ||
      chiprt_args_scalar_f32(args, alpha) != CHIPRT_OK) {
    return failed("arguments");
  }
  chiprt_call_config_t config;
  chiprt_call_config_init(&config);
  config.runtime = runtime;
  chiprt_run_report_t report;
  const chiprt_status_t status = chiprt_worker_run(worker, 0, args, &config, &report);
  chiprt_args_destroy(args);
  if (status != CHIPRT_OK) return failed("run");
  if (chiprt_worker_copy_from(worker, got, dev_y, sizeof got, 0) != CHIPRT_OK)
    return failed("copy back");
  chiprt_worker_free(worker, dev_x);
  chiprt_worker_free(worker, dev_y);

  double max_error = 0;
  for (int i = 0; i < kLength; ++i) {
    const double error = fabs((double)got[i] - want[i]);
    if (error > max_error) max_error = error;
  }
  const uint64_t want_tasks = 2 * (kLength / kChunk);
  const int passed = max_error <= 1e-6 && report.task_count == want_tasks;
  printf("%s consumer_c %s: %llu tasks (want %llu), max error %g\n", passed ? "PASS" : "FAIL",
         chiprt_runtime_name(runtime), (unsigned long long)report.task_count,
         (unsigned long long)want_tasks, max_error);
  return passed;
}

int main(void) {
  const chiprt_arg_tag_t square_tags[2] = {CHIPRT_ARG_IN, CHIPRT_ARG_OUT};
  const chiprt_arg_tag_t axpy_tags[2] = {CHIPRT_ARG_IN, CHIPRT_ARG_INOUT};
  chiprt_signature_t square_sig, axpy_sig, orchestration_sig;
  chiprt_builder_t* builder = NULL;
  uint8_t* container = NULL;
  size_t container_size = 0;
  if (chiprt_signature_make(square_tags, 2, 1, &square_sig) != CHIPRT_OK ||
      chiprt_signature_make(axpy_tags, 2, 2, &axpy_sig) != CHIPRT_OK ||
      chiprt_signature_make(axpy_tags, 2, 2, &orchestration_sig) != CHIPRT_OK ||
      chiprt_builder_create(&builder) != CHIPRT_OK ||
      chiprt_builder_orchestration_file(builder, ORCHESTRATION_OBJECT, &orchestration_sig) !=
          CHIPRT_OK ||
      chiprt_builder_kernel_file(builder, CONSUMER_SQUARE, CHIPRT_CORE_AIV, SQUARE_OBJECT,
                                 &square_sig) != CHIPRT_OK ||
      chiprt_builder_kernel_file(builder, CONSUMER_AXPY, CHIPRT_CORE_AIV, AXPY_OBJECT, &axpy_sig) !=
          CHIPRT_OK ||
      chiprt_builder_build(builder, &container, &container_size) != CHIPRT_OK) {
    return !failed("container");
  }
  chiprt_builder_destroy(builder);

  int major = 0, minor = 0, patch = 0;
  chiprt_version(&major, &minor, &patch);
  printf("chiprt %d.%d.%d (%s)\n", major, minor, patch, chiprt_version_string());

  chiprt_worker_t* worker = NULL;
  if (chiprt_worker_create(&worker) != CHIPRT_OK || chiprt_worker_init(worker, NULL) != CHIPRT_OK ||
      chiprt_worker_register_callable(worker, 0, container, container_size) != CHIPRT_OK) {
    return !failed("worker");
  }
  chiprt_bytes_free(container);
  int passed = run_variant(worker, CHIPRT_RUNTIME_HOST_BUILD_GRAPH);
  passed = run_variant(worker, CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER) && passed;
  /* A misuse gets a code, not a crash: the callable id is outside [0, 64). */
  if (chiprt_worker_run(worker, 99, NULL, NULL, NULL) != CHIPRT_CALLABLE_ID_OUT_OF_RANGE) {
    printf("FAIL consumer_c: callable id 99 was not refused with CallableIdOutOfRange\n");
    passed = 0;
  }
  if (chiprt_worker_destroy(worker) != CHIPRT_OK) return !failed("close");
  return passed ? 0 : 1;
}
