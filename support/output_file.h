// Writing the planner's outputs without ever losing a user's file: a file is written to a
// temporary file made with mkstemp beside it and renamed over a regular file or nothing; a
// folder is filled beside its destination and swapped in, and replaces only an earlier output
// of the same kind. Symbolic links, FIFOs, devices and sockets are refused, never replaced.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "support/expected.h"

namespace planner {

/// Writes `text` to `path` all or nothing: a temporary file made with mkstemp in `path`'s
/// folder, written, flushed to disk, then renamed over `path`. `path` must be absent or a
/// regular file: a symbolic link, FIFO, device, socket or directory there is refused and left
/// alone. The file gets the permissions of the file it replaces, or those of a new file (0666
/// less the umask). Errors are one line naming `path`.
Expected<void> write_file_atomically(const std::string& path, std::string_view text);

/// What kind of output folder a command writes, and how an earlier one is recognised.
struct OutputFolderKind {
  std::string what;    ///< in messages: "report", "compile output"
  std::string marker;  ///< file written in every such folder ("" for none); proves an earlier one
  /// Names an earlier folder of this kind may hold when it has no marker (regular files only);
  /// empty: the marker is the only proof.
  std::vector<std::string> own_names;
  bool create_parents = false;  ///< create missing parent folders (else a missing one is an error)
};

/// Checks that `dir` can take an output folder of `kind`, before any work: its parent exists
/// (or kind.create_parents), and `dir` is absent, an empty folder, a folder holding `kind`'s
/// marker, or a folder holding only `kind.own_names`. A symbolic link or a file at `dir` is
/// refused. Errors are one line naming `dir`.
Expected<void> check_output_folder(const std::string& dir, const OutputFolderKind& kind);

/// Empties `dir`, an earlier output folder of `kind` that check_output_folder accepted, keeping
/// only its marker, for a command that writes into it in place (verify --keep). Links inside are
/// removed as links, never followed. Errors are one line naming `dir` and the entry.
Expected<void> clear_output_folder(const std::string& dir, const OutputFolderKind& kind);

/// Writes the folder `dir` all or nothing: check_output_folder, then `fill` writes the files
/// into a fresh private folder beside `dir` (made with mkdtemp), the marker is added, and the
/// folder takes `dir`'s place in one rename (an atomic exchange where the file system has one);
/// the earlier folder is then removed. When `fill` fails nothing changes. `fill`'s errors are
/// returned as they are; the writer's own name `dir`.
Expected<void> write_folder_atomically(
    const std::string& dir, const OutputFolderKind& kind,
    const std::function<Expected<void>(const std::filesystem::path& fresh)>& fill);

/// Writes `text` to `path` directly (a file inside a folder being filled, which no one else
/// sees yet), creating its parent folders. Errors are "cannot write NAME: why" (NAME: the file
/// name), for the caller to put the output folder in front of.
Expected<void> write_new_file(const std::filesystem::path& path, std::string_view text);

/// One output a command is about to write.
struct OutputPath {
  std::string path;                          ///< as the user gave it ("": nothing to write)
  const OutputFolderKind* folder = nullptr;  ///< the kind of folder, or null for a file
  /// "-" means standard output (plan -o -); elsewhere "-" is refused, never a file named "-".
  bool standard_output = false;
};

/// One file a command reads; an output must never be one of them.
struct InputPath {
  std::string path;  ///< as the user gave it ("" or a name that is not a file: skipped)
  std::string what;  ///< "the model", "the plan", "a TDL file"
};

/// The one output-path guard, run by every command that writes before any work starts. Each
/// output must not be one of the inputs (same device and inode, or the same resolved path, so
/// `./model.onnx` and hard links count), nor a folder holding the working folder or an input,
/// nor the same path as another output or inside one; a file output must be absent or a regular
/// file in an existing folder; a folder output must pass check_output_folder. Errors are one line,
/// "OUT: ...".
Expected<void> check_outputs(const std::vector<OutputPath>& outputs,
                             const std::vector<InputPath>& inputs);

}  // namespace planner
