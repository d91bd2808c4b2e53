// Temporary outputs removed when the process is stopped by a signal.
#pragma once

#include <csignal>
#include <string>

namespace planner {

/// While alive, `path` (a temporary file or folder a command is writing: an output's
/// `.NAME.tmp-XXXXXX`, verify's work folder) is removed, whole, if the process receives SIGINT,
/// SIGTERM or SIGHUP; the signal then takes its default action (the process ends with it, as
/// the shell expects). A signal the process was started ignoring (nohup) stays ignored. The
/// destructor only forgets the path: removing or renaming it is the writer's work. Up to
/// kMaxTemporaryPaths at once; further ones are not guarded (the writer still removes them on
/// its errors).
class TemporaryPath {
 public:
  explicit TemporaryPath(const std::string& path);
  ~TemporaryPath();
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;

 private:
  int slot_ = -1;
};

inline constexpr int kMaxTemporaryPaths = 64;

/// While alive, SIGINT, SIGTERM and SIGHUP wait (are blocked in this thread): hold one around
/// the creation of a temporary and its TemporaryPath, so that no signal falls between the two
/// and leaves it behind. A signal that came meanwhile is handled when this ends.
class SignalsDeferred {
 public:
  SignalsDeferred();
  ~SignalsDeferred();
  SignalsDeferred(const SignalsDeferred&) = delete;
  SignalsDeferred& operator=(const SignalsDeferred&) = delete;

 private:
  sigset_t old_;
};

/// Runs `command` with /bin/sh in a process group of its own, its standard output and error
/// captured into `output`; returns its exit status (128 + the signal when a signal ended it, -1
/// when it could not start). While it runs, a SIGINT, SIGTERM or SIGHUP that stops the planner
/// first kills the whole group (the compiler, cmake, the launchers) and reaps it, and only then
/// removes the temporary paths, so that nothing the command writes reappears in them.
int run_command(const std::string& command, std::string& output);

/// How many paths are guarded now (for tests).
int guarded_temporary_paths();

/// Removes `path` (a file, a link or a folder tree; links are removed, never followed) with
/// async-signal-safe system calls only, as the signal handler does. For tests.
void remove_tree_signal_safe(const char* path);

}  // namespace planner
