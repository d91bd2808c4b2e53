// Reading the files a user names: every file the planner reads (models, plans, topologies,
// costs, TDL) is checked for type and size before a byte is read, so a FIFO, a device, a
// folder or a huge sparse file gives one clear line instead of a hang or a full memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/expected.h"

namespace planner {

/// The largest text input read whole (plans, topologies, costs, TDL): 256 MiB.
inline constexpr int64_t kMaxInputFileBytes = int64_t{256} << 20;

/// Checks that `path` names a regular file (symbolic links followed) of at most `max_bytes`
/// bytes and returns its size, without opening it. `what` names the kind of file in messages
/// ("model file", "plan file"). Errors: "PATH: no such file", "PATH: is a directory, not a
/// WHAT", "PATH: is a FIFO, not a regular file", "PATH: is N bytes, over the limit of ...".
Expected<int64_t> check_input_file(const std::string& path, std::string_view what = "file",
                                   int64_t max_bytes = kMaxInputFileBytes);

/// The whole file at `path` as bytes, with the checks of check_input_file made on the opened
/// file (fstat, before reading; a FIFO is opened without blocking and refused at once). Reads
/// at most `max_bytes`: a file that grows past it while being read is refused too.
Expected<std::string> read_file(const std::string& path, std::string_view what = "file",
                                int64_t max_bytes = kMaxInputFileBytes);

}  // namespace planner
