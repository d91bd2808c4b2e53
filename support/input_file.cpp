// Reading users' files with type and size checks.
#include "support/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/units.h"

namespace planner {
namespace {

// What a file that is not a regular file is, for messages.
const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

Expected<int64_t> check_stat(const std::string& path, const struct stat& st, std::string_view what,
                             int64_t max_bytes) {
  if (S_ISDIR(st.st_mode)) return make_error("{}: is a directory, not a {}", path, what);
  if (!S_ISREG(st.st_mode))
    return make_error("{}: is {}, not a regular file", path, file_type_name(st.st_mode));
  const int64_t size = static_cast<int64_t>(st.st_size);
  if (size > max_bytes)
    return make_error("{}: is {} bytes, over the limit of {} for a {}", path, size,
                      format_bytes(static_cast<double>(max_bytes)), what);
  return size;
}

Error open_error(const std::string& path, int err) {
  if (err == ENOENT) return make_error("{}: no such file", path);
  return make_error("{}: cannot open: {}", path, std::strerror(err));
}

}  // namespace

Expected<int64_t> check_input_file(const std::string& path, std::string_view what,
                                   int64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return open_error(path, errno);
  return check_stat(path, st, what, max_bytes);
}

Expected<std::string> read_file(const std::string& path, std::string_view what, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever; the fstat below
  // refuses it before any read.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return open_error(path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error("{}: cannot read: {}", path, std::strerror(errno));
  PLANNER_TRY_ASSIGN(int64_t size, check_stat(path, st, what, max_bytes));
  std::string text;
  text.reserve(static_cast<size_t>(size));
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return make_error("{}: read error: {}", path, std::strerror(errno));
    if (n == 0) break;
    if (static_cast<int64_t>(text.size()) + n > max_bytes)
      return make_error("{}: is over the limit of {} for a {}", path,
                        format_bytes(static_cast<double>(max_bytes)), what);
    text.append(chunk, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace planner
