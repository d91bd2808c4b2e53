// Building, running and comparing launchers.
#include "codegen/verify.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "codegen/compile.h"
#include "codegen/verify_relu.h"
#include "support/output_file.h"
#include "support/sha256.h"
#include "support/temporary_paths.h"

namespace planner::codegen {

namespace fs = std::filesystem;

Expected<std::vector<DumpedSlice>> read_dump(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("{}: cannot read", path);
  std::string magic;
  std::getline(f, magic);
  if (magic != "PLNRDUMP2") return make_error("{}: not a launcher dump", path);
  auto u64 = [&]() {
    uint64_t v = 0;
    f.read(reinterpret_cast<char*>(&v), sizeof v);
    return v;
  };
  std::vector<DumpedSlice> out;
  while (f.peek() != EOF) {
    DumpedSlice s;
    uint64_t n = u64();
    if (!f || n > (1u << 20)) return make_error("{}: corrupt dump", path);
    s.name.resize(n);
    f.read(s.name.data(), static_cast<std::streamsize>(n));
    s.dtype = static_cast<ir::DType>(u64());
    s.rank = static_cast<int>(u64());
    uint64_t r = u64();
    if (!f || r > 16) return make_error("{}: corrupt dump", path);
    for (auto* v : {&s.global_shape, &s.offset, &s.shape}) {
      v->resize(r);
      for (auto& x : *v) x = static_cast<int64_t>(u64());
    }
    uint64_t bytes = u64();
    s.bytes.resize(bytes);
    f.read(reinterpret_cast<char*>(s.bytes.data()), static_cast<std::streamsize>(bytes));
    f.read(reinterpret_cast<char*>(&s.floor), sizeof s.floor);
    if (!f) return make_error("{}: truncated dump", path);
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// The value of an f16 / bf16 element (the runtime's planner_rt/half.h does the same).
double half_value(uint16_t h, bool bf16) {
  if (bf16) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0    ? std::ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : std::ldexp(mant | 0x400, exp - 25);
  return (h & 0x8000) ? -v : v;
}

template <typename T>
double load(const DumpedSlice& s, int64_t i) {
  T v;
  std::memcpy(&v, s.bytes.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return static_cast<double>(v);
}

}  // namespace

double dumped_element(const DumpedSlice& s, int64_t i) {
  switch (s.dtype) {
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, s.bytes.data() + i * 2, 2);
      return half_value(v, s.dtype == ir::DType::kBFloat16);
    }
    case ir::DType::kFloat32:
      return load<float>(s, i);
    case ir::DType::kFloat64:
      return load<double>(s, i);
    case ir::DType::kInt64:
      return load<int64_t>(s, i);
    case ir::DType::kInt32:
      return load<int32_t>(s, i);
    case ir::DType::kInt16:
      return load<int16_t>(s, i);
    case ir::DType::kInt8:
      return load<int8_t>(s, i);
    case ir::DType::kUInt64:
      return load<uint64_t>(s, i);
    case ir::DType::kUInt32:
      return load<uint32_t>(s, i);
    case ir::DType::kUInt16:
      return load<uint16_t>(s, i);
    default:  // u8, bool
      return s.bytes[static_cast<size_t>(i)];
  }
}

namespace {

double element(const DumpedSlice& s, int64_t i) {
  return dumped_element(s, i);
}

bool is_half(ir::DType d) {
  return d == ir::DType::kFloat16 || d == ir::DType::kBFloat16;
}

// The operators AMP runs on tensor cores (planner_rt::is_tensor_core_op): their results are
// rounded to 16 bit under mixed precision even where they are stored in f32.
bool tensor_core_op(const std::string& op) {
  return op == "MatMul" || op == "Gemm" || op == "Conv" || op == "ConvGradData" ||
         op == "ConvGradFilter";
}

}  // namespace

int rounding_depth(const Programs& p, int steps) {
  std::vector<int> depth(p.buffers.size(), 0);
  int deepest = 0;
  for (int s = 0; s < std::max(steps, 1); ++s) {
    for (const RankProgram& r : p.ranks)
      for (const Step& step : r.steps) {
        int d = 0;
        bool half_in = false, half_out = false;
        for (int b : step.inputs)
          if (b >= 0) {
            d = std::max(d, depth[static_cast<size_t>(b)]);
            half_in |= is_half(p.buffers[static_cast<size_t>(b)].dtype);
          }
        for (int b : step.outputs)
          if (b >= 0) half_out |= is_half(p.buffers[static_cast<size_t>(b)].dtype);
        const bool tensor_core = step.kind == StepKind::kKernel && tensor_core_op(step.op_type);
        if (p.precision == ir::Precision::kTf32
                ? tensor_core
                : step.kind == StepKind::kKernel && (half_out || (half_in && tensor_core)))
          ++d;
        for (int b : step.outputs)
          if (b >= 0) depth[static_cast<size_t>(b)] = d;
        deepest = std::max(deepest, d);
      }
    for (auto [updated, home] : p.carries)
      depth[static_cast<size_t>(home)] = depth[static_cast<size_t>(updated)];
  }
  return deepest;
}

Tolerance default_tolerance(ir::Precision precision, int depth) {
  Tolerance t;
  switch (precision) {
    case ir::Precision::kFp32:
      return t;
    case ir::Precision::kTf32:
    case ir::Precision::kFp16:
    case ir::Precision::kBf16:
    case ir::Precision::kFp8: {
      // TF32 operands carry f16's 10-bit mantissa: the same u, fewer roundings (rounding_depth).
      // FP8 rounds the products' operands to 3 bits per element, identically in a shard and the
      // whole (the runtime's emulation): the storage is bf16's, and so is the tolerance.
      const bool bf16 = precision == ir::Precision::kBf16 || precision == ir::Precision::kFp8;
      const double u = std::ldexp(1.0, bf16 ? -8 : -11);
      t.atol = t.rtol = 8 * u * std::sqrt(static_cast<double>(std::max(depth, 1)));
      return t;
    }
  }
  return t;
}

namespace {

// The kind of optimizer state a dumped tensor is ("m", "v", "velocity"), or null.
const char* state_kind(const std::string& name) {
  for (const char* kind : {":m:updated", ":v:updated", ":velocity:updated"}) {
    const size_t k = std::strlen(kind);
    if (name.size() > k && name.compare(name.size() - k, k, kind) == 0) return kind;
  }
  return nullptr;
}

}  // namespace

std::vector<DumpedSlice> whole_tensors(const std::vector<DumpedSlice>& ref) {
  std::map<std::string, std::vector<const DumpedSlice*>> slices;
  for (const DumpedSlice& r : ref) slices[r.name].push_back(&r);
  std::vector<DumpedSlice> out;
  for (const auto& [name, list] : slices) {
    const DumpedSlice& first = *list.front();
    if (list.size() == 1 && first.shape == first.global_shape) {
      out.push_back(first);
      continue;
    }
    DumpedSlice w;
    w.name = name;
    w.dtype = first.dtype;
    w.rank = first.rank;
    w.global_shape = w.shape = first.global_shape;
    w.offset.assign(first.global_shape.size(), 0);
    const size_t es = ir::dtype_size(first.dtype);
    int64_t total = 1;
    for (int64_t d : w.global_shape) total *= d;
    w.bytes.assign(static_cast<size_t>(total) * es, 0);
    for (const DumpedSlice* s : list) {
      if (s->global_shape != w.global_shape || s->dtype != w.dtype) continue;
      w.floor = std::max(w.floor, s->floor);
      int64_t n = 1;
      for (int64_t d : s->shape) n *= d;
      std::vector<int64_t> idx(s->shape.size(), 0);
      for (int64_t e = 0; e < n; ++e) {
        int64_t g = 0;
        for (size_t d = 0; d < s->shape.size(); ++d)
          g = g * s->global_shape[d] + s->offset[d] + idx[d];
        std::memcpy(w.bytes.data() + static_cast<size_t>(g) * es,
                    s->bytes.data() + static_cast<size_t>(e) * es, es);
        for (size_t d = s->shape.size(); d-- > 0;) {
          if (++idx[d] < s->shape[d]) break;
          idx[d] = 0;
        }
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

Comparison compare_dumps(const std::vector<DumpedSlice>& part,
                         const std::vector<DumpedSlice>& ref_slices, const Tolerance& tol) {
  Comparison c;
  const std::vector<DumpedSlice> ref = whole_tensors(ref_slices);
  std::map<std::string, const DumpedSlice*> by_name;
  for (const DumpedSlice& r : ref) by_name[r.name] = &r;
  std::map<std::string, std::vector<bool>> covered;
  std::map<std::string, double> scale;
  // Optimizer state is measured against the largest state of its kind over all parameters:
  // one backward pass computes every gradient, with rounding relative to the whole gradient,
  // so the state of a parameter whose gradient vanishes holds rounding alone.
  std::map<std::string, double> state_scale;
  for (const auto& [name, r] : by_name) {
    int64_t n =
        static_cast<int64_t>(r->bytes.size() / std::max<size_t>(1, ir::dtype_size(r->dtype)));
    covered[name].assign(static_cast<size_t>(n), false);
    double m = 0;
    int64_t non_finite = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = element(*r, i);
      if (std::isfinite(v))
        m = std::max(m, std::fabs(v));
      else
        ++non_finite;
    }
    scale[name] = m;
    if (const char* kind = state_kind(name)) state_scale[kind] = std::max(state_scale[kind], m);
    if (non_finite && c.reference_finite && !tol.specials_equal) {
      c.ok = c.reference_finite = false;
      c.problem = fmt::format(
          "the unpartitioned step itself is not finite: '{}' holds {} NaN or infinite values{}",
          name, non_finite, r->dtype == ir::DType::kFloat16 ? " (f16 overflows past 65504)" : "");
    }
  }
  for (const auto& [name, r] : by_name)
    if (const char* kind = state_kind(name)) scale[name] = state_scale[kind];
  for (const DumpedSlice& s : part) {
    auto it = by_name.find(s.name);
    if (it == by_name.end() || it->second->global_shape != s.global_shape) {
      c.ok = false;
      c.problem = fmt::format("output '{}' is not in the reference run", s.name);
      continue;
    }
    const DumpedSlice& r = *it->second;
    // An Adam-updated parameter: its moments, to bound how far rounding turns its update.
    const DumpedSlice *m1 = nullptr, *m2 = nullptr;
    if (tol.adam_step > 0 && s.name.size() > 8 &&
        s.name.compare(s.name.size() - 8, 8, ":updated") == 0) {
      const std::string base = s.name.substr(0, s.name.size() - 8);
      auto a = by_name.find(base + ":m:updated"), b = by_name.find(base + ":v:updated");
      if (a != by_name.end() && b != by_name.end() && a->second->global_shape == s.global_shape &&
          b->second->global_shape == s.global_shape)
        m1 = a->second, m2 = b->second;
    }
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    std::vector<int64_t> idx(s.shape.size(), 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t g = 0;
      for (size_t d = 0; d < s.shape.size(); ++d) g = g * s.global_shape[d] + s.offset[d] + idx[d];
      double a = element(s, e), b = element(r, g);
      double diff = std::fabs(a - b);
      if (std::isnan(a) != std::isnan(b) || (std::isnan(a) && std::isnan(b))) diff = INFINITY;
      if (tol.specials_equal && !std::isfinite(b) && (a == b || (std::isnan(a) && std::isnan(b))))
        diff = 0;
      const double rel = diff / std::max(scale[s.name], 1e-30);
      // An updated parameter's change also carries the rounding of the update (two units in
      // the last place of the parameter, one per run).
      double allowed = tol.atol * scale[s.name] +
                       tol.rtol * (std::isfinite(b) ? std::fabs(b) : 0.0) +
                       2 * std::max(s.floor, r.floor);
      if (m1) {
        // The update lr * m / sqrt(v) moves by the moments' allowed relative errors.
        const double m = std::fabs(element(*m1, g)), v = std::fabs(element(*m2, g));
        const double dm = tol.atol * scale[m1->name] + tol.rtol * m;
        const double dv = tol.atol * scale[m2->name] + tol.rtol * v;
        const double turn = dm / std::max(m, 1e-300) + 0.5 * dv / std::max(v, 1e-300);
        allowed += tol.adam_step * std::min(2.0, turn);
      }
      // A NaN or infinity on either side is never within tolerance.
      const double ratio = diff == 0             ? 0
                           : std::isfinite(diff) ? diff / std::max(allowed, 1e-300)
                                                 : INFINITY;
      if (diff > c.max_abs) c.max_abs = diff;
      c.max_rel = std::max(c.max_rel, rel);
      if (ratio > c.max_ratio || (std::isinf(ratio) && c.worst.empty())) {
        c.max_ratio = ratio;
        c.worst = s.name;
      }
      covered[s.name][static_cast<size_t>(g)] = true;
      for (size_t d = s.shape.size(); d-- > 0;) {
        if (++idx[d] < s.shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  for (const auto& [name, cov] : covered) {
    ++c.tensors;
    if (std::find(cov.begin(), cov.end(), false) != cov.end()) {
      c.ok = false;
      if (c.problem.empty())
        c.problem = fmt::format("the partitioned run does not produce all of '{}'", name);
    }
  }
  if (!(c.max_ratio <= 1)) c.ok = false;
  return c;
}

Comparison compare_expected(const std::vector<DumpedSlice>& reference,
                            const std::vector<ir::Tensor>& expected, double atol, double rtol) {
  Comparison c;
  for (const ir::Tensor& e : expected) {
    ++c.tensors;
    const DumpedSlice* r = nullptr;
    for (const DumpedSlice& s : reference)
      if (s.name == e.name) r = &s;
    if (!r) {
      c.ok = false;
      c.problem = fmt::format("the run has no output '{}'", e.name);
      continue;
    }
    if (r->global_shape != e.shape || r->shape != e.shape) {
      c.ok = false;
      c.problem = fmt::format("output '{}' is {}, expected {}", e.name,
                              ir::shape_to_string(r->global_shape), ir::shape_to_string(e.shape));
      continue;
    }
    DumpedSlice want;
    want.dtype = e.dtype;
    want.bytes = e.data;
    const int64_t n = e.num_elements();
    if (static_cast<int64_t>(want.bytes.size()) < n * ir::dtype_size(e.dtype) ||
        static_cast<int64_t>(r->bytes.size()) < n * ir::dtype_size(r->dtype)) {
      c.ok = false;
      c.problem = fmt::format("output '{}': {} against {} values", e.name, ir::dtype_name(r->dtype),
                              ir::dtype_name(e.dtype));
      continue;
    }
    const bool exact = !ir::is_floating(e.dtype);
    double largest = 0, worst_diff = 0;  // the tensor's largest |expected| and |difference|
    for (int64_t i = 0; i < n; ++i) {
      const double a = element(*r, i), b = element(want, i);
      if (std::isfinite(b)) largest = std::max(largest, std::fabs(b));
      if (a == b || (std::isnan(a) && std::isnan(b))) continue;
      const double diff = std::fabs(a - b);
      if (std::isfinite(diff)) worst_diff = std::max(worst_diff, diff);
      const double allowed = exact ? 0 : atol + rtol * std::fabs(b);
      const double ratio = std::isfinite(diff) ? diff / std::max(allowed, 1e-300) : INFINITY;
      c.max_abs = std::max(c.max_abs, std::isfinite(diff) ? diff : c.max_abs);
      if (ratio > c.max_ratio || (std::isinf(ratio) && c.worst.empty())) {
        c.max_ratio = ratio;
        c.worst = e.name;
      }
    }
    if (worst_diff > 0) c.max_rel = std::max(c.max_rel, worst_diff / std::max(largest, 1e-300));
  }
  if (!(c.max_ratio <= 1)) c.ok = false;
  return c;
}

std::string cache_dir() {
  if (const char* e = std::getenv("PLANNER_CACHE_DIR"); e && *e) return e;
  if (const char* e = std::getenv("XDG_CACHE_HOME"); e && *e) return std::string(e) + "/planner";
  if (const char* e = std::getenv("HOME"); e && *e) return std::string(e) + "/.cache/planner";
  return (fs::temp_directory_path() / "planner-cache").string();
}

int run_command(const std::string& command, std::string& output) {
  return planner::run_command(command, output);
}

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A path as a quoted CMake argument.
std::string quote_cmake(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\' || c == '$' || c == ';') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string tail(const std::string& s, size_t n = 3000) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

// The runtime library built from `src` (a runtime_stub folder), cached by content hash.
Expected<std::string> prebuilt_runtime(const fs::path& src, bool verbose) {
  std::string all;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(src))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    all += fs::relative(f, src).string() + '\0' +
           std::string(std::istreambuf_iterator<char>(in), {}) + '\0';
  }
  std::string key = sha256_hex(all).substr(0, 16);
  fs::path dir = fs::path(cache_dir()) / ("runtime-" + key);
  fs::path lib = dir / "build/libplanner_rt.a";
  std::error_code ec;
  fs::create_directories(dir, ec);
  int lock = ::open((dir / "lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock < 0) return make_error("{}: cannot lock the runtime cache", dir.string());
  ::flock(lock, LOCK_EX);
  Expected<std::string> result = lib.string();
  if (!fs::exists(lib)) {
    fs::remove_all(dir / "src", ec);
    fs::copy(src, dir / "src", fs::copy_options::recursive, ec);
    std::string out;
    std::string cmd =
        fmt::format("cmake -S {} -B {} -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build {}",
                    quote((dir / "src").string()), quote((dir / "build").string()),
                    quote((dir / "build").string()));
    if (verbose) std::fprintf(stderr, "building the runtime library: %s\n", cmd.c_str());
    if (run_command(cmd, out) != 0)
      result = make_error("building the runtime library failed:\n{}", tail(out));
  }
  ::flock(lock, LOCK_UN);
  ::close(lock);
  return result;
}

}  // namespace

Expected<std::vector<std::string>> build_launchers(const std::vector<std::string>& dirs,
                                                   const std::string& build_dir, bool verbose) {
  if (dirs.empty()) return std::vector<std::string>{};
  PLANNER_TRY_ASSIGN(std::string lib,
                     prebuilt_runtime(fs::path(dirs[0]) / "runtime_stub", verbose));
  fs::path root = fs::path(build_dir) / "project";
  std::error_code ec;
  fs::create_directories(root, ec);
  std::string cm = "cmake_minimum_required(VERSION 3.20)\nproject(planner_verify LANGUAGES CXX)\n";
  std::vector<std::string> exes;
  for (size_t i = 0; i < dirs.size(); ++i) {
    cm += fmt::format("set(PLANNER_LAUNCHER_TARGET launcher{})\nadd_subdirectory({} l{})\n", i,
                      quote_cmake(fs::absolute(fs::path(dirs[i]) / "launcher").string()), i);
    exes.push_back((fs::path(build_dir) / "build" / fmt::format("l{}", i) / "launcher").string());
  }
  {
    std::ofstream f(root / "CMakeLists.txt");
    f << cm;
  }
  std::string launcher_flag;
  std::string out;
  if (run_command("command -v ccache", out) == 0)
    launcher_flag = "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache";
  // Paths under the work folder are hashed relative to it, so that ccache finds main.cpp (the
  // same interpreter in every launcher) compiled by an earlier verify in another folder.
  std::string cmd = fmt::format(
      "export CCACHE_BASEDIR={}; cmake -S {} -B {} -G Ninja -DCMAKE_BUILD_TYPE=Release "
      "-DPLANNER_RT_PREBUILT={} {} && "
      "cmake --build {}",
      quote(fs::absolute(build_dir).parent_path().string()), quote(root.string()),
      quote((fs::path(build_dir) / "build").string()), quote(lib), launcher_flag,
      quote((fs::path(build_dir) / "build").string()));
  if (verbose) std::fprintf(stderr, "building the launchers: %s\n", cmd.c_str());
  if (run_command(cmd, out) != 0)
    return make_error("building the launchers failed:\n{}", tail(out));
  return exes;
}

namespace {

double last_step_ms(const std::string& output) {
  double ms = 0;
  size_t at = 0;
  while ((at = output.find("(slowest rank)", at)) != std::string::npos) {
    size_t colon = output.rfind(':', at);
    if (colon != std::string::npos) ms = std::atof(output.c_str() + colon + 1);
    ++at;
  }
  return ms;
}

}  // namespace

const OutputFolderKind& verify_folder_kind() {
  static const OutputFolderKind kind{"verify work folder", ".planner-verify", {}, true};
  return kind;
}

Expected<std::vector<VerifyResult>> verify_programs(const Programs& reference,
                                                    const std::vector<Programs>& partitioned,
                                                    const VerifyOptions& o) {
  std::string work = o.work_dir;
  std::error_code ec;
  std::optional<TemporaryPath> guard;  // the temporary folder, removed if a signal stops verify
  if (work.empty()) {
    std::string templ = (fs::temp_directory_path() / "planner-verify-XXXXXX").string();
    bool made = false;
    {
      const SignalsDeferred deferred;  // no signal between the folder and its guard
      made = ::mkdtemp(templ.data()) != nullptr;
      if (made && !o.keep) guard.emplace(templ);
    }
    if (!made) return make_error("cannot create a temporary folder");
    work = templ;
  } else {
    // A folder the user named: never one holding anything but an earlier verify's work.
    PLANNER_TRY(check_output_folder(work, verify_folder_kind()));
    // An earlier verify's folder starts empty: nothing of the last run is read back, and a link
    // planted in it (run0.dump -> a user's file) is removed as a link, never written through.
    PLANNER_TRY(clear_output_folder(work, verify_folder_kind()));
  }
  fs::create_directories(work, ec);
  if (!o.work_dir.empty()) {
    const std::string marker =
        "This folder is a planner verify work folder; the next verify --keep here reuses it.\n";
    if (auto w = write_new_file(fs::path(work) / verify_folder_kind().marker, marker); !w)
      return w.error().with_context(work);
  }
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code e;
      if (!keep) fs::remove_all(dir, e);
    }
  } cleanup{work, o.keep || !o.work_dir.empty()};

  std::vector<std::string> dirs;
  CompileOptions co;
  co.model_name = "verify";
  // The launchers are what runs; the rank models are written (and so checked by onnx's checker)
  // unless the constants make them large: a model verified with its weights would write them
  // whole once per rank.
  size_t constant_bytes = 0;
  for (const Buffer& b : reference.buffers) constant_bytes += b.data.size();
  co.rank_models = constant_bytes <= (size_t{64} << 20);
  dirs.push_back((fs::path(work) / "reference").string());
  PLANNER_TRY(compile_to_directory(reference, co, dirs.back()));
  for (size_t i = 0; i < partitioned.size(); ++i) {
    dirs.push_back((fs::path(work) / fmt::format("partitioned{}", i)).string());
    PLANNER_TRY(compile_to_directory(partitioned[i], co, dirs.back()));
  }
  PLANNER_TRY_ASSIGN(std::vector<std::string> exes,
                     build_launchers(dirs, (fs::path(work) / "build").string(), o.verbose));
  auto run = [&](size_t i, std::string& out,
                 const std::string& extra = "") -> Expected<std::vector<DumpedSlice>> {
    std::string dump =
        (fs::path(work) / fmt::format("run{}{}.dump", i, extra.empty() ? "" : ".relu")).string();
    std::string cmd = fmt::format("{} --steps {} --seed {} --dump {} --poison --timeout 60{}",
                                  quote(exes[i]), o.steps, o.seed, quote(dump), extra);
    if (o.verbose) std::fprintf(stderr, "running %s\n", cmd.c_str());
    if (run_command(cmd, out) != 0)
      return make_error("{} launcher failed:\n{}", i == 0 ? "the reference" : "the partitioned",
                        tail(out));
    return read_dump(dump);
  };
  std::string ref_out;
  PLANNER_TRY_ASSIGN(std::vector<DumpedSlice> ref, run(0, ref_out));
  Tolerance tolerance = default_tolerance(reference.precision, rounding_depth(reference, o.steps));
  if (o.atol >= 0) tolerance.atol = o.atol;
  if (o.rtol >= 0) tolerance.rtol = o.rtol;
  tolerance.adam_step = o.adam_lr * o.steps;
  std::optional<Comparison> expected;
  if (!o.expected.empty()) {
    std::vector<DumpedSlice> produced = ref;
    for (const ir::Tensor& t : o.constant_outputs) {
      DumpedSlice s;
      s.name = t.name;
      s.dtype = t.dtype;
      s.global_shape = s.shape = t.shape;
      s.offset.assign(t.shape.size(), 0);
      s.bytes = t.data;
      produced.push_back(std::move(s));
    }
    expected = compare_expected(produced, o.expected, o.expected_atol, o.expected_rtol);
    tolerance.specials_equal = true;  // given inputs may make NaN and infinities on purpose
  }
  std::vector<VerifyResult> results;
  if (partitioned.empty()) {  // one rank: the reference run is the result (its finiteness)
    VerifyResult r;
    r.output = ref_out;
    r.tolerance = tolerance;
    r.comparison = compare_dumps(ref, ref, tolerance);
    r.step_ms = last_step_ms(ref_out);
    r.expected = expected;
    results.push_back(std::move(r));
  }
  for (size_t i = 1; i < exes.size(); ++i) {
    VerifyResult r;
    PLANNER_TRY_ASSIGN(std::vector<DumpedSlice> got, run(i, r.output));
    r.tolerance = tolerance;
    r.comparison = compare_dumps(got, ref, tolerance);
    r.step_ms = last_step_ms(r.output);
    r.expected = expected;
    if (!r.comparison.ok && r.comparison.reference_finite && o.adjudicate_relu &&
        (reference.precision == ir::Precision::kFp32 ||
         reference.precision == ir::Precision::kTf32)) {
      // Do the runs' ReLU outputs agree within the tolerance? Then a ReLU or max-pooling
      // decision went another way on values within rounding: the reference again, on the
      // partitioned run's ReLU outputs.
      std::string out;
      PLANNER_TRY_ASSIGN(std::vector<DumpedSlice> part_seen, run(i, out, " --observe-relu"));
      PLANNER_TRY_ASSIGN(std::vector<DumpedSlice> ref_seen, run(0, out, " --observe-relu"));
      const std::vector<DumpedSlice> part_relu = take_relu_records(part_seen);
      ReluDispute dispute = compare_relu(part_relu, take_relu_records(ref_seen), tolerance.atol);
      if (dispute.within && dispute.problem.empty() && !part_relu.empty()) {
        const std::string impose = (fs::path(work) / fmt::format("relu{}.dump", i)).string();
        PLANNER_TRY(write_dump(impose, part_relu));
        PLANNER_TRY_ASSIGN(std::vector<DumpedSlice> imposed,
                           run(0, out, " --impose-relu " + quote(impose)));
        r.before_relu = r.comparison;
        r.comparison = compare_dumps(got, imposed, tolerance);
      }
      if (!part_relu.empty()) r.relu = dispute;
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace planner::codegen
