// Temporary outputs removed on SIGINT, SIGTERM and SIGHUP. The handler may run at any point
// of any thread, so it only reads slots published with atomics and calls system calls that are
// async-signal-safe (kill, waitpid, unlinkat, openat, getdents64, lseek, close, nanosleep,
// sigaction, raise).
#include "support/temporary_paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

namespace planner {

namespace {

struct Slot {
  std::atomic<bool> used{false};
  char path[PATH_MAX] = {};
};

Slot g_slots[kMaxTemporaryPaths];
// Process groups of the commands running now (run_command); 0 for a free slot.
std::atomic<pid_t> g_children[kMaxTemporaryPaths];
std::mutex g_mutex;  // registration only; never taken by the handler
bool g_installed = false;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kMaxDepth = 64;

struct Dirent64 {  // the kernel's linux_dirent64
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

void remove_at(int dirfd, const char* name, int depth) {
  if (::unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return;  // a file or a link
  if (depth >= kMaxDepth) return;
  const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[4096];
  // Entries removed while reading may shift the listing: read it again until a pass removes
  // nothing (a few passes at most).
  for (int pass = 0; pass < 8; ++pass) {
    bool removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const Dirent64*>(buf + off);
        off += d->d_reclen;
        if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
        remove_at(fd, d->d_name, depth + 1);
        removed = true;
      }
    }
    if (!removed) break;
  }
  ::close(fd);
  ::unlinkat(dirfd, name, AT_REMOVEDIR);
}

void on_signal(int sig) {
  const int saved = errno;
  bool children = false;
  for (auto& c : g_children)
    if (const pid_t g = c.load(std::memory_order_acquire); g > 0) {
      ::kill(-g, SIGKILL);
      children = true;
    }
  for (auto& c : g_children)
    if (const pid_t g = c.load(std::memory_order_acquire); g > 0) ::waitpid(g, nullptr, 0);
  for (Slot& s : g_slots)
    if (s.used.load(std::memory_order_acquire)) remove_tree_signal_safe(s.path);
  if (children) {
    // The group's other members die of their SIGKILL a moment later; a file one of them was
    // creating as it died is removed by a second pass.
    const timespec pause{0, 20 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
    for (Slot& s : g_slots)
      if (s.used.load(std::memory_order_acquire)) remove_tree_signal_safe(s.path);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  errno = saved;
  ::raise(sig);  // delivered on return, with the default action
}

void install_handlers() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;  // ignored or taken
    struct sigaction act {};
    act.sa_handler = on_signal;
    sigemptyset(&act.sa_mask);
    for (int other : kSignals) sigaddset(&act.sa_mask, other);
    ::sigaction(sig, &act, nullptr);
  }
}

}  // namespace

SignalsDeferred::SignalsDeferred() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kSignals) sigaddset(&set, sig);
  ::pthread_sigmask(SIG_BLOCK, &set, &old_);
}

SignalsDeferred::~SignalsDeferred() {
  ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

TemporaryPath::TemporaryPath(const std::string& path) {
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(path, ec).string();
  if (ec || abs.size() >= PATH_MAX) return;
  const SignalsDeferred deferred;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_installed) {
    install_handlers();
    g_installed = true;
  }
  for (int i = 0; i < kMaxTemporaryPaths; ++i) {
    Slot& s = g_slots[i];
    if (s.used.load(std::memory_order_relaxed)) continue;
    std::memcpy(s.path, abs.c_str(), abs.size() + 1);
    s.used.store(true, std::memory_order_release);
    slot_ = i;
    return;
  }
}

TemporaryPath::~TemporaryPath() {
  if (slot_ < 0) return;
  const SignalsDeferred deferred;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_slots[slot_].used.store(false, std::memory_order_release);
}

int guarded_temporary_paths() {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (const Slot& s : g_slots) n += s.used.load(std::memory_order_relaxed) ? 1 : 0;
  return n;
}

void remove_tree_signal_safe(const char* path) {
  remove_at(AT_FDCWD, path, 0);
}

int run_command(const std::string& command, std::string& output) {
  output.clear();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_installed) {
      install_handlers();
      g_installed = true;
    }
  }
  // The three signals stay blocked from the fork until the group is registered, so the handler
  // never misses a child; the child unblocks them before it runs the command.
  std::optional<SignalsDeferred> blocked(std::in_place);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever of the two runs first
  int slot = -1;
  for (int i = 0; i < kMaxTemporaryPaths && slot < 0; ++i) {
    pid_t expected = 0;
    if (g_children[i].compare_exchange_strong(expected, pid)) slot = i;
  }
  blocked.reset();
  ::close(fds[1]);
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (slot >= 0) g_children[slot].store(0, std::memory_order_release);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 128;
}

}  // namespace planner
