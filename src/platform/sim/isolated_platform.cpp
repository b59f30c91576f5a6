#include "platform/sim/isolated_platform.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/signal_text.h"
#include "platform/sim/device_process.h"
#include "platform/sim/futex.h"

namespace chiprt::platform::sim {

// Forwards the device process's stdout and stderr to the host's, line by line, each line prefixed.
// A line longer than IsolatedPlatform::kOutputLineBytes is forwarded in pieces as it comes, each
// piece after the first under the continuation prefix (no newline is added between the pieces),
// so the host holds at most that much of a line however long it gets. One thread, parked in
// poll; it ends when told to stop (a pipe of its own). drain() waits until both pipes reached end
// of file (the device and everything it wrote are gone).
class OutputForwarder {
 public:
  OutputForwarder(int stdout_read, int stderr_read, int stdout_target, int stderr_target,
                  std::string prefix, std::string continuation_prefix,
                  std::atomic<uint64_t>* pending_peak)
      : prefix_(std::move(prefix)),
        continuation_prefix_(std::move(continuation_prefix)),
        pending_peak_(pending_peak) {
    streams_[0].fd = stdout_read;
    streams_[0].target = stdout_target;
    streams_[1].fd = stderr_read;
    streams_[1].target = stderr_target;
    if (pipe2(stop_, O_CLOEXEC) != 0) stop_[0] = stop_[1] = -1;
    thread_ = std::thread([this] { run(); });
  }
  ~OutputForwarder() {
    if (stop_[1] >= 0) {
      const char byte = 0;
      while (::write(stop_[1], &byte, 1) < 0 && errno == EINTR) {
      }
    }
    thread_.join();
    for (Stream& stream : streams_) {
      finish_line(stream);
      ::close(stream.fd);
    }
    for (int fd : stop_) {
      if (fd >= 0) ::close(fd);
    }
  }
  OutputForwarder(const OutputForwarder&) = delete;
  OutputForwarder& operator=(const OutputForwarder&) = delete;

  bool drain(uint64_t timeout_ms) {
    std::unique_lock lock(mutex_);
    return eof_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [&] { return streams_[0].eof && streams_[1].eof; });
  }

 private:
  struct Stream {
    int fd = -1;
    int target = -1;
    std::string pending;     // the part of the current line not forwarded yet
    bool continued = false;  // part of the current line was forwarded already
    bool eof = false;        // guarded by mutex_
  };

  void emit(const Stream& stream, const std::string& text) {
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = ::write(stream.target, text.data() + written, text.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the host's stream is gone: drop the output, never block the device
      written += static_cast<std::size_t>(n);
    }
  }

  const std::string& line_prefix(const Stream& stream) const {
    return stream.continued ? continuation_prefix_ : prefix_;
  }

  void forward(Stream& stream, const char* data, std::size_t bytes) {
    stream.pending.append(data, bytes);
    uint64_t peak = pending_peak_->load(std::memory_order_relaxed);
    while (stream.pending.size() > peak &&
           !pending_peak_->compare_exchange_weak(peak, stream.pending.size(),
                                                 std::memory_order_relaxed)) {
    }
    std::string text;
    std::size_t start = 0;
    for (std::size_t newline; (newline = stream.pending.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      text += line_prefix(stream);
      text.append(stream.pending, start, newline + 1 - start);
      stream.continued = false;
    }
    stream.pending.erase(0, start);
    if (stream.pending.size() >= IsolatedPlatform::kOutputLineBytes) {
      // A long line (binary data, a progress bar redrawn with '\r'): forwarded as it is, its end
      // comes later.
      text += line_prefix(stream);
      text += stream.pending;
      stream.pending.clear();
      stream.continued = true;
    }
    if (!text.empty()) emit(stream, text);
  }

  // At the end of the device's output: a line it left open is ended.
  void finish_line(Stream& stream) {
    if (!stream.pending.empty()) {
      emit(stream, line_prefix(stream) + stream.pending + "\n");
    } else if (stream.continued) {
      emit(stream, "\n");
    }
    stream.pending.clear();
    stream.continued = false;
  }

  void run() {
    char buffer[16384];
    for (;;) {
      pollfd fds[3];
      nfds_t count = 0;
      Stream* polled[2] = {};
      for (Stream& stream : streams_) {
        bool eof = false;
        {
          std::lock_guard lock(mutex_);
          eof = stream.eof;
        }
        if (eof) continue;
        polled[count] = &stream;
        fds[count++] = {stream.fd, POLLIN, 0};
      }
      const nfds_t stop_index = count;
      fds[count++] = {stop_[0], POLLIN, 0};
      if (::poll(fds, count, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      for (nfds_t i = 0; i < stop_index; ++i) {
        if (fds[i].revents == 0) continue;
        Stream& stream = *polled[i];
        const ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n > 0) {
          forward(stream, buffer, static_cast<std::size_t>(n));
          continue;
        }
        finish_line(stream);
        std::lock_guard lock(mutex_);
        stream.eof = true;
        eof_cv_.notify_all();
      }
      if (fds[stop_index].revents != 0 || stop_[0] < 0) return;
    }
  }

  const std::string prefix_;
  const std::string continuation_prefix_;
  std::atomic<uint64_t>* const pending_peak_;
  Stream streams_[2];
  int stop_[2] = {-1, -1};
  std::mutex mutex_;
  std::condition_variable eof_cv_;
  std::thread thread_;
};

namespace {

// Replies to ordinary commands come within microseconds; a budget only bounds a device that
// stopped answering.
constexpr uint64_t kCommandBudgetMs = 10'000;
// Added to a command's own timeout (wait, stop) for its reply to arrive.
constexpr uint64_t kReplyMarginMs = 5'000;
// The host waits for a reply in slices this long, checking between them that the device lives.
constexpr int64_t kReplySliceNs = 2'000'000;
// A device that recorded a fault is dying; how long it may take before it is killed.
constexpr uint64_t kDyingGraceMs = 2'000;
// How long the output of a dead device may take to reach the host's streams.
constexpr uint64_t kDrainMs = 1'000;

// Device ranges of every device this process started (addresses only; nothing stays mapped), so
// a new device never hands out an address an earlier one did: a buffer lost in a reset stays
// refused however many resets later (the host's lost-buffer history needs the address unused).
std::mutex g_used_ranges_mutex;
std::vector<std::pair<uintptr_t, uintptr_t>> g_used_ranges;

bool overlaps_used_range(uintptr_t start, uint64_t bytes) {
  for (const auto& [used_start, used_end] : g_used_ranges) {
    if (start < used_end && used_start < start + bytes) return true;
  }
  return false;
}

// Reserves `bytes` of address space (PROT_NONE) that no earlier device range overlaps. Ranges the
// kernel offers that do overlap stay reserved while it is asked again, so it offers others.
// With a fork server, the range must be free there too (reserved there for the devices it starts);
// a server that cannot answer any more ends the search with its error in *server_error.
void* reserve_fresh_device_range(uint64_t bytes, ForkServer* server, Status* server_error) {
  std::lock_guard<std::mutex> lock(g_used_ranges_mutex);
  std::vector<void*> refused;
  void* chosen = MAP_FAILED;
  // Refused offers stay reserved, so they do not overlap each other: a used range of L bytes
  // refuses at most L / bytes + 2 of them (the hole a larger earlier device left takes many).
  std::size_t attempts = 8;
  for (const auto& [used_start, used_end] : g_used_ranges) {
    attempts += (used_end - used_start) / bytes + 2;
  }
  for (std::size_t attempt = 0; attempt < attempts; ++attempt) {
    void* range =
        mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) break;
    if (!overlaps_used_range(reinterpret_cast<uintptr_t>(range), bytes)) {
      Status reserved = server == nullptr
                            ? Status::ok()
                            : server->reserve(reinterpret_cast<uintptr_t>(range), bytes);
      if (reserved) {
        chosen = range;
        break;
      }
      if (reserved.code() !=
          StatusCode::InvalidArgument) {  // not "in use there": the server is gone
        *server_error = std::move(reserved);
        refused.push_back(range);
        break;
      }
    }
    refused.push_back(range);
  }
  for (void* range : refused) munmap(range, bytes);
  if (chosen != MAP_FAILED) {
    const auto start = reinterpret_cast<uintptr_t>(chosen);
    g_used_ranges.emplace_back(start, start + bytes);
  }
  return chosen;
}

// The host's views of every isolated device's memory that lives in this process, for the device
// processes started later to unmap (DeviceProcessStart::foreign_views). The mutex is held from the
// snapshot over the fork, so that no view made meanwhile escapes it.
std::mutex g_host_views_mutex;
std::vector<DeviceProcessStart::HostView> g_host_views;

void add_host_view(void* start, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(g_host_views_mutex);
  g_host_views.push_back({start, bytes});
}

void remove_host_view(void* start) noexcept {
  std::lock_guard<std::mutex> lock(g_host_views_mutex);
  std::erase_if(g_host_views, [&](const auto& view) { return view.start == start; });
}

// Whether child `pid` exited, within `timeout_ms` (it stays unreaped).
bool exits_within(pid_t pid, uint64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      return errno == ECHILD;
    }
    if (info.si_pid == pid) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The first child of process `pid` in /proc (pids of this process's namespace); -1 if none.
pid_t first_child_of(pid_t pid) {
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
  pid_t child = -1;
  if (!(children >> child)) return -1;
  return child;
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

bool has_fault_address(int signal, int code) {
  // Only the kernel's own reports (si_code > 0) carry an address; a kill() does not.
  return code > 0 &&
         (signal == SIGSEGV || signal == SIGBUS || signal == SIGILL || signal == SIGFPE);
}

std::string summary(const DeviceFault& fault) {
  std::string text = "the device process (pid " + std::to_string(fault.pid) + ")";
  switch (fault.kind) {
    case DeviceFault::Kind::Signal:
      text += " died of " + common::signal_text(fault.signal);
      if (fault.has_fault_addr) text += " at " + hex(fault.fault_addr);
      break;
    case DeviceFault::Kind::Exit:
      text += " exited with code " + std::to_string(fault.exit_code);
      break;
    case DeviceFault::Kind::Killed:
      return text + " was killed by the host: " + fault.reason;
    case DeviceFault::Kind::None:
      return text + " is running";
  }
  if (fault.context_known) {
    common::RunContext context;
    context.role = fault.role;
    context.func_id = fault.func_id;
    context.task = fault.task_id;
    context.unit = fault.unit;
    text += " in " + common::describe(context);
  } else {
    text += " without recording what it was running";
  }
  return text;
}

}  // namespace

IsolatedPlatform::IsolatedPlatform(const SimOptions& options, const IsolationTuning& tuning,
                                   std::shared_ptr<ForkServer> server)
    : SimPlatformBase(options, tuning.sim),
      tuning_(tuning),
      server_(std::move(server)),
      host_objects_(std::make_unique<ObjectLoader>()) {
  throw_if_error(make_region(options.memory_bytes, server_.get(), &region_));
  memory_ = region_memory(region_, options.memory_bytes);
}

std::shared_ptr<DeviceMemory> IsolatedPlatform::region_memory(const Region& region,
                                                              uint64_t memory_bytes) {
  return std::make_shared<DeviceMemory>(DeviceRegion{
      region.host_view + kDeviceChannelBytes,
      reinterpret_cast<uint64_t>(region.device_view) + kDeviceChannelBytes, memory_bytes});
}

IsolatedPlatform::~IsolatedPlatform() {
  end_device(/*graceful=*/true);
  memory_.reset();
  release_region(&region_);
}

Status IsolatedPlatform::make_region(uint64_t memory_bytes, ForkServer* server, Region* out) {
  const uint64_t bytes = kDeviceChannelBytes + memory_bytes;
  Region region;
  region.bytes = bytes;
  auto failed = [&](const char* what) {
    const int error = errno;
    release_region(&region);
    return Status(StatusCode::InternalError,
                  std::string("isolated sim: ") + what + " for " + std::to_string(bytes) +
                      " bytes of device memory failed: " + std::strerror(error));
  };
  region.memfd = memfd_create("chiprt-device-memory", MFD_CLOEXEC);
  if (region.memfd < 0) return failed("memfd_create");
  if (ftruncate(region.memfd, static_cast<off_t>(bytes)) != 0) return failed("ftruncate");
  void* host = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, region.memfd, 0);
  if (host == MAP_FAILED) return failed("mapping the memory file");
  region.host_view = static_cast<uint8_t*>(host);
  add_host_view(host, bytes);
  Status server_error;
  void* device = reserve_fresh_device_range(bytes, server, &server_error);
  if (!server_error) {
    release_region(&region);
    return Status(server_error.code(),
                  "isolated sim: reserving the device range: " + server_error.message());
  }
  if (device == MAP_FAILED) return failed("reserving a device range no earlier device used");
  region.device_view = static_cast<uint8_t*>(device);
  auto* channel = new (region.host_view) DeviceChannel();
  channel->magic = kDeviceChannelMagic;
  channel->version = kDeviceChannelVersion;
  *out = region;
  return Status::ok();
}

void IsolatedPlatform::release_region(Region* region) noexcept {
  if (region->host_view != nullptr) {
    remove_host_view(region->host_view);
    munmap(region->host_view, region->bytes);
  }
  if (region->device_view != nullptr) munmap(region->device_view, region->bytes);
  if (region->memfd >= 0) ::close(region->memfd);
  *region = Region{};
}

// --- the device process ------------------------------------------------------------------------

Status IsolatedPlatform::start_fork_server(std::shared_ptr<ForkServer>* out) {
  // Under the views' lock until the fork, so the server's list is exactly what it inherits.
  std::lock_guard<std::mutex> lock(g_host_views_mutex);
  return ForkServer::start(g_host_views, out);
}

Status IsolatedPlatform::fork_device(DeviceProcessStart* start, pid_t* pid) {
  // The views are listed and the fork made under one lock, so no view made meanwhile escapes.
  std::unique_lock<std::mutex> views_lock(g_host_views_mutex);
  for (const DeviceProcessStart::HostView& view : g_host_views) {
    if (view.start == region_.host_view) continue;  // unmapped as its own
    if (start->foreign_view_count == DeviceProcessStart::kMaxForeignViews) {
      return Status(StatusCode::UnsupportedFeature,
                    "more than " + std::to_string(DeviceProcessStart::kMaxForeignViews) +
                        " other isolated devices' memories are mapped in this process (the sim "
                        "starts a device process beside at most that many); destroy one first");
    }
    start->foreign_views[start->foreign_view_count++] = view;
  }
  // The device's init becomes pid 1 of a pid namespace of its own where this process may create
  // one (CAP_SYS_ADMIN): unshare(CLONE_NEWPID) affects the children this thread forks next, so
  // the thread's own namespace for children is restored right after the fork. Refused (an
  // unprivileged process), the init is a subreaper instead (device_process.h).
  int restore_ns = -1;
  if (tuning_.pid_namespace && start->host_pidfd >= 0) {
    restore_ns = ::open("/proc/thread-self/ns/pid_for_children", O_RDONLY | O_CLOEXEC);
    if (restore_ns >= 0 && unshare(CLONE_NEWPID) != 0) {
      ::close(restore_ns);
      restore_ns = -1;
    }
  }
  start->pid_namespace = restore_ns >= 0;
  *pid = fork();
  if (*pid == 0) run_device_init(*start);
  const int fork_error = errno;
  views_lock.unlock();
  int restore_error = 0;
  if (restore_ns >= 0) {
    if (setns(restore_ns, CLONE_NEWPID) != 0) restore_error = errno;
    ::close(restore_ns);
  }
  if (*pid < 0) {
    return Status(StatusCode::InternalError,
                  std::string("starting the device process failed: ") + std::strerror(fork_error));
  }
  if (restore_error != 0) {
    kill(*pid, SIGKILL);  // pid 1 of its namespace: the device ends with it
    while (waitpid(*pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    *pid = -1;
    return Status(StatusCode::InternalError,
                  std::string("restoring this thread's pid namespace after starting the device "
                              "failed: ") +
                      std::strerror(restore_error));
  }
  return Status::ok();
}

Status IsolatedPlatform::ensure_device(const char* operation) {
  if (dead_) return dead_status(operation);
  if (pid_ > 0) return Status::ok();
  // No thread of this platform runs at a fork (the forwarder belongs to a device process and
  // ends with it), and unflushed host output must not be written twice.
  std::fflush(nullptr);
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return Status(StatusCode::InternalError,
                  std::string(operation) +
                      ": creating the device's output pipes failed: " + std::strerror(error));
  }
  DeviceProcessStart start;
  start.host_pid = getpid();
  // The device's processes watch this process through a pidfd (a pid would name nothing in a pid
  // namespace of their own).
  const int host_pidfd = static_cast<int>(syscall(SYS_pidfd_open, start.host_pid, 0));
  start.host_pidfd = host_pidfd;
  start.memfd = region_.memfd;
  start.host_view = region_.host_view;
  start.device_view = region_.device_view;
  start.bytes = region_.bytes;
  start.stdout_write = out_pipe[1];
  start.stderr_write = err_pipe[1];
  start.engine = engine_options_;
  pid_t pid = -1;
  Status started;
  if (server_ != nullptr) {
    bool pid_namespace = tuning_.pid_namespace && host_pidfd >= 0;
    started = server_->spawn(start, &pid, &pid_namespace);
    start.pid_namespace = pid_namespace;
  } else {
    started = fork_device(&start, &pid);
  }
  if (host_pidfd >= 0) ::close(host_pidfd);
  // Also here, so the group exists before the host may end it (whichever runs first wins).
  if (pid > 0) setpgid(pid, pid);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (!started) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return Status(started.code(), std::string(operation) + ": " + started.message());
  }
  pid_ = pid;
  pid_namespace_ = start.pid_namespace;
  device_pid_ = -1;
  const std::string device = std::to_string(attached_device_.value_or(0));
  forwarder_ = std::make_unique<OutputForwarder>(
      out_pipe[0], err_pipe[0], tuning_.stdout_fd, tuning_.stderr_fd,
      "[chiprt device " + device + "] ", "[chiprt device " + device + "+] ", &output_line_peak_);
  DeviceChannel* ch = channel();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kCommandBudgetMs);
  while (ch->ready.load(std::memory_order_acquire) == 0) {
    if (!device_alive()) {
      settle_death({});
      return dead_status(operation);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      (void)kill_device("the device process did not start within " +
                        std::to_string(kCommandBudgetMs) + " ms");
      return dead_status(operation);
    }
    futex_wait(&ch->ready, 0, kReplySliceNs, FutexScope::Shared);
  }
  services_ = ch->services;
  // The device process, for messages and debuggers: the init's only child so far (the device's
  // own getpid() counts in its namespace). Without a namespace a pidfd of it lets the host end
  // it should the init die first.
  device_pid_ = pid_namespace_ ? first_child_of(pid_) : static_cast<pid_t>(ch->device_pid);
  if (!pid_namespace_ && device_pid_ > 0) {
    device_pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, device_pid_, 0));
  }
  return Status::ok();
}

void IsolatedPlatform::kill_device_tree() {
  if (!pid_namespace_) {
    // The init (their subreaper) kills the device process, then every descendant it left, and
    // exits; killed itself first, it would hand them to the system's init.
    kill(pid_, SIGTERM);
    (void)exits_within(pid_, kDyingGraceMs);
    // The init died before the device (a kernel can signal its parent here).
    if (device_pidfd_ >= 0) syscall(SYS_pidfd_send_signal, device_pidfd_, SIGKILL, nullptr, 0);
  }
  // In a pid namespace the kernel ends every process in it when its init dies.
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
}

bool IsolatedPlatform::device_alive() {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  const int waited = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  if (waited == 0 && info.si_pid == pid_) {
    // Dead but unreaped: whatever it forked dies with it, then it is reaped.
    kill_device_tree();
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped(status, {});
    return false;
  }
  if (waited != 0 && errno == ECHILD) {
    // Someone else reaped it (a SIGCHLD handler of the application's): it is gone, its end
    // status with it; the record still says what it was doing.
    reaped(0, {});
    return false;
  }
  return true;
}

void IsolatedPlatform::reaped(int init_status, const std::string& kill_reason) {
  DeviceFault fault;
  fault.pid = device_pid();
  const DeviceChannel* ch = channel();
  // How the device process ended, as its init reaped it; the init's own end when it died first.
  const int wait_status =
      ch->device_reaped.load(std::memory_order_acquire) != 0 ? ch->device_wait_status : init_status;
  const bool recorded = ch->fault_state.load(std::memory_order_acquire) == 2;
  const DeviceEndRecord& end = ch->end;
  if (!kill_reason.empty()) {
    fault.kind = DeviceFault::Kind::Killed;
    fault.signal = SIGKILL;
    fault.reason = kill_reason;
  } else if (WIFSIGNALED(wait_status)) {
    fault.kind = DeviceFault::Kind::Signal;
    fault.signal = WTERMSIG(wait_status);
  } else {
    fault.kind = DeviceFault::Kind::Exit;
    fault.exit_code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 0;
  }
  if (recorded && fault.kind != DeviceFault::Kind::Killed) {
    if (end.kind == DeviceEndKind::Signal && end.signal == fault.signal) {
      fault.signal_code = end.signal_code;
      fault.has_fault_addr = has_fault_address(end.signal, end.signal_code);
      fault.fault_addr = fault.has_fault_addr ? end.fault_addr : 0;
    }
    fault.context_known = true;
    fault.role = static_cast<common::RunRole>(end.role);
    fault.func_id = end.func_id;
    fault.task_id = end.task_id;
    fault.unit = end.unit;
  }
  // A device the host shut down or replaced is no fault.
  fault_ = shutting_down_ ? DeviceFault{} : fault;
  dead_ = !shutting_down_;
  pid_ = -1;
  device_pid_ = -1;
  if (device_pidfd_ >= 0) ::close(device_pidfd_);
  device_pidfd_ = -1;
  services_ = {};
}

void IsolatedPlatform::settle_death(const std::string& kill_reason) {
  if (pid_ > 0) {
    // It recorded a fault (or stopped answering): it is about to die; give it a moment.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kDyingGraceMs);
    while (device_alive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (pid_ > 0) {
      kill_device_tree();
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped(status, kill_reason);
    }
  }
  // A kernel's last printf reaches the host's streams before the fault is reported.
  if (forwarder_) {
    forwarder_->drain(kDrainMs);
    forwarder_.reset();
  }
}

void IsolatedPlatform::end_device(bool graceful) {
  shutting_down_ = true;
  if (pid_ > 0 && graceful) {
    DeviceChannel* ch = channel();
    ch->command = DeviceCommand::Shutdown;
    ch->command_seq.store(++seq_, std::memory_order_release);
    futex_wake(&ch->command_seq, INT_MAX, FutexScope::Shared);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(tuning_.shutdown_grace_ms);
    while (device_alive() && std::chrono::steady_clock::now() < deadline) {
      futex_wait(&ch->reply_seq, ch->reply_seq.load(), kReplySliceNs, FutexScope::Shared);
    }
  }
  if (pid_ > 0) {
    kill_device_tree();
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped(status, {});
  }
  if (forwarder_) {
    forwarder_->drain(kDrainMs);
    forwarder_.reset();
  }
  shutting_down_ = false;
}

Status IsolatedPlatform::dead_status(const char* operation) const {
  const StatusCode code = fault_.kind == DeviceFault::Kind::Killed ? StatusCode::DeviceFaulted
                                                                   : StatusCode::KernelCrashed;
  return Status(code,
                std::string(operation) + ": " + summary(fault_) + "; reset the device to continue");
}

Status IsolatedPlatform::call(DeviceCommand command, const char* operation, uint64_t budget_ms) {
  DeviceChannel* ch = channel();
  const uint32_t seq = ++seq_;
  ch->command = command;
  ch->command_seq.store(seq, std::memory_order_seq_cst);
  if (ch->server_parked.load(std::memory_order_seq_cst) != 0) {
    futex_wake(&ch->command_seq, INT_MAX, FutexScope::Shared);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(std::min<uint64_t>(budget_ms, INT32_MAX));
  for (;;) {
    const uint32_t observed = ch->reply_seq.load(std::memory_order_acquire);
    if (observed == seq) {
      ch->reply_message[kChannelMessageBytes - 1] = '\0';
      return Status(static_cast<StatusCode>(ch->reply_code), ch->reply_message);
    }
    if (ch->fault_state.load(std::memory_order_acquire) != 0 || !device_alive()) {
      settle_death({});
      return dead_status(operation);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      (void)kill_device(std::string("the device process did not answer ") + operation + " within " +
                        std::to_string(budget_ms) + " ms");
      return dead_status(operation);
    }
    ch->host_parked.store(1, std::memory_order_seq_cst);
    if (ch->reply_seq.load(std::memory_order_seq_cst) == observed) {
      futex_wait(&ch->reply_seq, observed, kReplySliceNs, FutexScope::Shared);
    }
    ch->host_parked.store(0, std::memory_order_relaxed);
  }
}

Status IsolatedPlatform::kill_device(const std::string& reason) {
  if (dead_) return Status::ok();  // the first end is the one reported
  if (pid_ > 0) {
    kill_device_tree();
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped(status, reason);
    settle_death(reason);
    return Status::ok();
  }
  // No device process runs yet: the device is as dead as one that was killed.
  fault_ = DeviceFault{};
  fault_.kind = DeviceFault::Kind::Killed;
  fault_.signal = SIGKILL;
  fault_.reason = reason;
  dead_ = true;
  return Status::ok();
}

Status IsolatedPlatform::reset_device() {
  end_device(/*graceful=*/false);
  host_objects_ = std::make_unique<ObjectLoader>();  // every loaded object is gone, host ones too
  // The new device range is reserved before the old one is released, so no old device address
  // ever names memory of the new device.
  Region fresh;
  if (Status status = make_region(options_.memory_bytes, server_.get(), &fresh); !status)
    return status;
  memory_ = region_memory(fresh, options_.memory_bytes);
  release_region(&region_);
  region_ = fresh;
  dead_ = false;
  fault_ = DeviceFault{};
  services_ = {};
  seq_ = 0;
  return Status::ok();
}

// --- commands ----------------------------------------------------------------------------------

Status IsolatedPlatform::load_chip_runtime() {
  if (Status status = ensure_device("load_chip_runtime"); !status) return status;
  // The device process is forked from this image: the linked entries are valid there.
  chip_runtime_ = linked_chip_runtime();
  return Status::ok();
}

Status IsolatedPlatform::start_streams() {
  if (Status status = ensure_device("start_streams"); !status) return status;
  return call(DeviceCommand::StartStreams, "start_streams", kCommandBudgetMs);
}

void IsolatedPlatform::stop_streams() {
  if (dead_ || pid_ <= 0) return;
  (void)call(DeviceCommand::StopStreams, "stop_streams",
             saturating_add(2 * tuning_.sim.stop_grace_ms, kReplyMarginMs));
}

Status IsolatedPlatform::launch(const LaunchRequest& request) {
  LaunchPrograms programs;
  if (Status status = chip_runtime_launch(chip_runtime_, request, &programs); !status) {
    return status;
  }
  return send_launch(programs);
}

Status IsolatedPlatform::launch_programs(const LaunchPrograms& programs) {
  return send_launch(programs);
}

Status IsolatedPlatform::send_launch(const LaunchPrograms& programs) {
  if (Status status = ensure_device("launch"); !status) return status;
  DeviceChannel* ch = channel();
  ch->ctx = reinterpret_cast<uint64_t>(programs.ctx);
  ch->aicpu_entry = reinterpret_cast<uint64_t>(programs.aicpu_entry);
  ch->core_service = reinterpret_cast<uint64_t>(programs.core_service);
  ch->aicpu_threads = programs.aicpu_threads;
  ch->cores = programs.cores;
  ch->serial = programs.serial ? 1 : 0;
  return call(DeviceCommand::Launch, "launch", kCommandBudgetMs);
}

Status IsolatedPlatform::wait(uint64_t timeout_ms) {
  if (Status status = ensure_device("wait"); !status) return status;
  channel()->timeout_ms = timeout_ms;
  return call(DeviceCommand::Wait, "wait", saturating_add(timeout_ms, kReplyMarginMs));
}

Status IsolatedPlatform::wait_aicpu(uint64_t timeout_ms) {
  if (Status status = ensure_device("wait_aicpu"); !status) return status;
  channel()->timeout_ms = timeout_ms;
  return call(DeviceCommand::WaitAicpu, "wait_aicpu", saturating_add(timeout_ms, kReplyMarginMs));
}

void IsolatedPlatform::abandon_launch() {
  if (dead_ || pid_ <= 0) return;
  (void)call(DeviceCommand::AbandonLaunch, "abandon_launch", kCommandBudgetMs);
}

Status IsolatedPlatform::recover() {
  if (dead_) return dead_status("recover");
  if (pid_ <= 0) return Status::ok();  // no device process yet: nothing ran
  return call(DeviceCommand::Recover, "recover", kCommandBudgetMs);
}

Status IsolatedPlatform::load_object(std::span<const uint8_t> image, LoadedObject* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "load_object: out must not be null");
  }
  if (image.empty()) {
    return Status(StatusCode::InvalidArgument, "load_object: the object image is empty (0 bytes)");
  }
  if (Status status = ensure_device("load_object"); !status) return status;
  // The image travels through device memory: staged, loaded by the device, released.
  DeviceBuffer staging;
  if (Status status = memory_->alloc(image.size(), 64, &staging); !status) {
    return Status(status.code(), "load_object: staging the " + std::to_string(image.size()) +
                                     "-byte image in device memory failed: " + status.message());
  }
  Status status = memory_->copy_to_device(staging.addr, image.data(), image.size());
  if (status.is_ok()) {
    DeviceChannel* ch = channel();
    ch->image_addr = staging.addr;
    ch->image_bytes = image.size();
    status = call(DeviceCommand::LoadObject, "load_object", kCommandBudgetMs);
    if (status.is_ok()) out->handle = ch->reply_value;
  }
  (void)memory_->free(staging.addr);
  return status;
}

Status IsolatedPlatform::resolve_symbol(LoadedObject object, const char* symbol, uint64_t* addr) {
  if (symbol == nullptr || addr == nullptr) {
    return Status(StatusCode::InvalidArgument, "resolve_symbol: symbol and out must not be null");
  }
  const std::size_t length = std::strlen(symbol);
  if (length >= kChannelSymbolBytes) {
    return Status(StatusCode::InvalidArgument,
                  "resolve_symbol: the symbol name is " + std::to_string(length) +
                      " characters; at most " + std::to_string(kChannelSymbolBytes - 1) +
                      " are supported");
  }
  if (Status status = ensure_device("resolve_symbol"); !status) return status;
  DeviceChannel* ch = channel();
  ch->handle = object.handle;
  std::memcpy(ch->symbol, symbol, length + 1);
  Status status = call(DeviceCommand::ResolveSymbol, "resolve_symbol", kCommandBudgetMs);
  if (status.is_ok()) *addr = ch->reply_value;
  return status;
}

Status IsolatedPlatform::load_host_object(std::span<const uint8_t> image, LoadedObject* out) {
  if (out == nullptr) {
    return Status(StatusCode::InvalidArgument, "load_host_object: out must not be null");
  }
  return host_objects_->load(image, &out->handle);
}

Status IsolatedPlatform::resolve_host_symbol(LoadedObject object, const char* symbol,
                                             uint64_t* addr) {
  return host_objects_->resolve(object.handle, symbol, addr);
}

Status IsolatedPlatform::unload_host_object(LoadedObject object) {
  return host_objects_->unload(object.handle);
}

Status IsolatedPlatform::unload_object(LoadedObject object) {
  if (Status status = ensure_device("unload_object"); !status) return status;
  channel()->handle = object.handle;
  return call(DeviceCommand::UnloadObject, "unload_object", kCommandBudgetMs);
}

}  // namespace chiprt::platform::sim
