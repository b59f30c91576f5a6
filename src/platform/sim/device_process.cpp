#include "platform/sim/device_process.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// How long the idle server polls for the next command before it sleeps: a run's commands follow
// each other within microseconds.
constexpr auto kServerPoll = std::chrono::microseconds(50);

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

// The next command's sequence number (!= seen): polled for a moment, then slept for.
uint32_t next_command(DeviceChannel* channel, uint32_t seen, pid_t host_pid) {
  const auto poll_until = std::chrono::steady_clock::now() + kServerPoll;
  for (;;) {
    uint32_t seq = channel->command_seq.load(std::memory_order_acquire);
    if (seq != seen) return seq;
    if (std::chrono::steady_clock::now() < poll_until) {
      std::this_thread::yield();
      continue;
    }
    channel->server_parked.store(1, std::memory_order_seq_cst);
    seq = channel->command_seq.load(std::memory_order_seq_cst);
    if (seq == seen) futex_wait(&channel->command_seq, seen, kIdleCheckNs, FutexScope::Shared);
    channel->server_parked.store(0, std::memory_order_relaxed);
    if (getppid() != host_pid) _exit(0);
  }
}

template <typename T>
T* pointer(uint64_t value) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(value));
}

[[noreturn]] void serve(DeviceChannel* channel, const DeviceProcessStart& start) {
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
    const uint32_t seq = next_command(channel, seen, start.host_pid);
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
// lose its device. A thread of its own waits on a pidfd of the host process instead, which becomes
// readable when the whole process is gone.
void watch_host(pid_t host_pid) {
  const int host = static_cast<int>(syscall(SYS_pidfd_open, host_pid, 0));
  if (getppid() != host_pid) _exit(0);  // the host died before the pidfd named it
  if (host < 0) return;                 // no pidfds: the idle server's getppid check remains
  try {
    std::thread([host] {
      pollfd fd{host, POLLIN, 0};
      while (::poll(&fd, 1, -1) < 0 && errno == EINTR) {
      }
      if ((fd.revents & POLLIN) != 0) _exit(0);
    }).detach();
  } catch (...) {
    ::close(host);  // no thread: the idle server's getppid check remains
  }
}

// Closes every descriptor from `first` on: the device holds none of the host's (a socket, a pipe
// whose end of file someone waits for, another Worker's memory file).
void close_from(int first) {
  if (close_range(static_cast<unsigned>(first), ~0u, 0) == 0) return;
  const long open_max = sysconf(_SC_OPEN_MAX);
  for (int fd = first; fd < (open_max > 0 ? open_max : 1024); ++fd) close(fd);
}

}  // namespace

void run_device_process(const DeviceProcessStart& start) noexcept {
  // A process group of its own: the host ends the group, so whatever a kernel forks ends with the
  // device, and the terminal's Ctrl-C reaches the host only (which then ends the device).
  setpgid(0, 0);
  // Output into the host's pipes, line by line so a kernel's printf shows up as it is written.
  dup2(start.stdout_write, STDOUT_FILENO);
  dup2(start.stderr_write, STDERR_FILENO);
  // A buffer of its own: switching a stream the host already wrote to (its pointers set up for
  // full buffering) to line buffering without one does not take effect in glibc.
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
  close_from(STDERR_FILENO + 1);  // the memory file and the pipes' other ends among them
  watch_host(start.host_pid);
  g_channel = static_cast<DeviceChannel*>(start.device_view);
  install_fault_recorders();
  try {
    serve(g_channel, start);
  } catch (...) {
    std::fprintf(stderr, "chiprt device process: the server failed with an exception\n");
  }
  _exit(126);
}

}  // namespace chiprt::platform::sim
