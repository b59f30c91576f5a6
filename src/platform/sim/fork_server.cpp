// ForkServer (see fork_server.h).
#include "platform/sim/fork_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>

namespace chiprt::platform::sim {

namespace {

// The start record crosses to the server as bytes.
static_assert(std::is_trivially_copyable_v<DeviceProcessStart>);

enum class Command : uint32_t { Reserve = 1, Spawn = 2 };

struct Request {
  Command command = Command::Reserve;
  uint32_t seq = 0;
  uint32_t pid_namespace = 0;  // spawn: try a pid namespace of its own
  uint32_t fd_count = 0;       // spawn: memfd, stdout, stderr[, host pidfd], in that order
  uint64_t range_start = 0;    // reserve
  uint64_t range_bytes = 0;
  DeviceProcessStart start;  // spawn
};

struct Reply {
  uint32_t seq = 0;
  int32_t error = 0;  // errno of the failed step, 0 on success
  int32_t init_pid = -1;
  uint32_t pid_namespace = 0;
};

constexpr int kMaxFds = 4;
// How long the host waits for a reply (a clone and a mapping: milliseconds at worst).
constexpr int kReplyBudgetMs = 10'000;
// How long the destructor waits for the server to end before SIGKILL.
constexpr int kShutdownGraceMs = 1'000;

// --- the server (raw system calls and the stack only: the host may have had any lock held) ---

struct ServerState {
  int socket = -1;
  int host_pidfd = -1;
  DeviceProcessStart::HostView views[DeviceProcessStart::kMaxForeignViews];
  int view_count = 0;
};

void reply_to(int socket, const Reply& reply) {
  (void)!::send(socket, &reply, sizeof(reply), MSG_NOSIGNAL);
}

void serve_reserve(const ServerState& state, const Request& request) {
  Reply reply;
  reply.seq = request.seq;
  void* want = reinterpret_cast<void*>(request.range_start);
  void* got = ::mmap(want, request.range_bytes, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == MAP_FAILED) {
    reply.error = errno;
  } else if (got != want) {  // a kernel without MAP_FIXED_NOREPLACE took it as a hint
    ::munmap(got, request.range_bytes);
    reply.error = EEXIST;
  }
  reply_to(state.socket, reply);
}

void serve_spawn(const ServerState& state, Request& request, const int* fds) {
  Reply reply;
  reply.seq = request.seq;
  DeviceProcessStart& start = request.start;
  start.memfd = fds[0];
  start.stdout_write = fds[1];
  start.stderr_write = fds[2];
  start.host_pidfd = request.fd_count > 3 ? fds[3] : -1;
  // This process's copies of the host's views (those of the host's later devices are not here).
  std::copy(state.views, state.views + state.view_count, start.foreign_views);
  start.foreign_view_count = state.view_count;
  start.host_view = nullptr;  // the init maps the memory file itself (below)
  bool namespace_wanted = request.pid_namespace != 0 && start.host_pidfd >= 0;
  long pid = -1;
  for (;;) {
    start.pid_namespace = namespace_wanted;
    const unsigned long flags = CLONE_PARENT | SIGCHLD | (namespace_wanted ? CLONE_NEWPID : 0ul);
    pid = ::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr);
    if (pid == 0) {
      // The init: the host's view of the memory (its control block) is not in this copy of the
      // host; it maps the file for itself, and its device process drops that view as its own.
      void* view = ::mmap(nullptr, start.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, start.memfd, 0);
      if (view == MAP_FAILED) ::_exit(125);
      start.host_view = view;
      run_device_init(start);
    }
    if (pid < 0 && namespace_wanted && (errno == EPERM || errno == EINVAL)) {
      namespace_wanted = false;  // not permitted here: a subreaper init instead
      continue;
    }
    break;
  }
  if (pid < 0) reply.error = errno;
  reply.init_pid = static_cast<int32_t>(pid);
  reply.pid_namespace = namespace_wanted ? 1 : 0;
  for (uint32_t i = 0; i < request.fd_count; ++i) ::close(fds[i]);
  reply_to(state.socket, reply);
}

[[noreturn]] void serve(ServerState& state) {
  for (;;) {
    pollfd watched[2] = {{state.socket, POLLIN, 0}, {state.host_pidfd, POLLIN, 0}};
    const int ready = ::poll(watched, state.host_pidfd >= 0 ? 2 : 1, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || (watched[1].revents & POLLIN) != 0) ::_exit(0);  // the host died
    Request request;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    iovec io{&request, sizeof(request)};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t got = ::recvmsg(state.socket, &message, MSG_CMSG_CLOEXEC);
    if (got == 0) ::_exit(0);  // the host closed its end
    if (got < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);
    }
    int fds[kMaxFds] = {-1, -1, -1, -1};
    int fd_count = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const int n = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < n && fd_count < kMaxFds; ++i) {
        std::memcpy(&fds[fd_count++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      }
    }
    if (static_cast<std::size_t>(got) == sizeof(request) && request.command == Command::Spawn &&
        request.fd_count >= 3 && static_cast<int>(request.fd_count) == fd_count) {
      serve_spawn(state, request, fds);
    } else if (static_cast<std::size_t>(got) == sizeof(request) &&
               request.command == Command::Reserve && fd_count == 0) {
      serve_reserve(state, request);
    } else {
      for (int i = 0; i < fd_count; ++i) ::close(fds[i]);
      Reply reply;
      reply.seq = got >= static_cast<ssize_t>(sizeof(uint64_t)) ? request.seq : 0;
      reply.error = EPROTO;
      reply_to(state.socket, reply);
    }
  }
}

Status lost_status(pid_t server, const char* what) {
  return Status(StatusCode::InternalError,
                std::string(what) + ": the fork server (pid " + std::to_string(server) +
                    ") ended; this process can start no more isolated devices");
}

}  // namespace

Status ForkServer::start(std::span<const DeviceProcessStart::HostView> inherited_views,
                         std::shared_ptr<ForkServer>* out) {
  if (out == nullptr) return Status(StatusCode::InvalidArgument, "ForkServer::start: out is null");
  if (inherited_views.size() > static_cast<std::size_t>(DeviceProcessStart::kMaxForeignViews)) {
    return Status(StatusCode::UnsupportedFeature,
                  "ForkServer::start: more than " +
                      std::to_string(DeviceProcessStart::kMaxForeignViews) +
                      " isolated devices' memories are mapped in this process; destroy one first");
  }
  // Prepared before the fork: the server allocates nothing.
  ServerState state;
  std::copy(inherited_views.begin(), inherited_views.end(), state.views);
  state.view_count = static_cast<int>(inherited_views.size());
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return Status(StatusCode::InternalError,
                  std::string("ForkServer::start: socketpair failed: ") + std::strerror(errno));
  }
  const int host_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  std::fflush(nullptr);  // unflushed host output must not be written twice
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A process group of its own: a terminal's Ctrl-C reaches the host, which decides, and not
    // this server (whose signal dispositions are the host's of the time it started).
    ::setpgid(0, 0);
    // Only its socket end and the host's pidfd, at fixed numbers (moved above them first, so
    // that neither overwrites the other); stdio stays for messages.
    const int socket_copy = ::fcntl(ends[1], F_DUPFD, 16);
    const int pidfd_copy = host_pidfd >= 0 ? ::fcntl(host_pidfd, F_DUPFD, 16) : -1;
    state.socket = socket_copy >= 0 && ::dup2(socket_copy, 3) == 3 ? 3 : -1;
    state.host_pidfd = pidfd_copy >= 0 && ::dup2(pidfd_copy, 4) == 4 ? 4 : -1;
    ::syscall(SYS_close_range, 5u, ~0u, 0u);
    if (state.socket < 0) ::_exit(1);
    serve(state);
  }
  const int fork_error = errno;
  ::close(ends[1]);
  if (host_pidfd >= 0) ::close(host_pidfd);
  if (pid < 0) {
    ::close(ends[0]);
    return Status(StatusCode::InternalError,
                  std::string("ForkServer::start: fork failed: ") + std::strerror(fork_error));
  }
  out->reset(new ForkServer(pid, ends[0]));
  return Status::ok();
}

ForkServer::~ForkServer() {
  if (::getpid() != creator_) return;  // a forked child's copy: the server is its parent's
  ::close(socket_);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kShutdownGraceMs);
  for (;;) {
    const pid_t reaped = ::waitpid(pid_, nullptr, WNOHANG);
    if (reaped == pid_ || (reaped < 0 && errno == ECHILD)) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    ::usleep(1000);
  }
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

Status ForkServer::call(const void* request, std::size_t bytes, std::span<const int> fds,
                        void* reply, std::size_t reply_bytes, const char* what) {
  if (::getpid() != creator_) {
    return Status(StatusCode::InternalError,
                  std::string(what) +
                      ": the fork server belongs to the process that started it, not to this "
                      "forked child");
  }
  if (lost_) return lost_status(pid_, what);
  iovec io{const_cast<void*>(request), bytes};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (!fds.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  if (::sendmsg(socket_, &message, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes)) {
    lost_ = true;
    return lost_status(pid_, what);
  }
  pollfd watched{socket_, POLLIN, 0};
  int ready = -1;
  do {
    ready = ::poll(&watched, 1, kReplyBudgetMs);
  } while (ready < 0 && errno == EINTR);
  uint32_t answered = 0;  // every reply starts with the request's seq
  if (ready <= 0 || ::recv(socket_, reply, reply_bytes, 0) != static_cast<ssize_t>(reply_bytes) ||
      (std::memcpy(&answered, reply, sizeof(answered)),
       answered != static_cast<const Request*>(request)->seq)) {
    lost_ = true;
    ::kill(pid_, SIGKILL);  // a server that does not answer is of no use
    return lost_status(pid_, what);
  }
  return Status::ok();
}

Status ForkServer::reserve(uintptr_t start, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  Request request;
  request.command = Command::Reserve;
  request.seq = next_seq_++;
  request.range_start = start;
  request.range_bytes = bytes;
  Reply reply;
  if (Status status = call(&request, sizeof(request), {}, &reply, sizeof(reply), "reserve");
      !status) {
    return status;
  }
  if (reply.error != 0) {
    return Status(StatusCode::InvalidArgument,
                  "reserve: the fork server has [" + std::to_string(start) + ", +" +
                      std::to_string(bytes) + ") in use: " + std::strerror(reply.error));
  }
  return Status::ok();
}

Status ForkServer::spawn(const DeviceProcessStart& start, pid_t* init_pid, bool* pid_namespace) {
  std::lock_guard<std::mutex> lock(mutex_);
  Request request;
  request.command = Command::Spawn;
  request.seq = next_seq_++;
  request.pid_namespace = *pid_namespace ? 1 : 0;
  request.start = start;
  int fds[kMaxFds] = {start.memfd, start.stdout_write, start.stderr_write, start.host_pidfd};
  request.fd_count = start.host_pidfd >= 0 ? 4 : 3;
  Reply reply;
  if (Status status = call(&request, sizeof(request), std::span<const int>(fds, request.fd_count),
                           &reply, sizeof(reply), "spawn");
      !status) {
    return status;
  }
  if (reply.error != 0 || reply.init_pid <= 0) {
    return Status(StatusCode::InternalError,
                  std::string("starting the device process through the fork server failed: ") +
                      std::strerror(reply.error != 0 ? reply.error : EPROTO));
  }
  *init_pid = reply.init_pid;
  *pid_namespace = reply.pid_namespace != 0;
  return Status::ok();
}

}  // namespace chiprt::platform::sim
