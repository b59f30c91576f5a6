#include "platform/sim/device_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include "common/run_context.h"
#include "platform/sim/futex.h"
#include "platform/sim/object_loader.h"

namespace chiprt::platform::sim {
namespace {

// The device process's control block (its own mapping); set once before any handler can run.
DeviceChannel* g_channel = nullptr;

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
// Big enough for the handler (a few hundred bytes of frame) and for sanitizer runtimes.
constexpr std::size_t kAltStackBytes = 64 * 1024;
// How often the idle server looks whether the host still lives (watch_host does the work; this
// covers a system without pidfds).
constexpr int64_t kIdleCheckNs = 1'000'000'000;

// Async-signal-safe: atomics, plain stores, raw system calls.
void record_end(DeviceEndKind kind, int signal, int code, uint64_t addr, int exit_code) noexcept {
  DeviceChannel* channel = g_channel;
  if (channel == nullptr) return;
  uint32_t expected = 0;
  if (channel->fault_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    DeviceEndRecord& end = channel->end;
    end.kind = kind;
    end.signal = signal;
    end.signal_code = code;
    end.exit_code = exit_code;
    end.fault_addr = addr;
    end.tid = static_cast<int32_t>(syscall(SYS_gettid));
    const common::RunContext& context = common::t_run_context;
    end.role = static_cast<uint32_t>(context.role);
    end.func_id = context.func_id;
    end.unit = context.unit;
    end.task_id = context.task;
    channel->fault_state.store(2, std::memory_order_release);
  }
  // A host waiting for a reply looks at the record (and the process) when woken.
  futex_wake(&channel->reply_seq, INT_MAX, FutexScope::Shared);
}

void on_fault(int signal, siginfo_t* info, void*) {
  record_end(DeviceEndKind::Signal, signal, info != nullptr ? info->si_code : 0,
             info != nullptr ? reinterpret_cast<uint64_t>(info->si_addr) : 0, 0);
  // Die of the signal itself, so the host's waitpid sees it: the default action, re-raised (a
  // faulting instruction would also fault again on return).
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  raise(signal);
}

// exit() from chip code (a kernel, an orchestration function): recorded, then the process ends
// at once, so the host's atexit handlers and static destructors (inherited with the fork) never
// run here. The device's own shutdown uses _exit and never gets here.
void on_device_exit(int status, void*) {
  record_end(DeviceEndKind::Exit, 0, 0, 0, status);
  std::fflush(nullptr);
  _exit(status);
}

// An alternate signal stack for the calling thread, released when the thread exits, so a stack
// overflow is recorded too.
struct AltStack {
  void* memory = nullptr;
  AltStack() {
    memory =
        mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
      memory = nullptr;
      return;
    }
    stack_t stack{};
    stack.ss_sp = memory;
    stack.ss_size = kAltStackBytes;
    sigaltstack(&stack, nullptr);
  }
  ~AltStack() {
    if (memory == nullptr) return;
    stack_t disable{};
    disable.ss_flags = SS_DISABLE;
    sigaltstack(&disable, nullptr);
    munmap(memory, kAltStackBytes);
  }
};

void install_alt_stack() {
  thread_local AltStack stack;
  (void)stack;
}

void install_fault_recorders() {
  struct sigaction action {};
  action.sa_sigaction = &on_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigset_t fault_signals;
  sigemptyset(&fault_signals);
  for (int signal : kFaultSignals) {
    sigaction(signal, &action, nullptr);
    sigaddset(&fault_signals, signal);
  }
  // The forking thread's mask is inherited (and passed on to the chip threads): a blocked
  // synchronous fault signal would kill the process without a record.
  pthread_sigmask(SIG_UNBLOCK, &fault_signals, nullptr);
  on_exit(&on_device_exit, nullptr);
  install_alt_stack();
}

void reply(DeviceChannel* channel, uint32_t seq, const Status& status, uint64_t value = 0) {
  channel->reply_code = static_cast<int32_t>(status.code());
  channel->reply_value = value;
  const std::string& message = status.message();
  const std::size_t length = std::min(message.size(), kChannelMessageBytes - 1);
  std::memcpy(channel->reply_message, message.data(), length);
  channel->reply_message[length] = '\0';
  channel->reply_seq.store(seq, std::memory_order_seq_cst);
  if (channel->host_parked.load(std::memory_order_seq_cst) != 0) {
    futex_wake(&channel->reply_seq, INT_MAX, FutexScope::Shared);
  }
}

// The next command's sequence number (!= seen), slept for on the futex at once: polling with
// sched_yield would keep the server runnable, so on a loaded host the host's command would wait
// for the next scheduler tick (4 ms) instead of waking it. The device ends once its parent (the
// init) is no longer `parent`.
uint32_t next_command(DeviceChannel* channel, uint32_t seen, pid_t parent) {
  for (;;) {
    uint32_t seq = channel->command_seq.load(std::memory_order_acquire);
    if (seq != seen) return seq;
    channel->server_parked.store(1, std::memory_order_seq_cst);
    seq = channel->command_seq.load(std::memory_order_seq_cst);
    if (seq == seen) futex_wait(&channel->command_seq, seen, kIdleCheckNs, FutexScope::Shared);
    channel->server_parked.store(0, std::memory_order_relaxed);
    if (getppid() != parent) _exit(0);
  }
}

template <typename T>
T* pointer(uint64_t value) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(value));
}

[[noreturn]] void serve(DeviceChannel* channel, const DeviceProcessStart& start, pid_t parent) {
  LaunchEngine::Options options = start.engine;
  options.park_scope = FutexScope::Shared;
  options.thread_start = &install_alt_stack;
  // Never destroyed: the process ends with _exit.
  auto* engine = new std::shared_ptr<LaunchEngine>(std::make_shared<LaunchEngine>(options));
  auto* objects = new ObjectLoader();
  // Read before `ready`: the host may send the first command the moment it sees it.
  uint32_t seen = channel->command_seq.load(std::memory_order_acquire);
  channel->services = (*engine)->services();
  channel->device_pid = static_cast<uint32_t>(getpid());
  channel->ready.store(1, std::memory_order_release);
  futex_wake(&channel->ready, INT_MAX, FutexScope::Shared);

  for (;;) {
    const uint32_t seq = next_command(channel, seen, parent);
    seen = seq;
    LaunchEngine& chip = **engine;
    switch (channel->command) {
      case DeviceCommand::StartStreams:
        reply(channel, seq, chip.start());
        break;
      case DeviceCommand::StopStreams:
        chip.stop();
        reply(channel, seq, Status::ok());
        break;
      case DeviceCommand::Launch: {
        LaunchPrograms programs;
        programs.ctx = pointer<void>(channel->ctx);
        programs.aicpu_entry = reinterpret_cast<decltype(programs.aicpu_entry)>(
            static_cast<uintptr_t>(channel->aicpu_entry));
        programs.core_service = reinterpret_cast<decltype(programs.core_service)>(
            static_cast<uintptr_t>(channel->core_service));
        programs.aicpu_threads = channel->aicpu_threads;
        programs.cores = channel->cores;
        programs.serial = channel->serial != 0;
        reply(channel, seq, chip.launch(programs));
        break;
      }
      case DeviceCommand::Wait:
        reply(channel, seq, chip.wait(channel->timeout_ms));
        break;
      case DeviceCommand::WaitAicpu:
        reply(channel, seq, chip.wait_aicpu(channel->timeout_ms));
        break;
      case DeviceCommand::AbandonLaunch:
        chip.abandon_launch();
        reply(channel, seq, Status::ok());
        break;
      case DeviceCommand::Recover:
        reply(channel, seq, chip.recover());
        break;
      case DeviceCommand::LoadObject: {
        uint64_t handle = 0;
        const std::span<const uint8_t> image(pointer<const uint8_t>(channel->image_addr),
                                             channel->image_bytes);
        const Status status = objects->load(image, &handle);
        reply(channel, seq, status, handle);
        break;
      }
      case DeviceCommand::ResolveSymbol: {
        uint64_t addr = 0;
        channel->symbol[kChannelSymbolBytes - 1] = '\0';
        const Status status = objects->resolve(channel->handle, channel->symbol, &addr);
        reply(channel, seq, status, addr);
        break;
      }
      case DeviceCommand::UnloadObject:
        reply(channel, seq, objects->unload(channel->handle));
        break;
      case DeviceCommand::Shutdown:
        std::fflush(nullptr);
        reply(channel, seq, Status::ok());
        _exit(0);
      case DeviceCommand::None:
      default:
        reply(channel, seq,
              Status(StatusCode::InternalError,
                     "device process: unknown command " +
                         std::to_string(static_cast<uint32_t>(channel->command))));
        break;
    }
  }
}

// The device never outlives the host process. Not PR_SET_PDEATHSIG: it fires when the host
// *thread* that forked ends, so a Worker initialised or reset on a thread that then exits would
// lose its device. A thread of its own waits on the host's pidfd instead, which becomes readable
// when the whole process is gone.
void watch_host(int host_pidfd) {
  if (host_pidfd < 0) return;  // no pidfds: the idle server's getppid check remains
  try {
    std::thread([host_pidfd] {
      pollfd fd{host_pidfd, POLLIN, 0};
      while (::poll(&fd, 1, -1) < 0 && errno == EINTR) {
      }
      if ((fd.revents & POLLIN) != 0) _exit(0);
    }).detach();
  } catch (...) {
    // no thread: the idle server's getppid check remains
  }
}

// Closes every descriptor from `first` on but `keep` (ascending order not required; -1 entries
// ignored): the device holds none of the host's (a socket, a pipe whose end of file someone waits
// for, another Worker's memory file).
void close_all_but(int first, std::initializer_list<int> keep) {
  int kept[4];
  std::size_t count = 0;
  for (int fd : keep) {
    if (fd >= first && count < std::size(kept)) kept[count++] = fd;
  }
  for (std::size_t i = 1; i < count; ++i) {  // a few entries: insertion sort
    for (std::size_t j = i; j > 0 && kept[j - 1] > kept[j]; --j) std::swap(kept[j - 1], kept[j]);
  }
  int from = first;
  for (std::size_t i = 0; i <= count; ++i) {
    const int to = i < count ? kept[i] - 1 : INT_MAX;  // closes [from, to]
    if (to >= from) {
      if (close_range(static_cast<unsigned>(from), static_cast<unsigned>(to), 0) != 0) {
        const long open_max = sysconf(_SC_OPEN_MAX);
        const int last = std::min<long>(to, open_max > 0 ? open_max - 1 : 1023);
        for (int fd = from; fd <= last; ++fd) close(fd);
      }
    }
    if (i < count) from = kept[i] + 1;
  }
}

// `parent`: the init's pid (1 in a pid namespace); the device ends when its parent changes.
[[noreturn]] void run_device_process(const DeviceProcessStart& start, pid_t parent) noexcept {
  // A buffer of its own: switching a stream the host already wrote to (its pointers set up for
  // full buffering) to line buffering without one does not take effect in glibc. The init made
  // the host's pipes fds 1 and 2.
  static char stdout_buffer[BUFSIZ];
  std::setvbuf(stdout, stdout_buffer, _IOLBF, sizeof(stdout_buffer));

  // Device memory at the device range; the host's view is gone from this process, so device
  // addresses are the only way to it here.
  void* mapped = mmap(start.device_view, start.bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED, start.memfd, 0);
  if (mapped != start.device_view) {
    std::fprintf(stderr, "chiprt device process: mapping the device memory failed: %s\n",
                 std::strerror(errno));
    _exit(127);
  }
  munmap(start.host_view, start.bytes);
  for (int i = 0; i < start.foreign_view_count; ++i) {
    munmap(start.foreign_views[i].start, start.foreign_views[i].bytes);
  }
  close_all_but(STDERR_FILENO + 1, {start.host_pidfd});  // the memory file among them
  watch_host(start.host_pidfd);
  g_channel = static_cast<DeviceChannel*>(start.device_view);
  install_fault_recorders();
  try {
    serve(g_channel, start, parent);
  } catch (...) {
    std::fprintf(stderr, "chiprt device process: the server failed with an exception\n");
  }
  _exit(126);
}

// --- the init ----------------------------------------------------------------------------------
// Single-threaded, forked from a possibly multi-threaded host: raw system calls only (no stdio,
// no allocation), since another host thread may have held a lock at the fork.

void write_text(const char* text) {
  (void)!::write(STDERR_FILENO, text, std::strlen(text));
}

// The children of this (single-threaded) process, pids of the namespace /proc was mounted in.
// Returns how many were listed (at most `capacity`); -1 when /proc cannot tell.
int list_children(pid_t* out, int capacity) {
  const int fd = ::open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[4096];
  ssize_t length = 0;
  for (ssize_t n;
       length < static_cast<ssize_t>(sizeof(text)) &&
       (n = ::read(fd, text + length, sizeof(text) - static_cast<std::size_t>(length))) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    length += n;
  }
  ::close(fd);
  int count = 0;
  pid_t value = 0;
  bool digits = false;
  for (ssize_t i = 0; i <= length && count < capacity; ++i) {
    const char c = i < length ? text[i] : ' ';
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      digits = true;
    } else if (digits) {
      out[count++] = value;
      value = 0;
      digits = false;
    }
  }
  return count;
}

// The subreaper's sweep, once the device process is reaped: every orphaned descendant of the device
// became a child of the init; SIGKILL them and reap them, level by level (the children of one that
// dies become the init's next), until none is left.
void sweep_descendants() {
  for (;;) {
    pid_t children[256];
    const int listed = list_children(children, static_cast<int>(std::size(children)));
    for (int i = 0; i < listed; ++i) kill(children[i], SIGKILL);
    const pid_t reaped = waitpid(-1, nullptr, 0);
    if (reaped < 0 && errno == ECHILD) return;
    if (reaped < 0 && errno != EINTR) return;
  }
}

}  // namespace

void run_device_init(const DeviceProcessStart& start) noexcept {
  // A process group of its own (the device shares it): the terminal's Ctrl-C reaches the host
  // only, which then ends the device.
  setpgid(0, 0);
  // Output into the host's pipes (the init's own diagnostics too).
  dup2(start.stdout_write, STDOUT_FILENO);
  dup2(start.stderr_write, STDERR_FILENO);
  close_all_but(STDERR_FILENO + 1, {start.memfd, start.host_pidfd});
  // SIGCHLD (a child ended) and SIGTERM (the host asks for the end of the device) are read from a
  // signalfd. Blocked signals reach even a namespace's pid 1; every other signal a process of the
  // namespace sends it is ignored by the kernel (pid 1 has no handlers).
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGTERM);
  sigset_t previous;
  sigprocmask(SIG_BLOCK, &watched, &previous);
  if (!start.pid_namespace) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  const int signals = signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK);

  const pid_t init = getpid();
  const pid_t device = fork();
  if (device == 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (signals >= 0) ::close(signals);
    run_device_process(start, init);
  }
  ::close(start.memfd);
  auto* channel = static_cast<DeviceChannel*>(start.host_view);
  if (device < 0) {
    write_text("chiprt device init: starting the device process failed\n");
    _exit(127);
  }
  bool ending = false;
  for (;;) {
    // Once the device is being ended, only its end is waited for.
    pollfd fds[2] = {{signals, POLLIN, 0}, {ending ? -1 : start.host_pidfd, POLLIN, 0}};
    // Without a signalfd the init looks for ended children every 10 ms; without the host's pidfd,
    // whether the host lives every second (getppid: no pid namespace then).
    const int timeout_ms = signals < 0 ? 10 : (start.host_pidfd < 0 ? 1000 : -1);
    const int ready = ::poll(fds, 2, timeout_ms);
    if (ready < 0 && errno != EINTR) _exit(125);
    bool end_device =
        (fds[1].revents & POLLIN) != 0 || (start.host_pidfd < 0 && getppid() != start.host_pid);
    if (signals >= 0 && (fds[0].revents & POLLIN) != 0) {
      signalfd_siginfo info[8];
      ssize_t n;
      while ((n = ::read(signals, info, sizeof(info))) > 0) {
        for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(info[0]); ++i) {
          if (info[i].ssi_signo == SIGTERM) end_device = true;
        }
      }
    }
    if (end_device && !ending) {
      ending = true;
      kill(device, SIGKILL);  // unreaped until the loop below, so the pid is still the device's
    }
    for (;;) {
      int status = 0;
      const pid_t reaped = waitpid(-1, &status, WNOHANG);
      if (reaped <= 0) break;
      if (reaped != device) continue;  // an orphan the init adopted
      channel->device_wait_status = status;
      channel->device_reaped.store(1, std::memory_order_release);
      // In a pid namespace the kernel ends the rest when the init exits; else the init does.
      if (!start.pid_namespace) sweep_descendants();
      _exit(0);
    }
  }
}

}  // namespace chiprt::platform::sim
