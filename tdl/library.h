// The operator library: the shipped descriptions (tdl/ops/*.tdl, embedded in the binary) plus
// users' files given with --tdl, looked up by ONNX (op type, domain).
//
// A user description replaces every built-in variant of the operator with the same op type and
// domain, so a user can correct or refine a shipped description without editing the planner.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/expected.h"
#include "tdl/ast.h"

namespace planner::tdl {

/// One described operator: every variant written for one (domain, op type), in file order.
/// Instantiation tries the variants in this order (docs/tdl.md, "Variants").
struct OpEntry {
  std::string domain;                  ///< "" for the default ONNX domain
  std::string op_type;                 ///< e.g. "Conv"
  std::vector<const OpDef*> variants;  ///< owned by the Library; never empty
  const Source* source = nullptr;      ///< the file every variant comes from (owned by the Library)
  std::string source_name;             ///< that file's name ("tdl/ops/conv.tdl")
  int line = 0;                        ///< line of the first variant's `op` keyword
  bool from_user = false;              ///< came from a --tdl file

  /// `domain.op_type`, or just `op_type` in the default domain: how `tdl list` and `tdl show`
  /// name it.
  std::string display_name() const { return domain.empty() ? op_type : domain + "." + op_type; }
};

/// The descriptions the planner knows. Cheap to move; entries and the OpDefs they point to stay
/// valid for the library's lifetime (files are held by shared pointers).
class Library {
 public:
  /// An empty library (no descriptions): every operator is undescribed.
  Library() = default;

  /// The shipped library: parses every embedded tdl/ops file. An error here is a bug in a
  /// shipped file (tests/tdl/library_test.cpp parses them all), reported located all the same.
  static Expected<Library> builtin();

  /// The shipped library plus the user files, in order (later files override earlier ones).
  static Expected<Library> load(const std::vector<std::string>& user_files);

  /// Reads and adds a user file. Errors: an unreadable file (`FILE: cannot read ...`) or the
  /// parser's located diagnostic. Its operators replace same-named ones already present.
  Expected<void> add_user_file(const std::string& path);

  /// Adds descriptions held in memory; `source_name` is used in diagnostics. With `from_user`
  /// its operators replace same-named ones; a built-in file redefining an operator another
  /// built-in file already defines is an error (a library mistake caught by the tests).
  Expected<void> add_source(std::string_view text, std::string source_name, bool from_user);

  /// The description of (op type, domain), or null when there is none.
  const OpEntry* find(std::string_view op_type, std::string_view domain = "") const;

  /// Looks an operator up by its display name: `MatMul`, `com.microsoft.FusedMatMul`.
  const OpEntry* find_by_name(std::string_view name) const;

  /// Every described operator, sorted by (domain, op type): the order `tdl list` prints.
  std::vector<const OpEntry*> entries() const;

  /// The parsed files, in the order they were added.
  const std::vector<std::shared_ptr<const File>>& files() const { return files_; }

 private:
  std::vector<std::shared_ptr<const File>> files_;
  std::vector<OpEntry> entries_;  // in order of first definition
  std::map<std::pair<std::string, std::string>, size_t, std::less<>> index_;  // (domain, type)
};

}  // namespace planner::tdl
