// Tests for support/output_file.cpp: outputs written all or nothing, never over anything but a
// regular file or an earlier output of the same kind, and never over an input.
#include "support/output_file.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "tests/support/temp_dir.h"

namespace planner {
namespace {

namespace fs = std::filesystem;
using testing::contents;
using testing::TempDir;

// Runs the test body in `dir` as the working folder, restoring the old one after.
struct InFolder {
  fs::path old = fs::current_path();
  explicit InFolder(const fs::path& dir) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(old); }
};

const OutputFolderKind kCompiled{"compile output", ".marker", {}, true};
const OutputFolderKind kReport{"report", "", {"index.html", "plan.json"}, false};

TEST_CASE("write_file_atomically: a new file, then a regular file replaced, nothing left behind") {
  TempDir tmp;
  const std::string path = (tmp.path / "plan.json").string();
  REQUIRE(write_file_atomically(path, "first").has_value());
  CHECK(contents(path) == "first");
  REQUIRE(write_file_atomically(path, "second").has_value());
  CHECK(contents(path) == "second");
  CHECK(tmp.entries() == std::vector<std::string>{"plan.json"});
  // The permissions of a new file (0666 less the umask), not mkstemp's private 0600.
  const mode_t mask = ::umask(022);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
  // A file the user made private stays private when replaced.
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  REQUIRE(write_file_atomically(path, "third").has_value());
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(contents(path) == "third");
}

TEST_CASE("write_file_atomically: a symbolic link, FIFO, directory or device is never replaced") {
  TempDir tmp;
  const std::string victim = tmp.write("victim.txt", "precious");
  const fs::path link = tmp.path / "out.json";
  fs::create_symlink(victim, link);
  auto w = write_file_atomically(link.string(), "x");
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().message() ==
        link.string() +
            ": is a symbolic link, which the planner never replaces; name a new file or a "
            "regular file");
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(contents(victim) == "precious");

  const std::string fifo = (tmp.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(write_file_atomically(fifo, "x").error().message().find(": is a FIFO, which") !=
        std::string::npos);
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));

  CHECK(write_file_atomically(tmp.path.string(), "x").error().message().find("is a directory") !=
        std::string::npos);
  // As root, renaming over /dev/null would replace the system's /dev/null; a device node of
  // the test's own stands for it where one can be made, so a broken writer harms nothing.
  const std::string null = (tmp.path / "null").string();
  if (::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    CHECK(write_file_atomically(null, "x").error().message() ==
          null +
              ": is a character device, which the planner never replaces; name a new file or a "
              "regular file");
    CHECK(fs::is_character_file(fs::symlink_status(null)));
    fs::remove(null);
  } else {
    MESSAGE(
        "SKIPPED: cannot make a device node here (not root); the device case is covered by the "
        "FIFO one");
  }
  CHECK(tmp.entries() == std::vector<std::string>{"fifo", "out.json", "victim.txt"});
}

TEST_CASE("write_file_atomically: a symbolic link planted at PATH.tmp is not followed") {
  TempDir tmp;
  const std::string victim = tmp.write("victim.txt", "precious");
  const fs::path planted = tmp.path / "trace.json.tmp";
  fs::create_symlink(victim, planted);
  const std::string path = (tmp.path / "trace.json").string();
  REQUIRE(write_file_atomically(path, "trace").has_value());
  CHECK(contents(path) == "trace");
  CHECK(contents(victim) == "precious");
  CHECK(fs::is_symlink(fs::symlink_status(planted)));
}

TEST_CASE("write_file_atomically: a missing folder is an error naming the file") {
  TempDir tmp;
  const std::string path = (tmp.path / "none" / "plan.json").string();
  auto w = write_file_atomically(path, "x");
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().message() == path + ": cannot write: No such file or directory");
}

Expected<void> fill_with(const fs::path& fresh, const std::string& text) {
  return write_new_file(fresh / "sub" / "a.txt", text);
}

TEST_CASE("write_folder_atomically: new, replaced when marked, refused when a user's folder") {
  TempDir tmp;
  const fs::path out = tmp.path / "deep" / "out";  // parents made (kind.create_parents)
  REQUIRE(write_folder_atomically(out.string(), kCompiled,
                                  [](const fs::path& f) { return fill_with(f, "1"); }));
  CHECK(contents(out / "sub" / "a.txt") == "1");
  CHECK(tmp.entries(out) == std::vector<std::string>{".marker", "sub"});
  // An earlier output, with anything the user built in it, is replaced whole.
  tmp.write("deep/out/build.log", "built");
  REQUIRE(write_folder_atomically(out.string(), kCompiled,
                                  [](const fs::path& f) { return fill_with(f, "2"); }));
  CHECK(contents(out / "sub" / "a.txt") == "2");
  CHECK(tmp.entries(out) == std::vector<std::string>{".marker", "sub"});
  CHECK(tmp.entries(tmp.path / "deep") == std::vector<std::string>{"out"});

  // A folder without the marker holding a user's file: refused, untouched.
  const fs::path mine = tmp.path / "mine";
  fs::create_directory(mine);
  tmp.write("mine/notes.txt", "keep");
  auto w = write_folder_atomically(mine.string(), kCompiled,
                                   [](const fs::path& f) { return fill_with(f, "3"); });
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().message() ==
        mine.string() +
            ": holds 'notes.txt' and no .marker file, so it is not an earlier compile "
            "output; name a new or empty folder (only an earlier compile output is replaced)");
  CHECK(tmp.entries(mine) == std::vector<std::string>{"notes.txt"});
  CHECK(contents(mine / "notes.txt") == "keep");
}

TEST_CASE("write_folder_atomically: a failing fill changes nothing") {
  TempDir tmp;
  const fs::path out = tmp.path / "out";
  REQUIRE(write_folder_atomically(out.string(), kCompiled,
                                  [](const fs::path& f) { return fill_with(f, "1"); }));
  auto w = write_folder_atomically(out.string(), kCompiled, [](const fs::path&) -> Expected<void> {
    return Error("rank 0: checker failed");
  });
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().message() == "rank 0: checker failed");
  CHECK(contents(out / "sub" / "a.txt") == "1");
  CHECK(tmp.entries() == std::vector<std::string>{"out"});  // no temporary folder left
}

TEST_CASE("check_output_folder: own names, symbolic links, files and missing parents") {
  TempDir tmp;
  const fs::path report = tmp.path / "report";
  fs::create_directory(report);
  tmp.write("report/index.html", "old");
  CHECK(check_output_folder(report.string(), kReport).has_value());
  tmp.write("report/extra.txt", "mine");
  CHECK(check_output_folder(report.string(), kReport).error().message() ==
        report.string() +
            ": holds 'extra.txt', which is not a report file; name a new or empty folder (only an "
            "earlier report is "
            "replaced)");
  const fs::path link = tmp.path / "link";
  fs::create_directory_symlink(tmp.path / "report", link);
  CHECK(check_output_folder(link.string(), kReport).error().message() ==
        link.string() +
            ": is a symbolic link, which the planner never replaces; name a new folder for the "
            "report");
  const std::string file = tmp.write("file", "x");
  CHECK(check_output_folder(file, kReport).error().message() ==
        file + ": exists and is not a folder; name a new folder for the report");
  const std::string orphan = (tmp.path / "none" / "r").string();
  CHECK(check_output_folder(orphan, kReport).error().message() ==
        orphan + ": cannot write the report: its parent folder does not exist");
  CHECK(check_output_folder(orphan, kCompiled).has_value());  // parents made later
  CHECK(check_output_folder((tmp.path / "file" / "r").string(), kCompiled).has_value() == false);
}

TEST_CASE("check_outputs: never an input, by path, by ./path, by hard or symbolic link") {
  TempDir tmp;
  InFolder in(tmp.path);
  tmp.write("model.onnx", "model");
  const std::vector<InputPath> inputs = {{"model.onnx", "the model"}, {"", "the costs file"}};
  CHECK(check_outputs({{"model.onnx"}}, inputs).error().message() ==
        "model.onnx: is the model; the planner never writes over an input, name another output");
  CHECK(check_outputs({{"./model.onnx"}}, inputs).error().message() ==
        "./model.onnx: is the model (model.onnx); the planner never writes over an input, name "
        "another output");
  CHECK(check_outputs({{(tmp.path / "model.onnx").string()}}, inputs).has_value() == false);
  fs::create_hard_link("model.onnx", "hard.onnx");
  CHECK(check_outputs({{"hard.onnx"}}, inputs).error().message() ==
        "hard.onnx: is the model (model.onnx); the planner never writes over an input, name "
        "another output");
  fs::create_symlink("model.onnx", "soft.onnx");
  CHECK(check_outputs({{"soft.onnx"}}, inputs).has_value() == false);
  fs::create_directory("sub");
  CHECK(check_outputs({{"sub/../model.onnx", &kCompiled}}, inputs).has_value() == false);
  CHECK(contents("model.onnx") == "model");
  CHECK(check_outputs({{"plan.json"}, {"-", nullptr, true}, {""}}, inputs).has_value());
  // "-" is standard output only where the command says so; elsewhere it is refused, never a file.
  CHECK(check_outputs({{"plan.json"}, {"-"}}, inputs).error().message() ==
        "-: this output cannot go to standard output (only `plan -o -` writes there); name a "
        "file (./- for a file named '-')");
  CHECK(check_outputs({{"./-"}}, inputs).has_value());
}

TEST_CASE("clear_output_folder: an earlier folder emptied but for its marker; links not followed") {
  TempDir tmp;
  const fs::path dir = tmp.path / "work";
  fs::create_directories(dir / "build" / "deep");
  tmp.write("work/.marker", "marker");
  tmp.write("work/build/deep/file", "x");
  tmp.write("victim", "precious");
  fs::create_directory(tmp.path / "theirs");
  tmp.write("theirs/file", "mine");
  fs::create_symlink(tmp.path / "victim", dir / "run0.dump");
  fs::create_symlink(tmp.path / "theirs", dir / "linked");
  REQUIRE(check_output_folder(dir.string(), kCompiled).has_value());
  REQUIRE(clear_output_folder(dir.string(), kCompiled).has_value());
  CHECK(tmp.entries(dir) == std::vector<std::string>{".marker"});
  CHECK(contents((tmp.path / "victim").string()) == "precious");
  CHECK(contents((tmp.path / "theirs" / "file").string()) == "mine");
  CHECK(clear_output_folder((tmp.path / "absent").string(), kCompiled).has_value());
}

TEST_CASE("check_outputs: never the working folder, a parent of it or of an input, nor twice") {
  TempDir tmp;
  fs::create_directories(tmp.path / "project" / "models");
  InFolder in(tmp.path / "project");
  tmp.write("project/models/m.onnx", "model");
  const std::vector<InputPath> inputs = {{"models/m.onnx", "the model"}};
  CHECK(check_outputs({{".", &kCompiled}}, inputs).error().message() ==
        ".: holds the model (models/m.onnx); the planner never writes over an input, name another "
        "output");
  CHECK(check_outputs({{".", &kCompiled}}, {}).error().message() ==
        ".: is the working folder; name a new folder");
  CHECK(check_outputs({{"..", &kCompiled}}, {}).error().message() ==
        "..: holds the working folder; name a new folder");
  CHECK(check_outputs({{"models", &kCompiled}}, inputs).error().message() ==
        "models: holds the model (models/m.onnx); the planner never writes over an input, name "
        "another output");
  CHECK(check_outputs({{"out.json"}, {"./out.json"}}, inputs).error().message() ==
        "./out.json: is also another output of this command; name two different paths");
  CHECK(check_outputs({{"report", &kReport}, {"report/plan.json"}}, inputs).error().message() ==
        "report/plan.json: holds or is inside another output of this command; name two separate "
        "paths");
  CHECK(check_outputs({{"none/out.json"}}, inputs).error().message() ==
        "none/out.json: cannot write: its folder does not exist");
  CHECK(check_outputs({{"out", &kCompiled}, {"trace.json"}}, inputs).has_value());
}

}  // namespace
}  // namespace planner
