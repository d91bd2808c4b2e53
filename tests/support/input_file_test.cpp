// Tests for support/input_file.cpp: users' files read only when they are regular files under
// the size bound; FIFOs, devices and folders refused at once.
#include "support/input_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include <doctest/doctest.h>

#include "tests/support/temp_dir.h"

namespace planner {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A FIFO must be refused at once; were it opened for a blocking read the test would hang, so
// an alarm turns a hang into a failure.
struct Alarm {
  Alarm() { ::alarm(20); }
  ~Alarm() { ::alarm(0); }
};

TEST_CASE("read_file: contents of a regular file, and a missing one") {
  TempDir tmp;
  const std::string path = tmp.write("plan.json", "one\ntwo");
  auto text = read_file(path, "plan file");
  REQUIRE(text.has_value());
  CHECK(*text == "one\ntwo");
  CHECK(check_input_file(path).value() == 7);
  const std::string missing = (tmp.path / "none.json").string();
  CHECK(read_file(missing).error().message() == missing + ": no such file");
  CHECK(check_input_file(missing).error().message() == missing + ": no such file");
}

TEST_CASE("read_file: a directory, a FIFO and /dev/zero are refused without reading") {
  Alarm alarm;
  TempDir tmp;
  const std::string dir = tmp.path.string();
  CHECK(read_file(dir, "topology file").error().message() ==
        dir + ": is a directory, not a topology file");
  CHECK(check_input_file(dir, "model file").error().message() ==
        dir + ": is a directory, not a model file");

  const std::string fifo = (tmp.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(read_file(fifo).error().message() == fifo + ": is a FIFO, not a regular file");
  CHECK(check_input_file(fifo).error().message() == fifo + ": is a FIFO, not a regular file");

  CHECK(read_file("/dev/zero", "costs file").error().message() ==
        "/dev/zero: is a character device, not a regular file");
}

TEST_CASE("read_file: a file over the bound is refused before it is read") {
  TempDir tmp;
  const std::string small = tmp.write("small.json", "0123456789");
  CHECK(read_file(small, "plan file", 10).has_value());
  CHECK(read_file(small, "plan file", 9).error().message() ==
        small + ": is 10 bytes, over the limit of 9 B for a plan file");

  // 2 GiB of holes: reading it whole would take seconds and 2 GiB of memory.
  const std::string sparse = (tmp.path / "sparse.json").string();
  { std::ofstream create(sparse); }
  fs::resize_file(sparse, uintmax_t{2} << 30);
  auto big = read_file(sparse, "topology file");
  REQUIRE_FALSE(big.has_value());
  CHECK(big.error().message() ==
        sparse + ": is 2147483648 bytes, over the limit of 256.0 MiB for a topology file");
}

TEST_CASE("read_file follows a symbolic link to a regular file") {
  TempDir tmp;
  const std::string target = tmp.write("real.json", "{}");
  const fs::path link = tmp.path / "link.json";
  fs::create_symlink(target, link);
  CHECK(read_file(link.string()).value() == "{}");
}

}  // namespace
}  // namespace planner
