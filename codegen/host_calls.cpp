// A step as the cuda backend's host rules see it.
#include "codegen/host_calls.h"

#include <variant>

#include "runtime_stub/include/planner_rt/cuda_host_calls.h"

namespace planner::codegen {

namespace {

// A step's attributes through the rules' interface.
class StepAttributes final : public rt::CallAttributes {
 public:
  explicit StepAttributes(const Step& s) : s_(s) {}
  int64_t get_int(std::string_view name, int64_t fallback) const override {
    const ir::Attribute* a = find(name);
    return a && a->is_int() ? std::get<int64_t>(a->value) : fallback;
  }
  std::string get_string(std::string_view name) const override {
    const ir::Attribute* a = find(name);
    return a && a->is_string() ? std::get<std::string>(a->value) : std::string();
  }
  std::vector<int64_t> get_ints(std::string_view name) const override {
    const ir::Attribute* a = find(name);
    return a && a->is_ints() ? std::get<std::vector<int64_t>>(a->value) : std::vector<int64_t>();
  }

 private:
  const ir::Attribute* find(std::string_view name) const {
    auto it = s_.attributes.find(std::string(name));
    return it == s_.attributes.end() ? nullptr : &it->second;
  }
  const Step& s_;
};

rt::CallTensor describe(const Programs& p, int buffer) {
  if (buffer < 0) return {};
  const Buffer& b = p.buffers[static_cast<size_t>(buffer)];
  return {static_cast<int32_t>(b.dtype), b.shape()};
}

}  // namespace

std::string_view cuda_host_reason(const Programs& p, const Step& s) {
  if (s.kind != StepKind::kKernel) return "";
  const StepAttributes attributes(s);
  rt::KernelCall call;
  call.domain = s.domain;
  call.op_type = s.op_type;
  call.attributes = &attributes;
  for (int b : s.inputs) call.inputs.push_back(describe(p, b));
  for (int b : s.outputs) call.outputs.push_back(describe(p, b));
  return rt::cuda_host_reason(call);
}

std::map<std::string, int64_t> cuda_host_calls(const Programs& p, int rank) {
  std::map<std::string, int64_t> counts;
  for (const Step& s : p.ranks[static_cast<size_t>(rank)].steps)
    if (std::string_view why = cuda_host_reason(p, s); !why.empty()) ++counts[std::string(why)];
  return counts;
}

}  // namespace planner::codegen
