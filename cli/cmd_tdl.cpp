// `planner tdl list | show OP | check FILE`: the operator descriptions (TDL) and the partition
// strategies the analysis finds in them.
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/op_strategies.h"
#include "analysis/strategies.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/tdl_flags.h"
#include "support/input_file.h"
#include "support/text.h"
#include "tdl/instantiate.h"
#include "tdl/library.h"
#include "tdl/parser.h"

namespace planner::cli {
namespace {

using nlohmann::ordered_json;

// JSON indented two spaces, with arrays of scalars on one line (`[2, 6]`): regions stay
// readable instead of taking one line per bound.
std::string dump_compact(const ordered_json& j) {
  std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') {
      size_t close = text.find(']', i);
      std::string_view inner(text.data() + i + 1, close == std::string::npos ? 0 : close - i - 1);
      if (close != std::string::npos && inner.find_first_of("[{") == std::string_view::npos) {
        // Strings never hold brackets here: sizes and variables are identifiers, bounds affine.
        out += '[';
        bool first = true;
        size_t pos = 0;
        while (pos < inner.size()) {
          size_t comma = inner.find(',', pos);
          std::string_view item =
              inner.substr(pos, comma == std::string_view::npos ? inner.size() - pos : comma - pos);
          size_t b = item.find_first_not_of(" \n"), e = item.find_last_not_of(" \n");
          if (b != std::string_view::npos) {
            out += first ? "" : ", ";
            out += item.substr(b, e - b + 1);
            first = false;
          }
          if (comma == std::string_view::npos) break;
          pos = comma + 1;
        }
        out += ']';
        i = close;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// ---------------------------------------------------------------------------------- list

struct ListFlags {
  TdlFlags tdl;
  Format format = Format::kTable;
};

int run_list(const ListFlags& flags) {
  auto library = flags.tdl.load();
  if (!library) return report_tdl_error(library.error());
  auto entries = library->entries();
  if (flags.format == Format::kJson) {
    ordered_json j = ordered_json::array();
    for (const tdl::OpEntry* e : entries)
      j.push_back({{"op", e->op_type},
                   {"domain", e->domain},
                   {"source", fmt::format("{}:{}", e->source_name, e->line)},
                   {"variants", e->variants.size()},
                   {"user", e->from_user}});
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%-22s %-12s %-8s %s\n", "op", "domain", "variants", "defined at");
  for (const tdl::OpEntry* e : entries)
    std::printf("%-22s %-12s %-8zu %s:%d%s\n", e->op_type.c_str(),
                e->domain.empty() ? "ai.onnx" : e->domain.c_str(), e->variants.size(),
                e->source_name.c_str(), e->line, e->from_user ? " (--tdl)" : "");
  std::printf("%zu operators described\n", entries.size());
  return 0;
}

// ---------------------------------------------------------------------------------- show

struct ShowFlags {
  std::string op;
  TdlFlags tdl;
  std::vector<std::string> sizes;  ///< NAME=V items (the option splits on commas)
  std::vector<std::string> attrs;  ///< NAME=VALUE items (repeatable)
  int variant = 1;                 ///< 1-based
  Format format = Format::kTable;
};

Expected<std::map<std::string, int64_t>> parse_sizes(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> sizes;
  for (const std::string& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return make_error("--sizes '{}': expected NAME=VALUE", item);
    std::string value = item.substr(eq + 1);
    int64_t v = 0;
    size_t used = 0;
    try {
      v = std::stoll(value, &used);
    } catch (...) {
      used = 0;
    }
    if (used != value.size() || v <= 0)
      return make_error("--sizes '{}': value '{}' is not a positive integer", item, value);
    sizes[item.substr(0, eq)] = v;
  }
  return sizes;
}

// --attr NAME=VALUE: an integer, a float, a list `[1,2]` of integers or floats, or a string.
Expected<std::map<std::string, tdl::AttrValue>> parse_attrs(const std::vector<std::string>& items) {
  std::map<std::string, tdl::AttrValue> attrs;
  auto number = [](const std::string& text) -> std::optional<tdl::AttrValue> {
    size_t used = 0;
    try {
      if (text.find_first_of(".eE") == std::string::npos) {
        int64_t v = std::stoll(text, &used);
        if (used == text.size()) return tdl::AttrValue(v);
      } else {
        double v = std::stod(text, &used);
        if (used == text.size()) return tdl::AttrValue(v);
      }
    } catch (...) {
    }
    return std::nullopt;
  };
  for (const std::string& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error("--attr '{}': expected NAME=VALUE", item);
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '[' && value.back() == ']') {
      std::vector<int64_t> ints;
      std::vector<double> floats;
      bool is_float = false;
      std::stringstream list(value.substr(1, value.size() - 2));
      std::string element;
      while (std::getline(list, element, ',')) {
        element.erase(0, element.find_first_not_of(' '));
        element.erase(element.find_last_not_of(' ') + 1);
        if (element.empty()) continue;
        auto v = number(element);
        if (!v) return make_error("--attr '{}': '{}' is not a number", item, element);
        if (auto* f = std::get_if<double>(&*v))
          is_float = true, floats.push_back(*f);
        else
          floats.push_back(static_cast<double>(std::get<int64_t>(*v))),
              ints.push_back(std::get<int64_t>(*v));
      }
      attrs[name] = is_float ? tdl::AttrValue(floats) : tdl::AttrValue(ints);
    } else if (auto v = number(value)) {
      attrs[name] = *v;
    } else {
      attrs[name] = value;
    }
  }
  return attrs;
}

// One bound as JSON: an integer when concrete and integral, else its symbolic text.
ordered_json bound_json(const analysis::Affine& a) {
  if (a.is_constant() && a.constant().is_integer()) return a.constant().num();
  return a.to_string();
}

// A region as [[lo, hi], ...] (inclusive), or null when the worker needs none of the tensor.
ordered_json region_json(const analysis::Region& r) {
  if (r.is_empty()) return nullptr;
  ordered_json dims = ordered_json::array();
  for (const analysis::Interval& i : r.dims)
    dims.push_back({bound_json(i.lo()), bound_json(i.hi())});
  return dims;
}

std::string kind_name(const analysis::Strategy& s) {
  return s.kind == analysis::Strategy::Kind::kOutput ? "output" : "reduction";
}

ordered_json show_json(const tdl::OpEntry& entry, int variant, const tdl::Instance& inst,
                       const analysis::OpAnalysis& a) {
  ordered_json j;
  j["op"] = entry.op_type;
  j["domain"] = entry.domain;
  j["source"] = inst.variant;
  j["variant"] = variant;
  j["variants"] = entry.variants.size();
  j["instance"] = tdl::to_string(inst);
  j["sizes"] = inst.sizes;
  j["symbolic"] = a.symbolic;
  j["elementwise"] = a.elementwise;
  ordered_json extents = ordered_json::object();
  for (const auto& [var, extent] : a.extents) extents[var] = bound_json(extent);
  j["extents"] = extents;
  j["strategies"] = ordered_json::array();
  for (const analysis::Strategy& s : a.strategies) {
    ordered_json st;
    st["var"] = s.var;
    st["kind"] = kind_name(s);
    st["valid"] = s.valid;
    if (!s.valid) st["invalid_reason"] = s.invalid_reason;
    st["reduction"] =
        s.output_reduction ? ordered_json(analysis::reducer_name(*s.output_reduction)) : nullptr;
    st["inputs"] = ordered_json::array();
    for (size_t i = 0; i < inst.inputs.size() && i < s.input_regions.size(); ++i) {
      ordered_json in{
          {"name", inst.inputs[i].name},
          {"replicated", s.replicated[i]},
          {"workers", {region_json(s.input_regions[i][0]), region_json(s.input_regions[i][1])}}};
      if (inst.inputs[i].has_view && i < s.input_view_regions.size())
        in["view_workers"] = {region_json(s.input_view_regions[i][0]),
                              region_json(s.input_view_regions[i][1])};
      st["inputs"].push_back(in);
    }
    st["outputs"] = ordered_json::array();
    for (size_t o = 0; o < inst.outputs.size() && o < s.output_regions.size(); ++o) {
      ordered_json out{
          {"name", inst.outputs[o].name},
          {"reduced", o < s.reduced_outputs.size() && s.reduced_outputs[o]},
          {"workers", {region_json(s.output_regions[o][0]), region_json(s.output_regions[o][1])}}};
      if (o < s.state_regions.size() && s.state_regions[o])
        out["state"] = {region_json((*s.state_regions[o])[0]),
                        region_json((*s.state_regions[o])[1])};
      st["outputs"].push_back(out);
    }
    j["strategies"].push_back(st);
  }
  return j;
}

void print_show_table(const tdl::OpEntry& entry, int variant, const tdl::Instance& inst,
                      const analysis::OpAnalysis& a) {
  std::printf("op           %s (%s, variant %d of %zu)\n", entry.display_name().c_str(),
              inst.variant.c_str(), variant, entry.variants.size());
  std::printf("instance     %s\n", tdl::to_string(inst).c_str());
  std::string extents;
  for (const auto& [var, extent] : a.extents)
    extents += fmt::format("{}{} {}", extents.empty() ? "" : ", ", var, extent.to_string());
  std::printf("extents      %s\n", extents.c_str());
  std::printf("elementwise  %s\n", a.elementwise ? "yes" : "no");
  int valid = 0;
  for (const analysis::Strategy& s : a.strategies) valid += s.valid ? 1 : 0;
  std::printf("strategies   %d\n", valid);

  // Column widths: tensor names, then worker 0's region.
  size_t name_width = 6;
  for (const auto& in : inst.inputs) name_width = std::max(name_width, in.name.size());
  for (const auto& out : inst.outputs) name_width = std::max(name_width, out.name.size());
  size_t region_width = 8;
  for (const analysis::Strategy& s : a.strategies) {
    for (const auto& r : s.input_regions)
      region_width = std::max(region_width, r[0].to_string().size());
    for (const auto& r : s.output_regions)
      region_width = std::max(region_width, r[0].to_string().size());
  }
  int n = 0;
  for (const analysis::Strategy& s : a.strategies) {
    std::string reduction = s.output_reduction
                                ? fmt::format(", partial outputs combined with {}",
                                              analysis::reducer_name(*s.output_reduction))
                                : "";
    std::printf("\n%d. split %s (%s%s)%s\n", ++n, s.var.c_str(), kind_name(s).c_str(),
                reduction.c_str(),
                s.valid ? "" : fmt::format(": not usable, {}", s.invalid_reason).c_str());
    std::printf("   %-*s  %-*s  %s\n", static_cast<int>(name_width), "tensor",
                static_cast<int>(region_width), "worker 0", "worker 1");
    for (size_t i = 0; i < inst.inputs.size() && i < s.input_regions.size(); ++i) {
      std::printf(
          "   %-*s  %-*s  %s%s\n", static_cast<int>(name_width), inst.inputs[i].name.c_str(),
          static_cast<int>(region_width), s.input_regions[i][0].to_string().c_str(),
          s.input_regions[i][1].to_string().c_str(), s.replicated[i] ? "  (replicated)" : "");
      // A view separates packed parts (an LSTM's gates from its hidden units): its regions are
      // exact where the declared tensor's can only be a hull.
      if (inst.inputs[i].has_view && i < s.input_view_regions.size())
        std::printf("   %-*s  %-*s  %s  (in its view)\n", static_cast<int>(name_width), "",
                    static_cast<int>(region_width), s.input_view_regions[i][0].to_string().c_str(),
                    s.input_view_regions[i][1].to_string().c_str());
    }
    for (size_t o = 0; o < inst.outputs.size() && o < s.output_regions.size(); ++o) {
      bool reduced = o < s.reduced_outputs.size() && s.reduced_outputs[o];
      std::printf("   %-*s  %-*s  %s%s\n", static_cast<int>(name_width),
                  inst.outputs[o].name.c_str(), static_cast<int>(region_width),
                  s.output_regions[o][0].to_string().c_str(),
                  s.output_regions[o][1].to_string().c_str(),
                  reduced ? "  (partial: reduced)" : "  (output)");
      if (o < s.state_regions.size() && s.state_regions[o])
        std::printf("   %-*s  %-*s  %s  (state read back)\n", static_cast<int>(name_width), "",
                    static_cast<int>(region_width), (*s.state_regions[o])[0].to_string().c_str(),
                    (*s.state_regions[o])[1].to_string().c_str());
    }
  }
}

int run_show(const ShowFlags& flags) {
  auto library = flags.tdl.load();
  if (!library) return report_tdl_error(library.error());
  const tdl::OpEntry* entry = library->find_by_name(flags.op);
  if (!entry)
    return report(make_error("no description of operator '{}' (see 'planner tdl list')", flags.op));
  if (flags.variant < 1 || static_cast<size_t>(flags.variant) > entry->variants.size())
    return report(make_error("--variant {}: '{}' has {} variant{}", flags.variant, flags.op,
                             entry->variants.size(), entry->variants.size() == 1 ? "" : "s"));
  auto sizes = parse_sizes(flags.sizes);
  if (!sizes) return report(sizes.error());
  auto attrs = parse_attrs(flags.attrs);
  if (!attrs) return report(attrs.error());
  const tdl::OpDef& def = *entry->variants[static_cast<size_t>(flags.variant - 1)];
  auto inst = tdl::instantiate_standalone(def, *sizes, *attrs, entry->source);
  if (!inst) return report(inst.error());
  for (const auto& [name, value] : *sizes) {
    bool known = std::find(inst->symbols.begin(), inst->symbols.end(), name) != inst->symbols.end();
    if (!known) {
      std::string all;
      for (const std::string& s : inst->symbols) all += (all.empty() ? "" : ", ") + s;
      return report(make_error("--sizes: '{}' is not a size of {} (its sizes: {})", name,
                               entry->display_name(), all));
    }
  }
  auto a = analysis::analyze(*inst);
  if (!a) return report(a.error());
  ir::Op as_op;
  as_op.op_type = entry->op_type;
  as_op.domain = entry->domain;
  analysis::apply_operator_rules(as_op, *a);
  if (flags.format == Format::kJson) {
    std::printf("%s\n", dump_compact(show_json(*entry, flags.variant, *inst, *a)).c_str());
    return 0;
  }
  print_show_table(*entry, flags.variant, *inst, *a);
  return 0;
}

// ---------------------------------------------------------------------------------- check

// The size every symbol takes when a description is analysable only with concrete sizes.
constexpr int64_t kSampleSize = 8;

struct CheckFlags {
  std::string file;
};

int run_check(const CheckFlags& flags) {
  auto text = read_file(flags.file, "TDL file", static_cast<int64_t>(tdl::kMaxSourceBytes));
  if (!text) return report(text.error());
  auto file = tdl::parse_file(*text, flags.file);
  if (!file) {
    std::fflush(stdout);
    // The diagnostic is already located and formatted (`file:line:col: error: ...`, caret).
    std::fprintf(stderr, "%s\n",
                 terminal_safe(file.error().message(), /*keep_newlines=*/true).c_str());
    return 1;
  }
  std::printf("%s: %zu definition%s\n", flags.file.c_str(), file->ops.size(),
              file->ops.size() == 1 ? "" : "s");
  for (const tdl::OpDef& def : file->ops) {
    // Descriptions that need a node (remaps, required attributes, output extents only a node's
    // shapes give) cannot be analysed alone; that is not a mistake in the file, so they are
    // listed as such rather than failing the check.
    auto first_line = [](const Error& e) {
      const std::string& m = e.message();
      return m.substr(0, m.find('\n'));
    };
    auto inst = tdl::instantiate_standalone(def, {}, {}, file->source.get());
    if (!inst) {
      std::printf("  %-22s line %-4d not analysed alone: %s\n", def.name.c_str(), def.loc.line,
                  first_line(inst.error()).c_str());
      continue;
    }
    auto a = analysis::analyze(*inst);
    std::string note;
    if (!a) {
      // Index maps such as a group's `co / (CO / group)` are affine only once sizes are known:
      // retry with every size bound to a sample value before calling the description wrong.
      std::map<std::string, int64_t> sample;
      for (const std::string& symbol : inst->symbols) sample[symbol] = kSampleSize;
      auto concrete = tdl::instantiate_standalone(def, sample, {}, file->source.get());
      auto retry = concrete ? analysis::analyze(*concrete)
                            : Expected<analysis::OpAnalysis>(concrete.error());
      if (retry) {
        note = fmt::format(" (with every size {}: symbolically, {})", kSampleSize,
                           first_line(a.error()));
        a = std::move(retry);
      } else if (first_line(retry.error()).find("cannot infer the extent") != std::string::npos) {
        std::printf("  %-22s line %-4d not analysed alone: %s\n", def.name.c_str(), def.loc.line,
                    first_line(retry.error()).c_str());
        continue;
      } else {
        std::fflush(stdout);
        std::fprintf(stderr, "%s:%d: error: %s\n", flags.file.c_str(), def.loc.line,
                     terminal_safe(retry.error().message(), /*keep_newlines=*/true).c_str());
        return 1;
      }
    }
    int valid = 0;
    for (const analysis::Strategy& s : a->strategies) valid += s.valid ? 1 : 0;
    std::printf("  %-22s line %-4d %d strateg%s%s%s\n", def.name.c_str(), def.loc.line, valid,
                valid == 1 ? "y" : "ies", a->elementwise ? " (elementwise)" : "", note.c_str());
  }
  std::printf("ok\n");
  return 0;
}

}  // namespace

void configure_tdl(CLI::App& app, std::function<int()>& run) {
  app.require_subcommand(1);

  auto list_flags = std::make_shared<ListFlags>();
  CLI::App* list =
      app.add_subcommand("list", "list the described operators: op, domain, variants, file:line");
  list_flags->tdl.add_to(*list);
  add_format_flag(*list, list_flags->format);

  auto show_flags = std::make_shared<ShowFlags>();
  CLI::App* show = app.add_subcommand(
      "show", "an operator's partition strategies and the regions each worker reads");
  show->add_option("op", show_flags->op, "operator: MatMul, Conv1d, com.example.MyOp, ...")
      ->required();
  show_flags->tdl.add_to(*show);
  show->add_option("--sizes", show_flags->sizes,
                   "concrete sizes, NAME=V,... (regions stay symbolic without)")
      ->delimiter(',');
  show->add_option("--attr", show_flags->attrs,
                   "attribute value, NAME=VALUE (an integer, float, [list] or string; repeatable)");
  show->add_option("--variant", show_flags->variant,
                   "which of the operator's definitions to show (1-based)");
  add_format_flag(*show, show_flags->format);

  auto check_flags = std::make_shared<CheckFlags>();
  CLI::App* check = app.add_subcommand(
      "check", "parse and analyse a file of descriptions; located errors, exit 1");
  check->add_option("file", check_flags->file, "TDL file")->required();

  run = [list, list_flags, show, show_flags, check, check_flags] {
    if (list->parsed()) return run_list(*list_flags);
    if (show->parsed()) return run_show(*show_flags);
    if (check->parsed()) return run_check(*check_flags);
    return 2;
  };
}

}  // namespace planner::cli
