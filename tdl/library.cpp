// The operator library: embedded tdl/ops files plus users' --tdl files, indexed by op type.
#include "tdl/library.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "support/input_file.h"
#include "tdl/builtin_ops.h"
#include "tdl/parser.h"

namespace planner::tdl {

Expected<Library> Library::builtin() {
  Library library;
  for (const BuiltinSource& source : builtin_sources())
    PLANNER_TRY(library.add_source(source.text, source.name, /*from_user=*/false));
  return library;
}

Expected<Library> Library::load(const std::vector<std::string>& user_files) {
  PLANNER_TRY_ASSIGN(Library library, builtin());
  for (const std::string& path : user_files) PLANNER_TRY(library.add_user_file(path));
  return library;
}

Expected<void> Library::add_user_file(const std::string& path) {
  PLANNER_TRY_ASSIGN(std::string text,
                     read_file(path, "TDL file", static_cast<int64_t>(tdl::kMaxSourceBytes)));
  return add_source(text, path, /*from_user=*/true);
}

Expected<void> Library::add_source(std::string_view text, std::string source_name, bool from_user) {
  PLANNER_TRY_ASSIGN(File parsed, parse_file(text, source_name));
  auto file = std::make_shared<const File>(std::move(parsed));
  // Operators this file has already (re)defined: their later variants append instead of
  // replacing the first ones again.
  std::vector<size_t> defined_here;
  for (const OpDef& def : file->ops) {
    auto key = std::make_pair(def.domain, def.op_type);
    auto it = index_.find(key);
    if (it == index_.end()) {
      OpEntry entry{def.domain,         def.op_type,  {&def},   file->source.get(),
                    file->source->name, def.loc.line, from_user};
      index_.emplace(key, entries_.size());
      defined_here.push_back(entries_.size());
      entries_.push_back(std::move(entry));
      continue;
    }
    OpEntry& entry = entries_[it->second];
    if (std::find(defined_here.begin(), defined_here.end(), it->second) != defined_here.end()) {
      entry.variants.push_back(&def);
      continue;
    }
    if (!from_user)
      return located_error(*file->source, def.loc,
                           fmt::format("operator '{}' is already described at {}:{}", def.name,
                                       entry.source_name, entry.line));
    // A user file replaces the whole description: mixing its variants with the built-in ones
    // would make the variant order (and so the chosen variant) depend on both files.
    entry = OpEntry{def.domain,         def.op_type,  {&def}, file->source.get(),
                    file->source->name, def.loc.line, true};
    defined_here.push_back(it->second);
  }
  files_.push_back(std::move(file));
  return ok();
}

const OpEntry* Library::find(std::string_view op_type, std::string_view domain) const {
  // ONNX writes the default domain as "" or "ai.onnx"; both mean the shipped operators.
  if (domain == "ai.onnx") domain = "";
  auto it = index_.find(std::make_pair(std::string(domain), std::string(op_type)));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const OpEntry* Library::find_by_name(std::string_view name) const {
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return find(name, "");
  return find(name.substr(dot + 1), name.substr(0, dot));
}

std::vector<const OpEntry*> Library::entries() const {
  std::vector<const OpEntry*> out;
  out.reserve(index_.size());
  for (const auto& [key, i] : index_) out.push_back(&entries_[i]);  // the map is sorted
  return out;
}

}  // namespace planner::tdl
