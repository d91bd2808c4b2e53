// Tests for support/temporary_paths.cpp: temporary outputs removed whole when SIGINT, SIGTERM or
// SIGHUP stops the process, links removed and never followed, ignored signals left ignored.
#include "support/temporary_paths.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/support/temp_dir.h"

namespace planner {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A folder tree like a half-written compile output: files, a nested folder and a link that
// points outside it.
void fill_tree(const fs::path& dir, const fs::path& outside) {
  fs::create_directories(dir / "launcher" / "build" / "deep");
  for (int i = 0; i < 300; ++i)  // more entries than one getdents64 buffer holds
    std::ofstream(dir / "launcher" / ("f" + std::to_string(i) + ".cpp")) << "int x;";
  std::ofstream(dir / "launcher" / "build" / "deep" / "obj.o") << "obj";
  fs::create_symlink(outside, dir / "launcher" / "link");
}

// Runs `body` in a child process and returns the signal that ended it (0: it exited).
template <typename Body>
int child_signal(Body body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);  // doctest's handlers off
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

TEST_CASE("remove_tree_signal_safe: a folder tree whole; a link's target stays") {
  TempDir tmp;
  std::ofstream(tmp.path / "users_file") << "keep me";
  fill_tree(tmp.path / "out.tmp", tmp.path / "users_file");
  remove_tree_signal_safe((tmp.path / "out.tmp").c_str());
  CHECK(!fs::exists(tmp.path / "out.tmp"));
  CHECK(testing::contents((tmp.path / "users_file").string()) == "keep me");
  std::ofstream(tmp.path / "file.tmp") << "x";
  remove_tree_signal_safe((tmp.path / "file.tmp").c_str());
  CHECK(!fs::exists(tmp.path / "file.tmp"));
  remove_tree_signal_safe((tmp.path / "absent").c_str());  // nothing to do, no error
}

TEST_CASE("a guarded temporary is removed when a signal stops the process, which then dies of it") {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    CAPTURE(sig);
    TempDir tmp;
    std::ofstream(tmp.path / "users_file") << "keep me";
    const int got = child_signal([&] {
      fill_tree(tmp.path / ".out.tmp-abc", tmp.path / "users_file");
      std::ofstream(tmp.path / ".plan.json.tmp-abc") << "{\"half\":";
      TemporaryPath folder((tmp.path / ".out.tmp-abc").string());
      TemporaryPath file((tmp.path / ".plan.json.tmp-abc").string());
      ::raise(sig);
    });
    CHECK(got == sig);
    CHECK(tmp.entries() == std::vector<std::string>{"users_file"});
    CHECK(testing::contents((tmp.path / "users_file").string()) == "keep me");
  }
}

TEST_CASE("a path no longer guarded is left alone; counts follow the guards") {
  TempDir tmp;
  const int got = child_signal([&] {
    std::ofstream(tmp.path / "done") << "written";
    { TemporaryPath gone((tmp.path / "done").string()); }
    if (guarded_temporary_paths() != 0) ::_exit(3);
    ::raise(SIGTERM);
  });
  CHECK(got == SIGTERM);
  CHECK(tmp.entries() == std::vector<std::string>{"done"});
}

TEST_CASE("run_command: a signal kills the command's process group before the removal") {
  // A command that keeps writing into the guarded folder (as a compiler writes into verify's
  // work folder) while the planner is stopped: nothing of it is left.
  TempDir tmp;
  const fs::path dir = tmp.path / ".work.tmp-abc";
  const int got = child_signal([&] {
    fs::create_directories(dir);
    TemporaryPath guard(dir.string());
    std::string output;
    const std::string command = fmt::format(
        "(sleep 0.3; kill -TERM {}) & while true; do mkdir -p '{}/a/b'; touch '{}/a/b/x'; done",
        ::getpid(), dir.string(), dir.string());
    run_command(command, output);
    ::_exit(5);  // not reached: SIGTERM ends the process during the command
  });
  CHECK(got == SIGTERM);
  CHECK(tmp.entries().empty());
}

TEST_CASE("a signal the process ignores stays ignored (nohup)") {
  TempDir tmp;
  const int got = child_signal([&] {
    std::signal(SIGHUP, SIG_IGN);
    std::ofstream(tmp.path / ".x.tmp") << "x";
    TemporaryPath guard((tmp.path / ".x.tmp").string());
    ::raise(SIGHUP);  // ignored: the process goes on and exits normally
  });
  CHECK(got == 0);
  CHECK(tmp.entries() == std::vector<std::string>{".x.tmp"});
}

// Last: it installs the handlers in the test process itself (doctest's own are kept), which the
// children forked above must not inherit.
TEST_CASE("run_command: output and exit status") {
  std::string out;
  CHECK(run_command("echo out; echo err >&2; exit 3", out) == 3);
  CHECK(out == "out\nerr\n");
  CHECK(run_command("kill -9 $$", out) == 128 + SIGKILL);
  CHECK(run_command("exit 0", out) == 0);
  CHECK(out.empty());
}

}  // namespace
}  // namespace planner
