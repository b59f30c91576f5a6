/* The C API from C11: builds vector_example's callable from its chip objects, runs it on both
 * runtime variants through libchiprt.so and checks the output against a reference computed here,
 * the run report, pipelined submits, a diagnostics directory, and that misuse (NULL handles and
 * out-pointers, bad sizes, wrong order, bad ids, corrupt containers, views out of bounds, bad
 * switches) gets the right status code with its name, message and hint, never a crash, that one
 * chip object of several named kernels runs under several func_ids with its names in tasks.csv,
 * and that a worker inherited by a forked child refuses every call there
 * (CHIPRT_INHERITED_WORKER).
 *
 *   chiprt_capi_test CHIP_OBJECT_DIR    (default: $CHIPRT_CHIP_OBJECT_DIR)
 *
 * Prints one line per check; exits 1 naming each failed check. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, stat: POSIX, outside strict C11 */

#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chiprt/chiprt_c.h"

/* vector_example's protocol (examples/vector_example/protocol.h). */
enum { kAdd = 0, kAddScalar = 1, kMul = 2, kAddInto = 3, kTasksPerChunk = 5 };
enum { kLength = 4096, kChunk = 1024, kCallableId = 1 };

static int g_checks;
static int g_failures;

static void check(int ok, const char* format, ...) {
  va_list list;
  ++g_checks;
  va_start(list, format);
  fputs(ok ? "ok    " : "FAIL  ", ok ? stdout : stderr);
  vfprintf(ok ? stdout : stderr, format, list);
  fputc('\n', ok ? stdout : stderr);
  va_end(list);
  if (!ok) ++g_failures;
  fflush(stdout);
}

static void print_last_error(FILE* to) {
  fprintf(to, "      last error: [%s] %s (hint: %s)\n", chiprt_last_error_name(),
          chiprt_last_error_message(), chiprt_last_error_hint());
}

/* A step the rest depends on: stops the test when it fails. */
static void require_ok(chiprt_status_t status, const char* what) {
  if (status == CHIPRT_OK) {
    check(1, "%s", what);
    return;
  }
  check(0, "%s returned %d (%s)", what, (int)status, chiprt_status_name(status));
  print_last_error(stderr);
  fprintf(stderr, "chiprt_capi_test: stopping after a failed required step\n");
  exit(1);
}

static void expect_ok(chiprt_status_t status, const char* what) {
  check(status == CHIPRT_OK && chiprt_last_error_code() == CHIPRT_OK, "%s -> Ok", what);
  if (status != CHIPRT_OK) print_last_error(stderr);
}

/* The call failed with `want`, and the thread's last error says so with a name, a message and a
 * hint. */
static void expect_code(chiprt_status_t status, chiprt_status_t want, const char* what) {
  const char* name = chiprt_last_error_name();
  const char* message = chiprt_last_error_message();
  const char* hint = chiprt_last_error_hint();
  const int ok = status == want && chiprt_last_error_code() == want &&
                 strcmp(name, chiprt_status_name(want)) == 0 && message[0] != '\0' &&
                 hint[0] != '\0';
  check(ok, "%s -> %s (got %s: %s)", what, chiprt_status_name(want), chiprt_status_name(status),
        message);
}

static uint8_t* read_file(const char* dir, const char* name, size_t* size) {
  char path[4096];
  FILE* file;
  long length;
  uint8_t* bytes;
  snprintf(path, sizeof path, "%s/%s.so", dir, name);
  file = fopen(path, "rb");
  if (file == NULL || fseek(file, 0, SEEK_END) != 0 || (length = ftell(file)) <= 0 ||
      fseek(file, 0, SEEK_SET) != 0) {
    fprintf(stderr, "chiprt_capi_test: cannot read chip object %s\n", path);
    exit(1);
  }
  bytes = (uint8_t*)malloc((size_t)length);
  if (bytes == NULL || fread(bytes, 1, (size_t)length, file) != (size_t)length) {
    fprintf(stderr, "chiprt_capi_test: cannot read chip object %s\n", path);
    exit(1);
  }
  fclose(file);
  *size = (size_t)length;
  return bytes;
}

static chiprt_signature_t signature(chiprt_arg_tag_t a, chiprt_arg_tag_t b, chiprt_arg_tag_t c,
                                    uint32_t tensors, uint32_t scalars) {
  const chiprt_arg_tag_t tags[3] = {a, b, c};
  chiprt_signature_t sig;
  require_ok(chiprt_signature_make(tags, tensors, scalars, &sig), "chiprt_signature_make");
  return sig;
}

/* The container of examples/vector_example/host/vector_example.cpp: the orchestration and the
 * kernels as bytes, one kernel from its file. */
static void build_container(const char* dir, uint8_t** container, size_t* container_size) {
  const chiprt_signature_t orchestration_sig =
      signature(CHIPRT_ARG_IN, CHIPRT_ARG_IN, CHIPRT_ARG_OUTPUT_EXISTING, 3, 1);
  const chiprt_signature_t binary = signature(CHIPRT_ARG_IN, CHIPRT_ARG_IN, CHIPRT_ARG_OUT, 3, 1);
  const chiprt_signature_t binary_into =
      signature(CHIPRT_ARG_IN, CHIPRT_ARG_IN, CHIPRT_ARG_OUTPUT_EXISTING, 3, 1);
  const chiprt_signature_t add_scalar = signature(CHIPRT_ARG_IN, CHIPRT_ARG_OUT, 0, 2, 2);
  size_t orchestration_size, add_size, mul_size;
  uint8_t* orchestration = read_file(dir, "vector_example_orchestration", &orchestration_size);
  uint8_t* add = read_file(dir, "vector_example_add", &add_size);
  uint8_t* mul = read_file(dir, "vector_example_mul", &mul_size);
  char add_scalar_path[4096];
  chiprt_builder_t* builder = NULL;

  snprintf(add_scalar_path, sizeof add_scalar_path, "%s/vector_example_add_scalar.so", dir);
  require_ok(chiprt_builder_create(&builder), "chiprt_builder_create");
  require_ok(chiprt_builder_orchestration_object(builder, orchestration, orchestration_size,
                                                 &orchestration_sig),
             "builder: orchestration object (bytes)");
  require_ok(chiprt_builder_kernel_object(builder, kAdd, CHIPRT_CORE_AIV, add, add_size, &binary),
             "builder: kernel kAdd (bytes)");
  require_ok(chiprt_builder_kernel_file_named(builder, kAddScalar, CHIPRT_CORE_AIV, add_scalar_path,
                                              &add_scalar, NULL, "add_scalar"),
             "builder: kernel kAddScalar (file, named)");
  require_ok(chiprt_builder_kernel_object_named(builder, kMul, CHIPRT_CORE_AIV, mul, mul_size,
                                                &binary, "kernel_entry", "mul"),
             "builder: kernel kMul (bytes, named)");
  require_ok(chiprt_builder_kernel_object_named(builder, kAddInto, CHIPRT_CORE_AIV, add, add_size,
                                                &binary_into, NULL, "add_into"),
             "builder: kernel kAddInto (bytes, named)");

  /* Builder misuse. */
  expect_code(chiprt_builder_kernel_object(builder, 9, CHIPRT_CORE_AIV, NULL, 10, &binary),
              CHIPRT_INVALID_ARGUMENT, "builder: NULL object bytes");
  expect_code(chiprt_builder_kernel_object(builder, 9, 7, add, add_size, &binary),
              CHIPRT_INVALID_ARGUMENT, "builder: core type 7");
  expect_code(chiprt_builder_kernel_object(builder, 9, CHIPRT_CORE_AIV, add, add_size, NULL),
              CHIPRT_INVALID_ARGUMENT, "builder: NULL signature");
  expect_code(chiprt_builder_kernel_file(builder, 9, CHIPRT_CORE_AIV, "/nonexistent/k.so", &binary),
              CHIPRT_INVALID_ARGUMENT, "builder: missing object file");
  /* A directory is not an object file: the stream's exception became InternalError. */
  expect_code(chiprt_builder_kernel_file(builder, 9, CHIPRT_CORE_AIV, dir, &binary),
              CHIPRT_INVALID_ARGUMENT, "builder: a directory as the object file");
  expect_code(chiprt_builder_orchestration_file(builder, dir, &orchestration_sig),
              CHIPRT_INVALID_ARGUMENT, "builder: a directory as the orchestration file");
  expect_code(chiprt_builder_orchestration_object(NULL, add, add_size, &binary),
              CHIPRT_INVALID_ARGUMENT, "builder: NULL builder");
  expect_code(chiprt_builder_build(builder, NULL, container_size), CHIPRT_INVALID_ARGUMENT,
              "builder: build with NULL out_bytes");
  expect_code(chiprt_builder_kernel_object_named(NULL, 9, CHIPRT_CORE_AIV, add, add_size, &binary,
                                                 "add", NULL),
              CHIPRT_INVALID_ARGUMENT, "builder: named kernel with a NULL builder");
  expect_code(chiprt_builder_kernel_file_named(builder, 9, CHIPRT_CORE_AIV, "/nonexistent/k.so",
                                               &binary, "add", "add"),
              CHIPRT_INVALID_ARGUMENT, "builder: named kernel from a missing file");

  require_ok(chiprt_builder_build(builder, container, container_size), "chiprt_builder_build");
  check(*container != NULL && *container_size > 0, "container has %zu bytes", *container_size);
  chiprt_builder_destroy(builder);
  {
    chiprt_builder_t* empty = NULL;
    uint8_t* bytes = (uint8_t*)1;
    size_t size = 1;
    require_ok(chiprt_builder_create(&empty), "chiprt_builder_create (empty)");
    expect_code(chiprt_builder_build(empty, &bytes, &size), CHIPRT_EMPTY_CALLABLE,
                "builder: build without orchestration or kernels");
    check(bytes == NULL && size == 0, "failed build leaves out_bytes NULL and out_size 0");
    /* The builder checks func_ids when it builds. */
    require_ok(chiprt_builder_kernel_object(empty, kAdd, CHIPRT_CORE_AIV, add, add_size, &binary),
               "builder: kernel kAdd");
    require_ok(chiprt_builder_kernel_object(empty, kAdd, CHIPRT_CORE_AIV, add, add_size, &binary),
               "builder: kernel kAdd again");
    require_ok(chiprt_builder_orchestration_object(empty, orchestration, orchestration_size,
                                                   &orchestration_sig),
               "builder: orchestration object");
    expect_code(chiprt_builder_build(empty, &bytes, &size), CHIPRT_INVALID_ARGUMENT,
                "builder: build with a duplicate func_id");
    chiprt_builder_destroy(empty);
  }
  {
    /* Symbols and names are checked when the container is built. */
    chiprt_builder_t* named = NULL;
    uint8_t* bytes = NULL;
    size_t size = 0;
    require_ok(chiprt_builder_create(&named), "chiprt_builder_create (named)");
    require_ok(chiprt_builder_orchestration_object(named, orchestration, orchestration_size,
                                                   &orchestration_sig),
               "builder: orchestration object");
    require_ok(chiprt_builder_kernel_object_named(named, kAdd, CHIPRT_CORE_AIV, add, add_size,
                                                  &binary, "vector add", NULL),
               "builder: kernel with the symbol \"vector add\"");
    expect_code(chiprt_builder_build(named, &bytes, &size), CHIPRT_INVALID_ARGUMENT,
                "builder: build with a symbol that is not a C identifier");
    check(strstr(chiprt_last_error_message(), "symbol 'vector add' is not a C identifier") != NULL,
          "the error names the symbol: %s", chiprt_last_error_message());
    chiprt_builder_destroy(named);
  }
  free(orchestration);
  free(add);
  free(mul);
}

static float next_random(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* f = (a+b+1)(a+b+2) + (a+b) in the kernels' float order. */
static int check_output(const float* got, const float* a, const float* b, const char* what) {
  size_t i;
  for (i = 0; i < kLength; ++i) {
    const float s = a[i] + b[i];
    const float want = (s + 1.0f) * (s + 2.0f) + s;
    if (!(fabsf(got[i] - want) <= 1e-5f * (1.0f + fabsf(want)))) {
      check(0, "%s: f[%zu] = %g, want %g", what, i, (double)got[i], (double)want);
      return 0;
    }
  }
  check(1, "%s: all %d elements match the reference", what, kLength);
  return 1;
}

static void check_report(const chiprt_run_report_t* report, chiprt_runtime_t runtime,
                         const char* what) {
  const int ring = runtime == CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER;
  int p;
  check(report->task_count == (uint64_t)(kLength / kChunk * kTasksPerChunk),
        "%s: task_count %llu == %d", what, (unsigned long long)report->task_count,
        kLength / kChunk * kTasksPerChunk);
  check(report->phases[CHIPRT_PHASE_RUN_WALL].present &&
            report->phases[CHIPRT_PHASE_RUN_WALL].span_ns > 0,
        "%s: phase run_wall present, %llu ns", what,
        (unsigned long long)report->phases[CHIPRT_PHASE_RUN_WALL].span_ns);
  check(report->phases[CHIPRT_PHASE_SCHEDULING].present, "%s: phase scheduling present", what);
  check(report->phases[CHIPRT_PHASE_ORCHESTRATION].present == ring, "%s: phase orchestration %s",
        what, ring ? "present" : "absent");
  check(report->device_wall_ns > 0 && report->host_total_ns >= report->device_wall_ns,
        "%s: device_wall_ns %llu, host_total_ns %llu", what,
        (unsigned long long)report->device_wall_ns, (unsigned long long)report->host_total_ns);
  check(report->aicpu_threads > 0 && report->cores > 0, "%s: %u AICPU threads, %u cores", what,
        report->aicpu_threads, report->cores);
  check(report->diagnostics_dir[0] == '\0', "%s: no diagnostics directory", what);
  check(ring == (report->ring_task_window[0] > 0), "%s: ring sizes %s", what,
        ring ? "reported" : "zero");
  for (p = 0; p < CHIPRT_PHASE_COUNT; ++p) {
    if (report->phases[p].present) {
      printf("      %-18s start %10llu ns  span %10llu ns\n", chiprt_phase_name(p),
             (unsigned long long)report->phases[p].start_ns,
             (unsigned long long)report->phases[p].span_ns);
    }
  }
}

static int remove_entry(const char* path, const struct stat* info, int flag, struct FTW* ftw) {
  (void)info;
  (void)flag;
  (void)ftw;
  return remove(path);
}

typedef struct Device {
  chiprt_worker_t* worker;
  chiprt_buffer_t a, b, f, f2;
  chiprt_tensor_t ta, tb, tf, tf2;
  chiprt_args_t* args;  /* a, b, f, chunk */
  chiprt_args_t* args2; /* a, b, f2, chunk */
  float host_a[kLength], host_b[kLength], got[kLength];
} Device;

static void make_args(Device* d, const chiprt_tensor_t* out, chiprt_args_t** args) {
  require_ok(chiprt_args_create(args), "chiprt_args_create");
  require_ok(chiprt_args_in(*args, &d->ta), "args: in a");
  require_ok(chiprt_args_in(*args, &d->tb), "args: in b");
  require_ok(chiprt_args_output_existing(*args, out), "args: output_existing f");
  require_ok(chiprt_args_scalar_bits(*args, kChunk), "args: scalar chunk");
}

static void run_on(Device* d, chiprt_runtime_t runtime) {
  char what[128];
  chiprt_call_config_t config;
  chiprt_run_report_t report;
  snprintf(what, sizeof what, "run on %s", chiprt_runtime_name(runtime));
  require_ok(chiprt_worker_memset(d->worker, d->f, 0xff, d->f.size), "poison f");
  require_ok(chiprt_call_config_init(&config), "chiprt_call_config_init");
  config.runtime = runtime;
  require_ok(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report), what);
  require_ok(chiprt_worker_copy_from(d->worker, d->got, d->f, d->f.size, 0), "copy f back");
  check_output(d->got, d->host_a, d->host_b, what);
  check_report(&report, runtime, what);
}

static void run_pipelined(Device* d) {
  chiprt_run_handle_t* first = NULL;
  chiprt_run_handle_t* second = NULL;
  chiprt_run_report_t report;
  uint64_t sequence_first = 0, sequence_second = 0;
  uint32_t in_flight = 99;
  bool done = false;
  require_ok(chiprt_worker_memset(d->worker, d->f, 0xff, d->f.size), "poison f");
  require_ok(chiprt_worker_memset(d->worker, d->f2, 0xff, d->f2.size), "poison f2");
  require_ok(chiprt_worker_submit(d->worker, kCallableId, d->args, NULL, &first), "submit run 1");
  require_ok(chiprt_worker_submit(d->worker, kCallableId, d->args2, NULL, &second), "submit run 2");
  expect_ok(chiprt_worker_runs_in_flight(d->worker, &in_flight), "runs_in_flight");
  check(in_flight <= 2, "runs_in_flight %u <= 2", in_flight);
  expect_ok(chiprt_run_handle_sequence(first, &sequence_first), "sequence of run 1");
  expect_ok(chiprt_run_handle_sequence(second, &sequence_second), "sequence of run 2");
  check(sequence_second == sequence_first + 1, "sequences %llu then %llu",
        (unsigned long long)sequence_first, (unsigned long long)sequence_second);
  /* UINT64_MAX milliseconds is "for ever": it waits for the run (one condition-variable wait of
   * that length overflowed the clock and returned at once, not done). Run 2 is queued behind run
   * 1, so it is not done yet when this starts. */
  expect_ok(chiprt_run_handle_wait_for(second, UINT64_MAX, &done), "wait_for run 2 (UINT64_MAX)");
  check(done, "wait_for(UINT64_MAX) returns once run 2 is done, not at once");
  expect_ok(chiprt_run_handle_wait_for(second, 120000, &done), "wait_for run 2 (120 s)");
  check(done, "run 2 done within the timeout");
  expect_ok(chiprt_run_handle_ready(first, &done), "ready of run 1");
  check(done, "run 1 done once run 2 is (submission order)");
  expect_ok(chiprt_run_handle_wait(first, &report), "wait run 1");
  check_report(&report, CHIPRT_RUNTIME_HOST_BUILD_GRAPH, "pipelined run 1");
  expect_ok(chiprt_run_handle_wait(second, &report), "wait run 2");
  check_report(&report, CHIPRT_RUNTIME_HOST_BUILD_GRAPH, "pipelined run 2");
  expect_ok(chiprt_run_handle_wait(second, NULL), "wait run 2 again (NULL report)");
  require_ok(chiprt_worker_copy_from(d->worker, d->got, d->f, d->f.size, 0), "copy f back");
  check_output(d->got, d->host_a, d->host_b, "pipelined run 1");
  require_ok(chiprt_worker_copy_from(d->worker, d->got, d->f2, d->f2.size, 0), "copy f2 back");
  check_output(d->got, d->host_a, d->host_b, "pipelined run 2");
  expect_ok(chiprt_worker_runs_in_flight(d->worker, &in_flight), "runs_in_flight after waits");
  check(in_flight == 0, "runs_in_flight %u == 0", in_flight);
  {
    chiprt_run_handle_t* third = NULL;
    bool admitted = false;
    expect_ok(chiprt_worker_try_submit(d->worker, kCallableId, d->args, NULL, &third, &admitted),
              "try_submit with no run in flight");
    check(admitted && third != NULL, "try_submit admitted the run");
    if (admitted) {
      expect_ok(chiprt_run_handle_wait(third, &report), "wait the try_submit run");
      check(report.task_count == (uint64_t)(kLength / kChunk * kTasksPerChunk),
            "try_submit run task_count %llu", (unsigned long long)report.task_count);
      chiprt_run_handle_destroy(third);
    }
  }
  expect_ok(chiprt_run_handle_destroy(first), "destroy handle 1");
  expect_ok(chiprt_run_handle_destroy(second), "destroy handle 2");
  expect_ok(chiprt_run_handle_destroy(NULL), "destroy NULL handle");
}

static void run_with_diagnostics(Device* d) {
  char dir_template[] = "/tmp/chiprt_c_api_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  char path[CHIPRT_REPORT_PATH_CAPACITY + 32];
  char latest[CHIPRT_REPORT_PATH_CAPACITY];
  char tiny[4];
  size_t length = 0;
  struct stat info;
  chiprt_call_config_t config;
  chiprt_run_report_t report;
  if (dir == NULL) {
    check(0, "mkdtemp failed");
    return;
  }
  require_ok(chiprt_call_config_init(&config), "chiprt_call_config_init");
  config.runtime = CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER;
  config.diagnostics = "swimlane=2,tasks,deps";
  config.diagnostics_dir = dir;
  require_ok(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
             "run with diagnostics \"swimlane=2,tasks,deps\"");
  check(strncmp(report.diagnostics_dir, dir, strlen(dir)) == 0 &&
            report.diagnostics_dir_length == strlen(report.diagnostics_dir),
        "report.diagnostics_dir = %s (under %s)", report.diagnostics_dir, dir);
  check(stat(report.diagnostics_dir, &info) == 0 && S_ISDIR(info.st_mode),
        "the run directory exists");
  snprintf(path, sizeof path, "%s/run.json", report.diagnostics_dir);
  check(stat(path, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0, "%s exists", path);
  expect_ok(chiprt_worker_flush_diagnostics(d->worker), "flush_diagnostics");
  /* Written in the background: complete once flush_diagnostics returns. */
  config.diagnostics = "all";
  config.diagnostics_background_write = true;
  require_ok(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
             "run with diagnostics \"all\" written in the background");
  expect_ok(chiprt_worker_flush_diagnostics(d->worker), "flush_diagnostics");
  snprintf(path, sizeof path, "%s/run.json", report.diagnostics_dir);
  check(stat(path, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0,
        "%s exists after the flush", path);

  expect_ok(chiprt_latest_diagnostics_run(dir, NULL, 0, &length), "latest run: length only");
  check(length == strlen(report.diagnostics_dir), "latest run length %zu", length);
  expect_ok(chiprt_latest_diagnostics_run(dir, latest, sizeof latest, &length), "latest run");
  check(strcmp(latest, report.diagnostics_dir) == 0, "latest run %s is the run's", latest);
  expect_code(chiprt_latest_diagnostics_run(dir, tiny, sizeof tiny, NULL), CHIPRT_INVALID_ARGUMENT,
              "latest run into a 4-byte buffer");
  expect_code(chiprt_latest_diagnostics_run(NULL, latest, sizeof latest, NULL),
              CHIPRT_INVALID_ARGUMENT, "latest run of a NULL directory");

  config.diagnostics = "swimlane=9,bogus";
  expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
              CHIPRT_INVALID_CONFIG, "run with diagnostics \"swimlane=9,bogus\"");
  config.diagnostics = "tasks";
  config.diagnostics_dir = NULL;
  expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
              CHIPRT_INVALID_CONFIG, "run with diagnostics but no directory");
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The named-kernels test object: one chip object holding an orchestration and several kernels,
 * each exported under its own symbol, registered under four func_ids with display names; the
 * chain x -> 2x -> 2x + 1 -> -(2x + 1) -> -2x runs, tasks.csv calls every kernel by its name, and
 * a symbol the object does not export fails the registration naming it. */
static void named_kernel_checks(Device* d, const char* dir) {
  enum { kNamedCallable = 7, kElements = 256 };
  static const char* const kSymbols[4] = {"named_double", "named_add_one", "named_negate",
                                          "named_add_one"};
  static const char* const kNames[4] = {"double", NULL, "negate", "add one, again"};
  static const char* const kLabels[4] = {"double (func 0)", "named_add_one (func 1)",
                                         "negate (func 2)", "\"add one, again (func 3)\""};
  char path[4096];
  char dir_template[] = "/tmp/chiprt_c_api_names_XXXXXX";
  const char* diag_dir = mkdtemp(dir_template);
  const chiprt_arg_tag_t inout = CHIPRT_ARG_INOUT;
  const uint64_t shape[1] = {kElements};
  chiprt_signature_t sig;
  chiprt_builder_t* builder = NULL;
  uint8_t* container = NULL;
  size_t container_size = 0;
  chiprt_buffer_t buffer;
  chiprt_tensor_t x;
  chiprt_args_t* args = NULL;
  chiprt_call_config_t config;
  chiprt_run_report_t report;
  float host[kElements];
  int32_t f;
  int i, bad = 0;
  bool flag = true;

  require_ok(chiprt_signature_make(&inout, 1, 0, &sig), "signature {inout}");
  snprintf(path, sizeof path, "%s/chiprt_test_named_kernels.so", dir);
  require_ok(chiprt_builder_create(&builder), "chiprt_builder_create (named kernels)");
  require_ok(chiprt_builder_orchestration_file(builder, path, &sig),
             "named kernels: the orchestration of the object");
  for (f = 0; f < 4; ++f) {
    require_ok(chiprt_builder_kernel_file_named(builder, f, CHIPRT_CORE_AIV, path, &sig,
                                                kSymbols[f], kNames[f]),
               "named kernels: a kernel of the same object");
  }
  require_ok(chiprt_builder_build(builder, &container, &container_size), "named kernels: build");
  {
    struct stat info;
    check(stat(path, &info) == 0 && container_size < 2 * (size_t)info.st_size,
          "the container (%zu bytes) holds the object once", container_size);
  }
  require_ok(chiprt_worker_register_callable(d->worker, kNamedCallable, container, container_size),
             "named kernels: register");
  require_ok(chiprt_worker_malloc(d->worker, sizeof host, &buffer), "named kernels: malloc");
  for (i = 0; i < kElements; ++i) host[i] = (float)i;
  require_ok(chiprt_worker_copy_to(d->worker, buffer, host, sizeof host, 0), "named kernels: x");
  require_ok(chiprt_tensor_make(buffer, shape, 1, CHIPRT_DTYPE_F32, 0, &x),
             "named kernels: tensor");
  require_ok(chiprt_args_create(&args), "named kernels: args");
  require_ok(chiprt_args_inout(args, &x), "named kernels: inout x");
  require_ok(chiprt_call_config_init(&config), "chiprt_call_config_init");
  config.diagnostics = "tasks";
  config.diagnostics_dir = diag_dir;
  require_ok(chiprt_worker_run(d->worker, kNamedCallable, args, &config, &report),
             "named kernels: run");
  require_ok(chiprt_worker_copy_from(d->worker, host, buffer, sizeof host, 0),
             "named kernels: back");
  for (i = 0; i < kElements; ++i) bad += host[i] != -2.0f * (float)i;
  check(bad == 0, "named kernels: x == -2x everywhere (%d wrong)", bad);
  {
    /* tasks.csv: one row per task, its kernel column the display name and func_id. */
    char line[1024];
    char csv_path[CHIPRT_REPORT_PATH_CAPACITY + 32];
    int seen[4] = {0, 0, 0, 0};
    FILE* csv;
    snprintf(csv_path, sizeof csv_path, "%s/tasks.csv", report.diagnostics_dir);
    csv = fopen(csv_path, "r");
    check(csv != NULL, "named kernels: %s opens", csv_path);
    while (csv != NULL && fgets(line, sizeof line, csv) != NULL) {
      for (f = 0; f < 4; ++f) seen[f] += strstr(line, kLabels[f]) != NULL;
    }
    if (csv != NULL) fclose(csv);
    for (f = 0; f < 4; ++f)
      check(seen[f] == 1, "tasks.csv names %s once (%d)", kLabels[f], seen[f]);
  }
  chiprt_args_destroy(args);
  expect_ok(chiprt_worker_free(d->worker, buffer), "named kernels: free");
  expect_ok(chiprt_worker_unregister_callable(d->worker, kNamedCallable),
            "named kernels: unregister");
  chiprt_bytes_free(container);
  chiprt_builder_destroy(builder);

  /* A symbol the object does not export: the registration fails naming it. */
  snprintf(path, sizeof path, "%s/chiprt_test_named_kernels.so", dir);
  require_ok(chiprt_builder_create(&builder), "chiprt_builder_create (missing symbol)");
  require_ok(chiprt_builder_orchestration_file(builder, path, &sig), "orchestration");
  require_ok(chiprt_builder_kernel_file_named(builder, 0, CHIPRT_CORE_AIV, path, &sig,
                                              "named_triple", "triple"),
             "a kernel under a symbol the object lacks");
  require_ok(chiprt_builder_build(builder, &container, &container_size), "build (missing symbol)");
  expect_code(chiprt_worker_register_callable(d->worker, kNamedCallable, container, container_size),
              CHIPRT_LOAD_FAILED, "register a callable naming a symbol the object lacks");
  check(strstr(chiprt_last_error_message(), "symbol 'named_triple' not found") != NULL &&
            strstr(chiprt_last_error_hint(), "extern \"C\"") != NULL,
        "the error names the symbol and the fix: %s", chiprt_last_error_message());
  expect_ok(chiprt_worker_has_callable(d->worker, kNamedCallable, &flag), "has_callable");
  check(!flag, "nothing stays registered");
  chiprt_bytes_free(container);
  chiprt_builder_destroy(builder);
  if (diag_dir != NULL) nftw(diag_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void tensor_checks(Device* d) {
  const uint64_t square[2] = {64, 64};
  const uint64_t too_long[1] = {kLength + 1};
  const uint64_t offsets[1] = {1};
  const uint64_t block[2] = {16, 16};
  const uint64_t block_offsets[2] = {48, 0};
  const uint32_t order[2] = {1, 0};
  chiprt_tensor_t matrix, view, moved;
  chiprt_tensor_t hand_made;
  uint64_t numel = 0;
  bool contiguous = true;
  chiprt_args_t* args = NULL;
  int i;

  expect_ok(chiprt_tensor_reshape(&d->ta, square, 2, &matrix), "reshape a to 64x64");
  check(matrix.ndim == 2 && matrix.strides[0] == 64 && matrix.strides[1] == 1,
        "reshape strides {64, 1}");
  expect_ok(chiprt_tensor_transpose(&matrix, 0, 1, &moved), "transpose 64x64");
  expect_ok(chiprt_tensor_is_contiguous(&moved, &contiguous), "is_contiguous");
  check(!contiguous && moved.strides[0] == 1 && moved.strides[1] == 64,
        "transpose is not contiguous, strides {1, 64}");
  expect_ok(chiprt_tensor_permute(&matrix, order, 2, &moved), "permute {1, 0}");
  check(moved.strides[0] == 1, "permute swaps the strides");
  expect_ok(chiprt_tensor_slice(&d->ta, 0, 0, kLength, 2, &view), "slice step 2");
  expect_ok(chiprt_tensor_numel(&view, &numel), "numel");
  check(numel == kLength / 2 && view.strides[0] == 2, "slice has %llu elements, stride 2",
        (unsigned long long)numel);
  expect_ok(chiprt_tensor_view(&matrix, block, block_offsets, 2, &view), "view 16x16 at (48, 0)");
  check(view.start_offset == 48 * 64, "view start offset %llu",
        (unsigned long long)view.start_offset);

  /* Out of bounds, every way in. */
  expect_code(chiprt_tensor_view(&d->ta, too_long, offsets, 1, &view), CHIPRT_VIEW_OUT_OF_BOUNDS,
              "view of 4097 elements at offset 1 of 4096");
  expect_code(chiprt_tensor_view(&matrix, block, (const uint64_t[2]){60, 50}, 2, &view),
              CHIPRT_VIEW_OUT_OF_BOUNDS, "view 16x16 at (60, 50) of 64x64");
  expect_code(chiprt_tensor_make(d->a, too_long, 1, CHIPRT_DTYPE_F32, 0, &view),
              CHIPRT_VIEW_OUT_OF_BOUNDS, "make 4097 f32 over 4096");
  expect_code(chiprt_tensor_slice(&d->ta, 0, 0, kLength + 8, 1, &view), CHIPRT_VIEW_OUT_OF_BOUNDS,
              "slice past the end");
  hand_made = d->ta;
  hand_made.shape[0] = kLength * 2;
  expect_code(chiprt_args_create(&args) == CHIPRT_OK ? chiprt_args_in(args, &hand_made)
                                                     : CHIPRT_INTERNAL_ERROR,
              CHIPRT_VIEW_OUT_OF_BOUNDS, "hand-made descriptor past its buffer as an argument");
  /* Descriptors whose reach wraps around: the check must not overflow into a small number. */
  hand_made = d->ta; /* (2^62 + 1) f64 at stride 2^63: 2^125 + 1 elements, times 8 wraps 2^128 */
  hand_made.dtype = CHIPRT_DTYPE_F64;
  hand_made.shape[0] = (1ull << 62) + 1;
  hand_made.strides[0] = 1ull << 63;
  expect_code(chiprt_args_in(args, &hand_made), CHIPRT_VIEW_OUT_OF_BOUNDS,
              "hand-made descriptor whose byte reach wraps 2^128 as an argument");
  expect_code(chiprt_tensor_numel(&hand_made, &numel), CHIPRT_VIEW_OUT_OF_BOUNDS,
              "numel of a descriptor whose byte reach wraps 2^128");
  hand_made = d->ta; /* (2^64-2)(2^64-1) + 6 * 2^63 = 2^128 + 2: element [1, 0] is before a */
  hand_made.ndim = 2;
  hand_made.shape[0] = UINT64_MAX;
  hand_made.strides[0] = UINT64_MAX;
  hand_made.shape[1] = 7;
  hand_made.strides[1] = 1ull << 63;
  expect_code(chiprt_args_in(args, &hand_made), CHIPRT_VIEW_OUT_OF_BOUNDS,
              "hand-made descriptor whose element reach wraps 2^128 as an argument");
  expect_code(chiprt_args_inout(args, &hand_made), CHIPRT_VIEW_OUT_OF_BOUNDS,
              "the same descriptor as an inout argument");
  {
    int32_t tensors = -1, scalars = -1;
    expect_ok(chiprt_args_counts(args, &tensors, &scalars), "args counts after refused tensors");
    check(tensors == 0, "no refused descriptor was added (%d tensors)", (int)tensors);
  }

  /* Bad parameters. */
  expect_code(chiprt_tensor_view(&d->ta, too_long, offsets, 2, &view), CHIPRT_INVALID_ARGUMENT,
              "view with a different rank");
  expect_code(chiprt_tensor_make(d->a, too_long, 6, CHIPRT_DTYPE_F32, 0, &view),
              CHIPRT_INVALID_ARGUMENT, "make of rank 6");
  expect_code(chiprt_tensor_make(d->a, too_long, 1, 99, 0, &view), CHIPRT_INVALID_ARGUMENT,
              "make with dtype 99");
  expect_code(chiprt_tensor_make(d->a, NULL, 1, CHIPRT_DTYPE_F32, 0, &view),
              CHIPRT_INVALID_ARGUMENT, "make with NULL shape");
  expect_code(chiprt_tensor_make(d->a, square, 2, CHIPRT_DTYPE_F32, 0, NULL),
              CHIPRT_INVALID_ARGUMENT, "make with NULL out");
  expect_code(chiprt_tensor_transpose(NULL, 0, 1, &view), CHIPRT_INVALID_ARGUMENT,
              "transpose of NULL");
  expect_code(chiprt_tensor_permute(&matrix, (const uint32_t[2]){0, 0}, 2, &view),
              CHIPRT_INVALID_ARGUMENT, "permute {0, 0}");

  /* Arguments past their bounds. */
  for (i = 0; i < CHIPRT_MAX_TASK_TENSORS; ++i) chiprt_args_in(args, &d->ta);
  expect_code(chiprt_args_in(args, &d->ta), CHIPRT_TOO_MANY_ARGS, "17th tensor argument");
  for (i = 0; i < CHIPRT_MAX_TASK_SCALARS; ++i) chiprt_args_scalar_i64(args, i);
  expect_code(chiprt_args_scalar_f32(args, 1.0f), CHIPRT_TOO_MANY_ARGS, "17th scalar argument");
  {
    int32_t tensors = 0, scalars = 0;
    expect_ok(chiprt_args_counts(args, &tensors, &scalars), "args counts");
    check(tensors == 16 && scalars == 16, "16 tensors and 16 scalars held");
    expect_ok(chiprt_args_clear(args), "args clear");
    expect_ok(chiprt_args_counts(args, &tensors, &scalars), "args counts after clear");
    check(tensors == 0 && scalars == 0, "cleared");
  }
  expect_code(chiprt_args_in(NULL, &d->ta), CHIPRT_INVALID_ARGUMENT, "args_in on NULL args");
  expect_code(chiprt_args_in(args, NULL), CHIPRT_INVALID_ARGUMENT, "args_in of a NULL tensor");
  expect_code(chiprt_args_out(args, square, 2, -1), CHIPRT_INVALID_ARGUMENT, "args_out dtype -1");
  {
    const chiprt_arg_tag_t tags[17] = {0};
    chiprt_signature_t sig;
    expect_code(chiprt_signature_make(tags, 17, 0, &sig), CHIPRT_TOO_MANY_ARGS,
                "signature of 17 tensors");
    expect_code(chiprt_signature_make((const chiprt_arg_tag_t[1]){9}, 1, 0, &sig),
                CHIPRT_INVALID_ARGUMENT, "signature with tag 9");
  }
  chiprt_args_destroy(args);
}

static void misuse_checks(Device* d, const uint8_t* container, size_t container_size) {
  chiprt_buffer_t buffer;
  chiprt_buffer_t bogus = {0x1234, 64};
  chiprt_run_report_t report;
  chiprt_call_config_t config;
  chiprt_args_t* short_args = NULL;
  chiprt_run_handle_t* handle = NULL;
  uint8_t* corrupt;
  bool flag = true;
  float host[8] = {0};

  /* NULL handles and out-pointers. */
  expect_code(chiprt_worker_malloc(NULL, 64, &buffer), CHIPRT_INVALID_ARGUMENT,
              "malloc on a NULL worker");
  expect_code(chiprt_worker_run(NULL, kCallableId, d->args, NULL, &report), CHIPRT_INVALID_ARGUMENT,
              "run on a NULL worker");
  expect_code(chiprt_worker_init(NULL, NULL), CHIPRT_INVALID_ARGUMENT, "init of a NULL worker");
  expect_code(chiprt_worker_malloc(d->worker, 64, NULL), CHIPRT_INVALID_ARGUMENT,
              "malloc with a NULL out");
  expect_code(chiprt_worker_create(NULL), CHIPRT_INVALID_ARGUMENT, "create with a NULL out");
  expect_code(chiprt_worker_has_callable(d->worker, kCallableId, NULL), CHIPRT_INVALID_ARGUMENT,
              "has_callable with a NULL out");
  expect_code(chiprt_worker_submit(d->worker, kCallableId, d->args, NULL, NULL),
              CHIPRT_INVALID_ARGUMENT, "submit with a NULL out");
  expect_code(chiprt_run_handle_wait(NULL, &report), CHIPRT_INVALID_ARGUMENT,
              "wait on a NULL handle");
  expect_code(chiprt_run_handle_ready(NULL, &flag), CHIPRT_INVALID_ARGUMENT,
              "ready of a NULL handle");
  expect_code(chiprt_run_handle_wait_for(NULL, 1, &flag), CHIPRT_INVALID_ARGUMENT,
              "wait_for on a NULL handle");
  expect_code(chiprt_call_config_init(NULL), CHIPRT_INVALID_ARGUMENT, "config init of NULL");
  expect_code(chiprt_worker_options_init(NULL), CHIPRT_INVALID_ARGUMENT, "options init of NULL");

  /* Sizes and buffers. */
  expect_code(chiprt_worker_copy_to(d->worker, d->a, d->host_a, d->a.size + 4, 0),
              CHIPRT_INVALID_ARGUMENT, "copy_to 4 bytes beyond the buffer");
  expect_code(chiprt_worker_copy_from(d->worker, host, d->a, sizeof host, d->a.size - 4),
              CHIPRT_INVALID_ARGUMENT, "copy_from past the end through the offset");
  expect_code(chiprt_worker_copy_to(d->worker, d->a, NULL, 16, 0), CHIPRT_INVALID_ARGUMENT,
              "copy_to from a NULL host pointer");
  expect_code(chiprt_worker_memset(d->worker, d->a, 0, d->a.size + 1), CHIPRT_INVALID_ARGUMENT,
              "memset one byte beyond the buffer");
  expect_code(chiprt_worker_malloc(d->worker, 0, &buffer), CHIPRT_INVALID_ARGUMENT, "malloc 0");
  expect_code(chiprt_worker_malloc(d->worker, UINT64_MAX / 2, &buffer), CHIPRT_OUT_OF_DEVICE_MEMORY,
              "malloc 8 EiB");
  expect_code(chiprt_worker_free(d->worker, bogus), CHIPRT_INVALID_DEVICE_POINTER,
              "free of a bogus buffer");
  bogus.addr = 0;
  expect_code(chiprt_worker_free(d->worker, bogus), CHIPRT_INVALID_DEVICE_POINTER,
              "free of an empty buffer");

  /* Callable ids and containers. */
  expect_code(chiprt_worker_run(d->worker, 7, d->args, NULL, &report), CHIPRT_UNKNOWN_CALLABLE,
              "run of unregistered callable id 7");
  expect_code(chiprt_worker_run(d->worker, CHIPRT_MAX_CALLABLE_IDS, d->args, NULL, &report),
              CHIPRT_CALLABLE_ID_OUT_OF_RANGE, "run of callable id 64");
  expect_code(chiprt_worker_register_callable(d->worker, -1, container, container_size),
              CHIPRT_CALLABLE_ID_OUT_OF_RANGE, "register under id -1");
  expect_code(chiprt_worker_register_callable(d->worker, kCallableId, container, container_size),
              CHIPRT_DUPLICATE_CALLABLE, "register under a taken id");
  expect_code(chiprt_worker_register_callable(d->worker, 2, NULL, 16), CHIPRT_INVALID_ARGUMENT,
              "register NULL bytes");
  expect_code(chiprt_worker_unregister_callable(d->worker, 7), CHIPRT_UNKNOWN_CALLABLE,
              "unregister of unregistered id 7");
  corrupt = (uint8_t*)malloc(container_size);
  memcpy(corrupt, container, container_size);
  memset(corrupt, 0x5a, 16);
  expect_code(chiprt_worker_register_callable(d->worker, 2, corrupt, container_size),
              CHIPRT_MALFORMED_CALLABLE, "register a container with a corrupt header");
  memcpy(corrupt, container, container_size);
  expect_code(chiprt_worker_register_callable(d->worker, 3, corrupt, container_size / 2),
              CHIPRT_MALFORMED_CALLABLE, "register a truncated container");
  free(corrupt);
  expect_ok(chiprt_worker_has_callable(d->worker, 2, &flag), "has_callable 2");
  check(!flag, "no callable under id 2 after the failed registrations");
  expect_ok(chiprt_worker_has_callable(d->worker, 99, &flag), "has_callable 99");
  check(!flag, "has_callable of id 99 (out of range) answers false");

  /* Arguments that do not match the signature. */
  require_ok(chiprt_args_create(&short_args), "chiprt_args_create");
  chiprt_args_in(short_args, &d->ta);
  chiprt_args_in(short_args, &d->tb);
  expect_code(chiprt_worker_run(d->worker, kCallableId, short_args, NULL, &report),
              CHIPRT_SIGNATURE_MISMATCH, "run with 2 of 3 tensors");
  /* A submit refuses at once only what needs no device: the mismatch comes from wait. */
  if (chiprt_worker_submit(d->worker, kCallableId, short_args, NULL, &handle) == CHIPRT_OK) {
    expect_code(chiprt_run_handle_wait(handle, &report), CHIPRT_SIGNATURE_MISMATCH,
                "wait of a submitted run with 2 of 3 tensors");
    chiprt_run_handle_destroy(handle);
  } else {
    expect_code(chiprt_last_error_code(), CHIPRT_SIGNATURE_MISMATCH, "submit with 2 of 3 tensors");
  }
  chiprt_args_destroy(short_args);

  /* Config fields. */
  require_ok(chiprt_call_config_init(&config), "chiprt_call_config_init");
  config.runtime = 9;
  expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
              CHIPRT_INVALID_ARGUMENT, "run with runtime 9");
  chiprt_call_config_init(&config);
  config.aicpu_thread_num = 1;
  expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
              CHIPRT_INVALID_CONFIG, "run with aicpu_thread_num 1");
  chiprt_call_config_init(&config);
  config.ring_task_window = "20";
  expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
              CHIPRT_INVALID_CONFIG, "run with ring_task_window \"20\"");
  chiprt_call_config_init(&config);
  config.user_data_size = 8;
  expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, &config, &report),
              CHIPRT_INVALID_ARGUMENT, "run with NULL user_data of 8 bytes");
  expect_code(chiprt_worker_submit(d->worker, kCallableId, d->args, &config, &handle),
              CHIPRT_INVALID_ARGUMENT, "submit with NULL user_data of 8 bytes");

  /* Success clears the last error. */
  expect_ok(chiprt_worker_has_callable(d->worker, kCallableId, &flag), "has_callable 1");
  check(flag && chiprt_last_error_code() == CHIPRT_OK && chiprt_last_error_message()[0] == '\0',
        "a call that succeeds clears the last error");
}

/* An orchestration (chip_objects/reentrant_orchestration.cpp) that closes and destroys its own
 * worker from inside the run: both are refused with CHIPRT_REENTRANT_CALL (the orchestration
 * fails the run otherwise), and the worker stays whole for the calls after the run. */
static void reentrant_close_and_destroy(Device* d, const char* dir, const char* own_dir) {
  const chiprt_signature_t unchecked = signature(0, 0, 0, 0, 0);
  const chiprt_signature_t add = signature(CHIPRT_ARG_IN, CHIPRT_ARG_IN, CHIPRT_ARG_OUT, 3, 1);
  char orchestration_path[4096], add_path[4096];
  chiprt_builder_t* builder = NULL;
  uint8_t* container = NULL;
  size_t container_size = 0;
  chiprt_call_config_t config;
  chiprt_buffer_t buffer;
  const int32_t callable_id = 9;

  snprintf(orchestration_path, sizeof orchestration_path,
           "%s/chiprt_capi_reentrant_orchestration.so", own_dir);
  snprintf(add_path, sizeof add_path, "%s/vector_example_add.so", dir);
  require_ok(chiprt_builder_create(&builder), "reentrant: builder");
  require_ok(chiprt_builder_orchestration_file(builder, orchestration_path, &unchecked),
             "reentrant: orchestration object (file)");
  require_ok(chiprt_builder_kernel_file(builder, kAdd, CHIPRT_CORE_AIV, add_path, &add),
             "reentrant: a kernel");
  require_ok(chiprt_builder_build(builder, &container, &container_size), "reentrant: build");
  chiprt_builder_destroy(builder);
  require_ok(chiprt_worker_register_callable(d->worker, callable_id, container, container_size),
             "reentrant: register");
  chiprt_bytes_free(container);

  require_ok(chiprt_call_config_init(&config), "reentrant: config");
  config.user_data = &d->worker;
  config.user_data_size = sizeof d->worker;
  expect_ok(chiprt_worker_run(d->worker, callable_id, NULL, &config, NULL),
            "a run whose orchestration calls chiprt_worker_close and chiprt_worker_destroy "
            "(each must get ReentrantCall)");
  expect_ok(chiprt_worker_malloc(d->worker, 64, &buffer), "the worker works after that run");
  expect_ok(chiprt_worker_free(d->worker, buffer), "free after that run");
  expect_ok(chiprt_worker_unregister_callable(d->worker, callable_id), "reentrant: unregister");
}

/* Waits for `pid` at most `seconds`, killing it when they pass: its wait status, or -1. */
static int wait_bounded(pid_t pid, int seconds) {
  const struct timespec slice = {0, 10 * 1000 * 1000};
  int status = 0;
  int waited_ms;
  for (waited_ms = 0; waited_ms < seconds * 1000; waited_ms += 10) {
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0) return -1;
    nanosleep(&slice, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

/* fork() after a submitted run: in the child every call on the inherited worker and run handle
 * fails with CHIPRT_INHERITED_WORKER, destroying them waits for nothing, and a worker created in
 * the child runs; the parent's worker and run are untouched. The child reports through its exit
 * status; the parent waits for it with a bound (a hang fails instead of hanging the test). */
static void fork_checks(Device* d, const uint8_t* container, size_t container_size) {
  chiprt_run_handle_t* handle = NULL;
  chiprt_run_report_t report;
  pid_t pid;
  int status;
  require_ok(chiprt_worker_submit(d->worker, kCallableId, d->args, NULL, &handle),
             "fork: submit a run");
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    check(0, "fork failed");
    return;
  }
  if (pid == 0) {
    chiprt_worker_t* fresh = NULL;
    chiprt_worker_options_t options;
    chiprt_buffer_t buffer;
    uint32_t in_flight = 0;
    bool flag = true;
    g_failures = 0;
    expect_code(chiprt_worker_malloc(d->worker, 64, &buffer), CHIPRT_INHERITED_WORKER,
                "child: malloc on the inherited worker");
    expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, NULL, &report),
                CHIPRT_INHERITED_WORKER, "child: run on the inherited worker");
    expect_code(chiprt_worker_submit(d->worker, kCallableId, d->args, NULL, &handle),
                CHIPRT_INHERITED_WORKER, "child: submit on the inherited worker");
    expect_code(chiprt_worker_runs_in_flight(d->worker, &in_flight), CHIPRT_INHERITED_WORKER,
                "child: runs_in_flight of the inherited worker");
    expect_code(chiprt_worker_has_callable(d->worker, kCallableId, &flag), CHIPRT_INHERITED_WORKER,
                "child: has_callable of the inherited worker");
    expect_code(chiprt_worker_copy_from(d->worker, d->got, d->f, d->f.size, 0),
                CHIPRT_INHERITED_WORKER, "child: copy_from on the inherited worker");
    expect_code(chiprt_run_handle_wait(handle, &report), CHIPRT_INHERITED_WORKER,
                "child: wait on the parent's run");
    expect_code(chiprt_run_handle_ready(handle, &flag), CHIPRT_INHERITED_WORKER,
                "child: ready of the parent's run");
    expect_ok(chiprt_run_handle_destroy(handle), "child: destroy the parent's run handle");
    expect_code(chiprt_worker_destroy(d->worker), CHIPRT_INHERITED_WORKER,
                "child: destroy the inherited worker (closes nothing)");
    /* A worker of the child's own: the output of a run on it is checked like the parent's. */
    chiprt_worker_options_init(&options);
    options.sim_memory_bytes = 256ull << 20;
    if (chiprt_worker_create(&fresh) != CHIPRT_OK ||
        chiprt_worker_init(fresh, &options) != CHIPRT_OK) {
      check(0, "child: create and init a new worker");
      print_last_error(stderr);
      _exit(1);
    }
    d->worker = fresh;
    expect_ok(chiprt_worker_register_callable(fresh, kCallableId, container, container_size),
              "child: register on the new worker");
    expect_ok(chiprt_worker_malloc(fresh, sizeof d->host_a, &d->a), "child: malloc a");
    expect_ok(chiprt_worker_malloc(fresh, sizeof d->host_b, &d->b), "child: malloc b");
    expect_ok(chiprt_worker_malloc(fresh, sizeof d->got, &d->f), "child: malloc f");
    expect_ok(chiprt_worker_copy_to(fresh, d->a, d->host_a, sizeof d->host_a, 0), "child: a");
    expect_ok(chiprt_worker_copy_to(fresh, d->b, d->host_b, sizeof d->host_b, 0), "child: b");
    {
      const uint64_t length = kLength;
      chiprt_args_t* args = NULL;
      expect_ok(chiprt_tensor_make(d->a, &length, 1, CHIPRT_DTYPE_F32, 0, &d->ta), "child: ta");
      expect_ok(chiprt_tensor_make(d->b, &length, 1, CHIPRT_DTYPE_F32, 0, &d->tb), "child: tb");
      expect_ok(chiprt_tensor_make(d->f, &length, 1, CHIPRT_DTYPE_F32, 0, &d->tf), "child: tf");
      make_args(d, &d->tf, &args);
      expect_ok(chiprt_worker_run(fresh, kCallableId, args, NULL, &report),
                "child: run on the new worker");
      expect_ok(chiprt_worker_copy_from(fresh, d->got, d->f, d->f.size, 0), "child: copy f back");
      check_output(d->got, d->host_a, d->host_b, "child: the new worker's run");
      chiprt_args_destroy(args);
    }
    expect_ok(chiprt_worker_destroy(fresh), "child: destroy the new worker");
    fflush(NULL);
    _exit(g_failures == 0 ? 0 : 1);
  }
  status = wait_bounded(pid, 60);
  check(status != -1, "fork: the child exited (did not hang)");
  check(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "fork: every check of the child held (status %d)", status);
  expect_ok(chiprt_run_handle_wait(handle, &report), "fork: the parent's run completes");
  expect_ok(chiprt_run_handle_destroy(handle), "fork: destroy the parent's handle");
  run_on(d, CHIPRT_RUNTIME_HOST_BUILD_GRAPH);
}

int main(int argc, char** argv) {
  const char* chip_dir = argc > 1 ? argv[1] : getenv("CHIPRT_CHIP_OBJECT_DIR");
  const char* own_chip_dir = argc > 2 ? argv[2] : NULL; /* tests/c/chip_objects, built */
  static Device device; /* static: the host arrays are large for a stack */
  Device* d = &device;
  chiprt_worker_options_t options;
  uint8_t* container = NULL;
  size_t container_size = 0;
  uint32_t state = 20240501u;
  uint64_t in_use = 0, resets = 0;
  uint32_t in_flight = 0;
  chiprt_buffer_t buffer;
  chiprt_run_report_t report;
  bool flag = false;
  int major = -1, minor = -1, patch = -1;
  char version[64];
  const uint64_t length = kLength;
  size_t i;

  if (chip_dir == NULL) {
    fprintf(stderr,
            "usage: chiprt_capi_test CHIP_OBJECT_DIR (or set CHIPRT_CHIP_OBJECT_DIR) "
            "[OWN_CHIP_OBJECT_DIR]\n");
    return 2;
  }
  printf("chiprt_capi_test: chip objects from %s\n", chip_dir);

  /* Version and names. */
  expect_ok(chiprt_version(&major, &minor, &patch), "chiprt_version");
  snprintf(version, sizeof version, "%d.%d.%d", major, minor, patch);
  check(strcmp(version, chiprt_version_string()) == 0 && major == CHIPRT_C_VERSION_MAJOR &&
            minor == CHIPRT_C_VERSION_MINOR,
        "version %s == chiprt_version_string() %s", version, chiprt_version_string());
  expect_ok(chiprt_version(NULL, NULL, NULL), "chiprt_version with NULL parts");
  check(strcmp(chiprt_status_name(CHIPRT_OK), "Ok") == 0 &&
            strcmp(chiprt_status_name(CHIPRT_INVALID_ARGUMENT), "InvalidArgument") == 0 &&
            strcmp(chiprt_status_name(CHIPRT_CANCELLED), "Cancelled") == 0 &&
            strcmp(chiprt_status_name(1000), "InternalError") == 0,
        "status names match the C++ names");
  check(chiprt_status_hint(CHIPRT_VIEW_OUT_OF_BOUNDS)[0] != '\0' &&
            chiprt_status_detail(CHIPRT_VIEW_OUT_OF_BOUNDS)[0] != '\0',
        "status hint and detail");
  check(strcmp(chiprt_dtype_name(CHIPRT_DTYPE_BF16), "bf16") == 0 &&
            chiprt_dtype_size(CHIPRT_DTYPE_F64) == 8 && chiprt_dtype_size(99) == 0 &&
            strcmp(chiprt_runtime_name(CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER),
                   "tensormap_ringbuffer") == 0 &&
            strcmp(chiprt_dtype_name(-3), "invalid") == 0,
        "dtype and runtime names");
  {
    chiprt_dtype_t dtype = -1;
    chiprt_runtime_t runtime = -1;
    expect_ok(chiprt_parse_dtype("i32", &dtype), "parse dtype \"i32\"");
    check(dtype == CHIPRT_DTYPE_I32, "\"i32\" is CHIPRT_DTYPE_I32");
    expect_code(chiprt_parse_dtype("f128", &dtype), CHIPRT_INVALID_ARGUMENT, "parse \"f128\"");
    expect_ok(chiprt_parse_runtime("host_build_graph", &runtime), "parse runtime");
    check(runtime == CHIPRT_RUNTIME_HOST_BUILD_GRAPH, "\"host_build_graph\" parsed");
  }

  build_container(chip_dir, &container, &container_size);

  /* Wrong order: before init. */
  require_ok(chiprt_worker_create(&d->worker), "chiprt_worker_create");
  expect_ok(chiprt_worker_initialized(d->worker, &flag), "initialized before init");
  check(!flag, "not initialised before init");
  expect_code(chiprt_worker_malloc(d->worker, 64, &buffer), CHIPRT_NOT_INITIALIZED,
              "malloc before init");
  expect_code(chiprt_worker_register_callable(d->worker, kCallableId, container, container_size),
              CHIPRT_NOT_INITIALIZED, "register before init");
  expect_code(chiprt_worker_has_callable(d->worker, kCallableId, &flag), CHIPRT_NOT_INITIALIZED,
              "has_callable before init");
  expect_code(chiprt_worker_runs_in_flight(d->worker, &in_flight), CHIPRT_NOT_INITIALIZED,
              "runs_in_flight before init");
  expect_code(chiprt_worker_run(d->worker, kCallableId, NULL, NULL, &report),
              CHIPRT_NOT_INITIALIZED, "run before init");

  require_ok(chiprt_worker_options_init(&options), "chiprt_worker_options_init");
  check(strcmp(options.platform, "sim") == 0 && options.sim_clusters == 8 &&
            options.runtime == CHIPRT_RUNTIME_HOST_BUILD_GRAPH,
        "option defaults: sim, 8 clusters, host_build_graph");
  options.runtime = 5;
  expect_code(chiprt_worker_init(d->worker, &options), CHIPRT_INVALID_ARGUMENT,
              "init with runtime 5");
  chiprt_worker_options_init(&options);
  options.sim_memory_bytes = 256ull << 20;
  require_ok(chiprt_worker_init(d->worker, &options), "chiprt_worker_init (256 MiB device)");
  expect_ok(chiprt_worker_initialized(d->worker, &flag), "initialized after init");
  check(flag, "initialised after init");
  expect_code(chiprt_worker_init(d->worker, &options), CHIPRT_INVALID_ARGUMENT, "init twice");

  require_ok(chiprt_worker_register_callable(d->worker, kCallableId, container, container_size),
             "register vector_example under id 1");
  expect_ok(chiprt_worker_has_callable(d->worker, kCallableId, &flag), "has_callable 1");
  check(flag, "callable 1 registered");

  /* Inputs. */
  for (i = 0; i < kLength; ++i) {
    d->host_a[i] = next_random(&state);
    d->host_b[i] = next_random(&state);
  }
  require_ok(chiprt_worker_malloc(d->worker, sizeof d->host_a, &d->a), "malloc a");
  require_ok(chiprt_worker_malloc(d->worker, sizeof d->host_b, &d->b), "malloc b");
  require_ok(chiprt_worker_malloc(d->worker, sizeof d->got, &d->f), "malloc f");
  require_ok(chiprt_worker_malloc(d->worker, sizeof d->got, &d->f2), "malloc f2");
  expect_ok(chiprt_worker_device_bytes_in_use(d->worker, &in_use), "device_bytes_in_use");
  check(in_use >= 4 * sizeof d->got, "%llu device bytes in use", (unsigned long long)in_use);
  require_ok(chiprt_worker_copy_to(d->worker, d->a, d->host_a, sizeof d->host_a, 0), "upload a");
  require_ok(chiprt_worker_copy_to(d->worker, d->b, d->host_b, sizeof d->host_b, 0), "upload b");
  require_ok(chiprt_tensor_make(d->a, &length, 1, CHIPRT_DTYPE_F32, 0, &d->ta), "tensor a");
  require_ok(chiprt_tensor_make(d->b, &length, 1, CHIPRT_DTYPE_F32, 0, &d->tb), "tensor b");
  require_ok(chiprt_tensor_make(d->f, &length, 1, CHIPRT_DTYPE_F32, 0, &d->tf), "tensor f");
  require_ok(chiprt_tensor_make(d->f2, &length, 1, CHIPRT_DTYPE_F32, 0, &d->tf2), "tensor f2");
  make_args(d, &d->tf, &d->args);
  make_args(d, &d->tf2, &d->args2);

  run_on(d, CHIPRT_RUNTIME_HOST_BUILD_GRAPH);
  run_on(d, CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER);
  run_pipelined(d);
  fork_checks(d, container, container_size);
  run_with_diagnostics(d);
  named_kernel_checks(d, chip_dir);
  tensor_checks(d);
  misuse_checks(d, container, container_size);
  if (own_chip_dir != NULL) {
    reentrant_close_and_destroy(d, chip_dir, own_chip_dir);
  } else {
    printf(
        "skip  the reentrant close/destroy checks: no directory of the test's own chip objects "
        "(argv[2])\n");
  }

  /* Reset: buffers are lost, callables stay. */
  expect_ok(chiprt_worker_reset(d->worker), "reset");
  expect_ok(chiprt_worker_reset_count(d->worker, &resets), "reset_count");
  check(resets == 1, "reset_count %llu == 1", (unsigned long long)resets);
  expect_code(chiprt_worker_copy_to(d->worker, d->a, d->host_a, 16, 0),
              CHIPRT_INVALID_DEVICE_POINTER, "copy_to a buffer lost in the reset");
  expect_ok(chiprt_worker_has_callable(d->worker, kCallableId, &flag), "has_callable after reset");
  check(flag, "callable 1 still registered after reset");
  expect_ok(chiprt_worker_unregister_callable(d->worker, kCallableId), "unregister 1");

  /* Wrong order: after close. */
  expect_ok(chiprt_worker_close(d->worker), "close");
  expect_ok(chiprt_worker_initialized(d->worker, &flag), "initialized after close");
  check(!flag, "not initialised after close");
  expect_code(chiprt_worker_malloc(d->worker, 64, &buffer), CHIPRT_ALREADY_CLOSED,
              "malloc after close");
  expect_code(chiprt_worker_run(d->worker, kCallableId, d->args, NULL, &report),
              CHIPRT_ALREADY_CLOSED, "run after close");
  expect_code(chiprt_worker_has_callable(d->worker, kCallableId, &flag), CHIPRT_ALREADY_CLOSED,
              "has_callable after close");
  expect_code(chiprt_worker_runs_in_flight(d->worker, &in_flight), CHIPRT_ALREADY_CLOSED,
              "runs_in_flight after close");
  expect_code(chiprt_worker_reset_count(d->worker, &resets), CHIPRT_ALREADY_CLOSED,
              "reset_count after close");
  expect_code(chiprt_worker_device_bytes_in_use(d->worker, &in_use), CHIPRT_ALREADY_CLOSED,
              "device_bytes_in_use after close");
  expect_code(chiprt_worker_init(d->worker, NULL), CHIPRT_ALREADY_CLOSED, "init after close");
  expect_ok(chiprt_worker_close(d->worker), "close twice");
  expect_ok(chiprt_worker_destroy(d->worker), "destroy");
  expect_ok(chiprt_worker_destroy(NULL), "destroy NULL");

  /* A worker destroyed without close closes itself. */
  {
    chiprt_worker_t* worker = NULL;
    require_ok(chiprt_worker_create(&worker), "create a second worker");
    require_ok(chiprt_worker_init(worker, &options), "init it");
    require_ok(chiprt_worker_malloc(worker, 64, &buffer), "malloc on it");
    expect_ok(chiprt_worker_destroy(worker), "destroy it without close");
  }

  chiprt_args_destroy(d->args);
  chiprt_args_destroy(d->args2);
  chiprt_bytes_free(container);

  if (g_failures > 0) {
    fprintf(stderr, "chiprt_capi_test: %d of %d checks FAILED\n", g_failures, g_checks);
    return 1;
  }
  printf("chiprt_capi_test: all %d checks passed\n", g_checks);
  return 0;
}
