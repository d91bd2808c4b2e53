// Per-rank programs: text form.
#include "codegen/program.h"

#include <fmt/format.h>

#include "codegen/rank_classes.h"

namespace planner::codegen {

std::vector<int64_t> Buffer::shape() const {
  std::vector<int64_t> s;
  for (const analysis::Range& r : region) s.push_back(r.size());
  return s;
}

const char* step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kKernel:
      return "kernel";
    case StepKind::kAllReduce:
      return "all_reduce";
    case StepKind::kAllGather:
      return "all_gather";
    case StepKind::kAllToAll:
      return "all_to_all";
    case StepKind::kReduceScatter:
      return "reduce_scatter";
    case StepKind::kSend:
      return "send";
    case StepKind::kRecv:
      return "recv";
  }
  return "?";
}

std::string Programs::buffer_label(int id) const {
  if (id < 0) return "-";
  const Buffer& b = buffers[static_cast<size_t>(id)];
  std::vector<std::string> dims;
  for (const analysis::Range& r : b.region) dims.push_back(fmt::format("{}:{}", r.begin, r.end));
  // 16-bit buffers of a mixed-precision program say so; f32 and integers are the usual case.
  const bool half = b.dtype == ir::DType::kFloat16 || b.dtype == ir::DType::kBFloat16;
  return fmt::format("b{} {}[{}]{}{}", id, b.tensor_name, fmt::join(dims, ","), half ? " " : "",
                     half ? ir::dtype_name(b.dtype) : "");
}

bool Programs::has_steps(int r) const {
  return !symmetry || symmetry->representative_of(r) == r;
}

std::string Programs::to_text() const {
  std::string out;
  for (const RankProgram& p : ranks) {
    out += fmt::format("rank {}\n", p.rank);
    for (const Step& s : p.steps) {
      std::vector<std::string> ins, outs;
      for (int b : s.inputs) ins.push_back(buffer_label(b));
      for (int b : s.outputs) outs.push_back(buffer_label(b));
      std::string what = s.kind == StepKind::kKernel
                             ? (s.domain.empty() ? s.op_type : s.domain + "." + s.op_type) +
                                   (s.fallback ? " (whole)" : "")
                             : step_kind_name(s.kind);
      std::string extra;
      if (!s.group.empty()) extra += fmt::format(" group=[{}]", fmt::join(s.group, ","));
      if (s.peer >= 0) extra += fmt::format(" peer={}", s.peer);
      if (s.kind == StepKind::kAllGather || s.kind == StepKind::kAllToAll ||
          s.kind == StepKind::kReduceScatter)
        extra += fmt::format(" axis={}", s.axis);
      if (s.kind == StepKind::kAllToAll) extra += fmt::format(" concat_axis={}", s.axis2);
      out += fmt::format("  {}{}: ({}) -> ({})\n", what, extra, fmt::join(ins, ", "),
                         fmt::join(outs, ", "));
    }
  }
  return out;
}

}  // namespace planner::codegen
