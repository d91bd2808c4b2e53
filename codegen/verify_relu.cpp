// verify's adjudication of ReLU decisions (codegen/verify_relu.h).
#include "codegen/verify_relu.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

namespace planner::codegen {

std::vector<DumpedSlice> take_relu_records(std::vector<DumpedSlice>& dump) {
  std::vector<DumpedSlice> relu, rest;
  for (DumpedSlice& s : dump) (s.name.rfind("relu:", 0) == 0 ? relu : rest).push_back(std::move(s));
  dump = std::move(rest);
  return relu;
}

ReluDispute compare_relu(const std::vector<DumpedSlice>& partitioned,
                         const std::vector<DumpedSlice>& reference, double tolerance) {
  ReluDispute d;
  std::map<std::string, DumpedSlice> part;
  for (DumpedSlice& s : whole_tensors(partitioned)) part.emplace(s.name, std::move(s));
  for (const DumpedSlice& r : whole_tensors(reference)) {
    auto it = part.find(r.name);
    if (it == part.end() || it->second.global_shape != r.global_shape) {
      d.problem = fmt::format("the partitioned run has no '{}'", r.name);
      return d;
    }
    const DumpedSlice& p = it->second;
    const int64_t n =
        static_cast<int64_t>(r.bytes.size() / std::max<size_t>(1, ir::dtype_size(r.dtype)));
    double scale = 0;
    for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(dumped_element(r, i)));
    for (int64_t i = 0; i < n; ++i) {
      const double a = dumped_element(r, i), b = dumped_element(p, i);
      if ((a > 0) != (b > 0)) ++d.elements;
      const double diff = std::fabs(a - b) / std::max(scale, 1e-30);
      if (diff > d.largest) {
        d.largest = diff;
        // "relu:<tensor>@<step>#<k>" -> the tensor
        const size_t at = r.name.rfind('@');
        d.tensor = r.name.substr(5, at == std::string::npos ? std::string::npos : at - 5);
      }
      if (!(diff <= tolerance)) d.within = false;
    }
  }
  if (part.size() != whole_tensors(reference).size() && d.problem.empty())
    d.problem = "the runs observed different ReLUs";
  return d;
}

Expected<void> write_dump(const std::string& path, const std::vector<DumpedSlice>& slices) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return make_error("{}: cannot write", path);
  auto u64 = [&](uint64_t v) { f.write(reinterpret_cast<const char*>(&v), sizeof v); };
  f << "PLNRDUMP2\n";
  for (const DumpedSlice& s : slices) {
    u64(s.name.size());
    f.write(s.name.data(), static_cast<std::streamsize>(s.name.size()));
    u64(static_cast<uint64_t>(s.dtype));
    u64(static_cast<uint64_t>(s.rank));
    u64(s.global_shape.size());
    for (const auto* v : {&s.global_shape, &s.offset, &s.shape})
      for (int64_t x : *v) u64(static_cast<uint64_t>(x));
    u64(s.bytes.size());
    f.write(reinterpret_cast<const char*>(s.bytes.data()),
            static_cast<std::streamsize>(s.bytes.size()));
    f.write(reinterpret_cast<const char*>(&s.floor), sizeof s.floor);
  }
  if (!f.flush()) return make_error("{}: cannot write", path);
  return {};
}

}  // namespace planner::codegen
