// Observing and imposing ReLU decisions (planner_rt/relu_decisions.h).
#include "planner_rt/relu_decisions.h"

#include <cstring>
#include <fstream>

namespace planner::rt {

namespace {

uint64_t read_u64(std::ifstream& f) {
  uint64_t v = 0;
  f.read(reinterpret_cast<char*>(&v), sizeof v);
  return v;
}

// The row-major index in the whole tensor of element `e` of a slice at `offset`.
int64_t global_index(const Shape& local, const Shape& offset, const Shape& whole, int64_t e) {
  int64_t index = 0, stride = 1;
  for (size_t d = local.size(); d-- > 0;) {
    const int64_t i = e % local[d];
    e /= local[d];
    index += (i + offset[d]) * stride;
    stride *= whole[d];
  }
  return index;
}

}  // namespace

void ReluDecisions::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string magic;
  if (!f || !std::getline(f, magic) || magic != "PLNRDUMP2")
    throw Error(path + ": not a launcher dump");
  while (f.peek() != EOF) {
    const uint64_t n = read_u64(f);
    if (!f || n > (1u << 20)) throw Error(path + ": corrupt dump");
    std::string name(n, '\0');
    f.read(name.data(), static_cast<std::streamsize>(n));
    const auto dtype = static_cast<DType>(read_u64(f));
    read_u64(f);  // rank
    const uint64_t rank = read_u64(f);
    if (!f || rank > 16) throw Error(path + ": corrupt dump");
    Shape whole(rank), offset(rank), shape(rank);
    for (Shape* s : {&whole, &offset, &shape})
      for (int64_t& x : *s) x = static_cast<int64_t>(read_u64(f));
    const uint64_t bytes = read_u64(f);
    std::vector<unsigned char> data(bytes);
    f.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes));
    double floor = 0;
    f.read(reinterpret_cast<char*>(&floor), sizeof floor);
    if (!f) throw Error(path + ": truncated dump");
    if (name.rfind("relu:", 0) != 0) continue;
    if (dtype != DType::kFloat32) throw Error(path + ": '" + name + "' is not f32");
    const int64_t count = num_elements(shape);
    if (static_cast<int64_t>(bytes) != count * 4) throw Error(path + ": corrupt dump");
    Whole& w = imposed_[name];
    if (w.values.empty()) {
      w.shape = whole;
      w.values.assign(static_cast<size_t>(num_elements(whole)), 0.0f);
    }
    for (int64_t e = 0; e < count; ++e) {
      const int64_t g = global_index(shape, offset, whole, e);
      if (g < 0 || g >= static_cast<int64_t>(w.values.size()))
        throw Error(path + ": '" + name + "' lies outside its tensor");
      std::memcpy(&w.values[static_cast<size_t>(g)], data.data() + e * 4, 4);
    }
  }
}

void ReluDecisions::after_kernel(const Program& program, int64_t step, const StepSpec& s,
                                 const std::vector<Tensor>& outputs) {
  if (step != step_) {
    step_ = step;
    occurrences_.clear();
  }
  if (s.op_type != "Relu" || !(s.domain.empty() || s.domain == "ai.onnx") || s.outputs.empty() ||
      s.outputs[0] < 0 || outputs.empty())
    return;
  const BufferSpec& b = program.buffers.at(static_cast<size_t>(s.outputs[0]));
  const std::string name =
      "relu:" + b.name + "@" + std::to_string(step) + "#" + std::to_string(occurrences_[b.name]++);
  const Tensor& y = outputs[0];
  auto it = imposed_.find(name);
  if (it != imposed_.end() && y.dtype == DType::kFloat32) {
    if (it->second.shape != b.global_shape)
      throw Error("--impose-relu: '" + name + "' has another shape than the tensor");
    std::vector<float> host(static_cast<size_t>(y.numel()) + 1);
    copy_to_host(y, host.data());
    for (int64_t e = 0; e < y.numel(); ++e) {
      const float want =
          it->second
              .values[static_cast<size_t>(global_index(b.shape, b.offset, b.global_shape, e))];
      float& v = host[static_cast<size_t>(e)];
      if ((want > 0) != (v > 0)) ++imposed_elements;
      v = want;
    }
    copy_from_host(y, host.data());
  }
  if (observe) {
    ObservedRelu o;
    o.buffer = s.outputs[0];
    o.name = name;
    o.bytes.resize(y.bytes() + 1);
    copy_to_host(y, o.bytes.data());
    o.bytes.pop_back();
    observed.push_back(std::move(o));
  }
}

}  // namespace planner::rt
