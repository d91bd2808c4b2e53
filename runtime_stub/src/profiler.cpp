// Kernel timers, step reports and the --costs JSON writer.
#include "planner_rt/profiler.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <ostream>

#include "backend.h"

namespace planner::rt {

std::string format_double(double value) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, res.ptr);
}

std::string attribute_text(const Attributes& attrs) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_double(v); }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + format_double(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<std::string>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ",\"" : "\"") + v[i] + "\"";
      return s + "]";
    }
  };
  std::string key;
  for (const auto& [name, value] : attrs) {  // std::map: sorted by name
    if (!key.empty()) key += ";";
    key += name + "=" + std::visit(Visitor{}, value);
  }
  return key;
}

double Profiler::Entry::median() const {
  if (seconds.empty()) return 0;
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

void Profiler::record(std::string_view domain, std::string_view op_type, const Attributes& attrs,
                      std::span<const Tensor> inputs, double seconds) {
  KernelKey key;
  key.op_type = std::string(op_type);
  key.domain = domain == "ai.onnx" ? std::string() : std::string(domain);
  key.attributes = attribute_text(attrs);
  for (const Tensor& t : inputs)
    if (t.present()) key.input_shapes.push_back(t.shape);
  key.dtype =
      !inputs.empty() && inputs[0].present() ? std::string(dtype_name(inputs[0].dtype)) : "none";
  entries_[std::move(key)].push_back(seconds);
}

void Profiler::run(std::string_view domain, std::string_view op_type, const Attributes& attrs,
                   std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                   std::string_view node) {
  const double s =
      backend::time_kernel([&] { run_kernel(domain, op_type, attrs, inputs, outputs, node); });
  record(domain, op_type, attrs, inputs, s);
}

void Profiler::merge(const Profiler& other) {
  for (const auto& [key, samples] : other.entries_) {
    auto& mine = entries_[key];
    mine.insert(mine.end(), samples.begin(), samples.end());
  }
}

void Profiler::add(const Entry& entry) {
  auto& mine = entries_[entry.key];
  mine.insert(mine.end(), entry.seconds.begin(), entry.seconds.end());
}

std::vector<Profiler::Entry> Profiler::entries() const {
  std::vector<Entry> out;
  for (const auto& [key, samples] : entries_) out.push_back({key, samples});
  return out;
}

double Profiler::total_seconds() const {
  double t = 0;
  for (const auto& [key, samples] : entries_)
    for (double s : samples) t += s;
  return t;
}

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

void write_costs_json(std::ostream& out, const std::string& device, const Profiler& profiler) {
  out << "{\"schema\": \"planner-costs/1\", \"device\": " << json_string(device)
      << ", \"kernels\": [";
  bool first = true;
  for (const Profiler::Entry& e : profiler.entries()) {
    out << (first ? "\n  " : ",\n  ");
    first = false;
    out << "{\"op_type\": " << json_string(e.key.op_type)
        << ", \"domain\": " << json_string(e.key.domain)
        << ", \"attributes\": " << json_string(e.key.attributes) << ", \"input_shapes\": [";
    for (size_t i = 0; i < e.key.input_shapes.size(); ++i) {
      out << (i ? ", [" : "[");
      for (size_t j = 0; j < e.key.input_shapes[i].size(); ++j)
        out << (j ? "," : "") << e.key.input_shapes[i][j];
      out << "]";
    }
    out << "], \"dtype\": " << json_string(e.key.dtype)
        << ", \"seconds\": " << format_double(e.median()) << "}";
  }
  out << (first ? "]}\n" : "\n]}\n");
}

std::string cpu_device_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) break;
      std::string name = line.substr(colon + 1);
      name.erase(0, name.find_first_not_of(" \t"));
      if (!name.empty()) return name;
    }
  }
  return "cpu";
}

std::string step_report(int rank, int step, double seconds, int64_t peak_bytes) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "rank %d step %d: %.3f ms, peak %.2f MiB (%lld bytes)", rank, step,
                seconds * 1e3, static_cast<double>(peak_bytes) / (1024.0 * 1024.0),
                static_cast<long long>(peak_bytes));
  return buf;
}

}  // namespace planner::rt
