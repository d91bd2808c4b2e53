// Atomic output files and folders, and the output-path guard.
#include "support/output_file.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc)
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "support/temporary_paths.h"

namespace planner {

namespace fs = std::filesystem;

namespace {

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

// What a path that is not a regular file is, for messages.
const char* file_type_name(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Absent or a regular file (not followed): what a file output may replace. Returns the
// permissions the new file gets: the replaced file's, or those of a new file (0666 less the
// umask).
Expected<mode_t> check_replaceable_file(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return static_cast<mode_t>(0666 & ~current_umask());
    return make_error("{}: cannot write: {}", path, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    return make_error(
        "{}: is {}, which the planner never replaces; name a new file or a regular file", path,
        file_type_name(st.st_mode));
  return static_cast<mode_t>(st.st_mode & 07777);
}

Expected<void> write_all(int fd, std::string_view text) {
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(std::strerror(n < 0 ? errno : EIO));
    written += static_cast<size_t>(n);
  }
  return ok();
}

}  // namespace

Expected<void> write_file_atomically(const std::string& path, std::string_view text) {
  const fs::path p(path);
  if (path.empty() || !p.has_filename())
    return make_error("{}: names a folder; give a file name", path);
  PLANNER_TRY_ASSIGN(const mode_t mode, check_replaceable_file(path));
  // The temporary file lives in the target's folder so that rename() stays within one file
  // system and is atomic; mkstemp creates it new (O_EXCL), so nothing planted there is followed.
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string temp = (folder / ("." + p.filename().string() + ".tmp-XXXXXX")).string();
  // Removed if a signal stops the process before the rename; no signal falls between the
  // file's creation and its guard.
  std::optional<TemporaryPath> guard;
  int fd = -1, made_errno = 0;
  {
    const SignalsDeferred deferred;
    fd = ::mkstemp(temp.data());
    made_errno = errno;
    if (fd >= 0) guard.emplace(temp);
  }
  if (fd < 0) return make_error("{}: cannot write: {}", path, std::strerror(made_errno));
  auto fail = [&](const std::string& why) -> Expected<void> {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    return make_error("{}: cannot write: {}", path, why);
  };
  // mkstemp makes the file private (0600); an output is as readable as any file the user
  // writes, and a file replaced keeps its permissions (a plan made private stays private).
  if (::fchmod(fd, mode) != 0) return fail(std::strerror(errno));
  if (auto w = write_all(fd, text); !w) return fail(w.error().message());
  if (::fsync(fd) != 0) return fail(std::strerror(errno));
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail(std::strerror(errno));
  // Checked again just before the rename: something may have appeared at `path` meanwhile.
  if (auto still = check_replaceable_file(path); !still) {
    ::unlink(temp.c_str());
    return still.error();
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) return fail(std::strerror(errno));
  return ok();
}

Expected<void> write_new_file(const fs::path& path, std::string_view text) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return make_error("cannot write {}: {}", path.filename().string(), std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out)
    return make_error("cannot write {}: {}", path.filename().string(), std::strerror(errno));
  return ok();
}

namespace {

// Where an output folder goes: `dir` made absolute ("out/" names "out"), its parent, and
// whether it exists; errors as check_output_folder.
struct Destination {
  fs::path target, parent;
  bool exists = false;
};

Expected<Destination> destination(const std::string& dir, const OutputFolderKind& kind) {
  auto fail = [&](const std::string& what) { return Error(fmt::format("{}: {}", dir, what)); };
  if (dir.empty()) return make_error("give a folder for the {}", kind.what);
  std::error_code ec;
  Destination d;
  d.target = fs::absolute(fs::path(dir), ec).lexically_normal();
  if (ec) return fail(ec.message());
  if (!d.target.has_filename()) d.target = d.target.parent_path();
  d.parent = d.target.parent_path();
  if (d.target.filename().empty() || d.target.filename() == ".." ||
      d.target == d.target.root_path())
    return fail(fmt::format("cannot be a {} folder; name a new folder", kind.what));
  if (!fs::is_directory(d.parent, ec)) {
    if (!kind.create_parents)
      return fail(fmt::format("cannot write the {}: its parent folder does not exist", kind.what));
    // Parents are made later; whatever part of them exists must be folders.
    fs::path existing = d.parent;
    while (!existing.empty() && !fs::exists(fs::symlink_status(existing, ec)) &&
           existing != existing.root_path())
      existing = existing.parent_path();
    if (!fs::is_directory(existing, ec))
      return fail(
          fmt::format("cannot write the {}: {} is not a folder", kind.what, existing.string()));
    return d;
  }
  const fs::file_status status = fs::symlink_status(d.target, ec);
  d.exists = fs::exists(status);
  if (!d.exists) return d;
  if (fs::is_symlink(status))
    return fail(fmt::format(
        "is a symbolic link, which the planner never replaces; name a new folder for the {}",
        kind.what));
  if (!fs::is_directory(status))
    return fail(fmt::format("exists and is not a folder; name a new folder for the {}", kind.what));
  std::vector<fs::directory_entry> entries;
  for (const auto& entry : fs::directory_iterator(d.target, ec)) entries.push_back(entry);
  if (ec) return fail(ec.message());
  std::sort(entries.begin(), entries.end());
  if (entries.empty()) return d;
  if (!kind.marker.empty()) {
    const fs::file_status marker = fs::symlink_status(d.target / kind.marker, ec);
    if (fs::is_regular_file(marker)) return d;
  }
  if (kind.own_names.empty())
    return fail(
        fmt::format("holds '{}' and no {} file, so it is not an earlier {}; name a new or empty "
                    "folder (only an "
                    "earlier {} is replaced)",
                    entries.front().path().filename().string(), kind.marker, kind.what, kind.what));
  for (const fs::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    const bool own =
        std::find(kind.own_names.begin(), kind.own_names.end(), name) != kind.own_names.end();
    if (!own || !fs::is_regular_file(entry.symlink_status(ec)))
      return fail(
          fmt::format("holds '{}', which is not a {} file; name a new or empty folder (only an "
                      "earlier {} is replaced)",
                      name, kind.what, kind.what));
  }
  return d;
}

// Swaps two paths in one step where the file system can, else in two renames (undone when the
// second fails).
Expected<void> exchange(const fs::path& fresh, const fs::path& target, const fs::path& parent) {
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0)
    return ok();
  if (errno != EINVAL && errno != ENOSYS)
    return make_error("cannot replace it: {}", std::strerror(errno));
  std::string old_pattern = (parent / ("." + target.filename().string() + ".old-XXXXXX")).string();
  if (!::mkdtemp(old_pattern.data()))
    return make_error("cannot replace it: {}", std::strerror(errno));
  const fs::path old = old_pattern;
  if (std::rename(target.c_str(), old.c_str()) != 0) {
    const int err = errno;
    ::rmdir(old.c_str());
    return make_error("cannot replace it: {}", std::strerror(err));
  }
  if (std::rename(fresh.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::rename(old.c_str(), target.c_str());
    return make_error("cannot replace it: {}", std::strerror(err));
  }
  std::rename(old.c_str(), fresh.c_str());  // the caller removes `fresh`, now the old folder
  return ok();
}

}  // namespace

Expected<void> check_output_folder(const std::string& dir, const OutputFolderKind& kind) {
  PLANNER_TRY(destination(dir, kind));
  return ok();
}

Expected<void> write_folder_atomically(
    const std::string& dir, const OutputFolderKind& kind,
    const std::function<Expected<void>(const std::filesystem::path& fresh)>& fill) {
  auto fail = [&](const std::string& what) { return Error(fmt::format("{}: {}", dir, what)); };
  PLANNER_TRY_ASSIGN(Destination d, destination(dir, kind));
  std::error_code ec;
  if (kind.create_parents) {
    fs::create_directories(d.parent, ec);
    if (ec) return fail(fmt::format("cannot write the {}: {}", kind.what, ec.message()));
  }
  std::string pattern = (d.parent / ("." + d.target.filename().string() + ".tmp-XXXXXX")).string();
  // Removed whole if a signal stops the process meanwhile; no signal falls between the folder's
  // creation and its guard.
  std::optional<TemporaryPath> guard;
  bool made = false;
  int made_errno = 0;
  {
    const SignalsDeferred deferred;
    made = ::mkdtemp(pattern.data()) != nullptr;
    made_errno = errno;
    if (made) guard.emplace(pattern);
  }
  if (!made)
    return fail(fmt::format("cannot write the {}: {}", kind.what, std::strerror(made_errno)));
  const fs::path fresh = pattern;
  // mkdtemp makes the folder private; an output is as readable as any folder the user makes.
  ::chmod(fresh.c_str(), 0777 & ~current_umask());
  auto abandon = [&](const Error& e) {
    fs::remove_all(fresh, ec);
    return e;
  };
  if (auto filled = fill(fresh); !filled) return abandon(filled.error());
  if (!kind.marker.empty()) {
    const std::string text = fmt::format(
        "This folder is a planner {} output; the next one written here replaces it whole.\n",
        kind.what);
    if (auto w = write_new_file(fresh / kind.marker, text); !w)
      return abandon(fail(w.error().message()));
  }
  if (!d.exists) {
    if (std::rename(fresh.c_str(), d.target.c_str()) != 0)
      return abandon(fail(fmt::format("cannot write the {}: {}", kind.what, std::strerror(errno))));
    return ok();
  }
  if (auto swapped = exchange(fresh, d.target, d.parent); !swapped)
    return abandon(fail(swapped.error().message()));
  fs::remove_all(fresh, ec);  // now the earlier output
  return ok();
}

namespace {

// `a` strictly contains `b` (both absolute and normal).
bool holds(const fs::path& a, const fs::path& b) {
  if (a == b) return false;
  auto [mismatch, _] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return mismatch == a.end();
}

fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(path), ec).lexically_normal();
  fs::path r = fs::weakly_canonical(abs, ec);
  if (ec) return abs;
  return r.has_filename() || r == r.root_path() ? r : r.parent_path();
}

Expected<void> check_one(const OutputPath& out, const std::vector<InputPath>& inputs,
                         const std::vector<fs::path>& earlier) {
  const std::string& path = out.path;
  const fs::path where = resolved(path);
  struct stat ost {};
  const bool exists = ::stat(path.c_str(), &ost) == 0;
  for (const InputPath& in : inputs) {
    if (in.path.empty()) continue;
    struct stat ist {};
    if (::stat(in.path.c_str(), &ist) != 0) continue;  // the command reports a missing input itself
    const fs::path in_where = resolved(in.path);
    const bool same =
        (exists && ost.st_dev == ist.st_dev && ost.st_ino == ist.st_ino) || where == in_where;
    const std::string named = in.path == path ? "" : fmt::format(" ({})", in.path);
    if (same)
      return make_error("{}: is {}{}; the planner never writes over an input, name another output",
                        path, in.what, named);
    if (holds(where, in_where))
      return make_error(
          "{}: holds {}{}; the planner never writes over an input, name another output", path,
          in.what, named);
  }
  std::error_code ec;
  const fs::path cwd = fs::weakly_canonical(fs::current_path(ec), ec);
  if (!ec && where == cwd) return make_error("{}: is the working folder; name a new folder", path);
  if (!ec && holds(where, cwd))
    return make_error("{}: holds the working folder; name a new folder", path);
  for (const fs::path& other : earlier) {
    if (other == where)
      return make_error("{}: is also another output of this command; name two different paths",
                        path);
    if (holds(where, other) || holds(other, where))
      return make_error(
          "{}: holds or is inside another output of this command; name two separate paths", path);
  }
  if (out.folder) return check_output_folder(path, *out.folder);
  const fs::path p(path);
  if (!p.has_filename()) return make_error("{}: names a folder; give a file name", path);
  PLANNER_TRY(check_replaceable_file(path));
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec))
    return make_error("{}: cannot write: its folder does not exist", path);
  return ok();
}

}  // namespace

Expected<void> clear_output_folder(const std::string& dir, const OutputFolderKind& kind) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename() != kind.marker) entries.push_back(entry.path());
  if (ec && ec != std::errc::no_such_file_or_directory)
    return make_error("{}: cannot list the folder: {}", dir, ec.message());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    fs::remove_all(p, ec);  // a link is removed itself, its target left alone
    if (ec)
      return make_error("{}: cannot clear {} left by an earlier {}: {}", dir, p.filename().string(),
                        kind.what, ec.message());
  }
  return ok();
}

Expected<void> check_outputs(const std::vector<OutputPath>& outputs,
                             const std::vector<InputPath>& inputs) {
  std::vector<fs::path> earlier;
  for (const OutputPath& out : outputs) {
    if (out.path.empty() || (out.path == "-" && out.standard_output)) continue;
    if (out.path == "-")
      return make_error(
          "-: this output cannot go to standard output (only `plan -o -` writes there); name a "
          "file (./- for a file named '-')");
    PLANNER_TRY(check_one(out, inputs, earlier));
    earlier.push_back(resolved(out.path));
  }
  return ok();
}

}  // namespace planner
