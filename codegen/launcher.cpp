// The launcher's sources: the fixed interpreter and the generated program tables.
#include "codegen/launcher.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "codegen/launcher_templates.inc"
#include "codegen/memory_plan.h"
#include "support/sha256.h"

namespace planner::codegen {

std::string cpp_string_literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\{:03o}", c);
    }
  }
  out += '"';
  return out;
}

namespace {

// The tables program.cpp holds, filled in the order main.cpp reads them.
class Encoder {
 public:
  void i(int64_t v) { ints_.push_back(v); }
  void s(const std::string& v) {
    auto [it, fresh] = string_index_.try_emplace(v, static_cast<int64_t>(strings_.size()));
    if (fresh) strings_.push_back(v);
    i(it->second);
  }
  void d(double v) {
    doubles_.push_back(v);
    i(static_cast<int64_t>(doubles_.size() - 1));
  }
  void shape(const std::vector<int64_t>& v) {
    i(static_cast<int64_t>(v.size()));
    for (int64_t x : v) i(x);
  }
  void ints(const std::vector<int>& v) {
    i(static_cast<int64_t>(v.size()));
    for (int x : v) i(x);
  }
  int64_t bytes(const std::vector<uint8_t>& v) {
    int64_t at = static_cast<int64_t>(bytes_.size());
    bytes_.insert(bytes_.end(), v.begin(), v.end());
    return at;
  }

  std::string source(const std::string& header) const {
    std::string out = header;
    out += "#include <cstdint>\n\n#include \"launcher.h\"\n\nnamespace launcher {\nnamespace {\n\n";
    out += "const char* const kStrings[] = {\n";
    for (const std::string& s : strings_) out += "    " + cpp_string_literal(s) + ",\n";
    out += "    \"\"};\n\n";
    out += "const int64_t kInts[] = {\n";
    for (size_t k = 0; k < ints_.size(); k += 16) {
      out += "    ";
      for (size_t j = k; j < std::min(ints_.size(), k + 16); ++j)
        out += fmt::format("{},", ints_[j]);
      out += "\n";
    }
    out += "    0};\n\n";
    out += "const double kDoubles[] = {\n";
    for (double v : doubles_) {
      if (std::isnan(v))
        out += "    __builtin_nan(\"\"),\n";
      else if (std::isinf(v))
        out += v > 0 ? "    __builtin_inf(),\n" : "    -__builtin_inf(),\n";
      else
        out += fmt::format("    {},\n", v);
    }
    out += "    0};\n\n";
    if (blob()) {
      // The bytes live in program.bin, assembled in as they are (`.incbin`, found through the
      // assembler's include path the CMakeLists sets): megabytes of weights as a C++ array
      // literal take gigabytes to compile. Their hash is written here so that a compiler
      // cache, which hashes this source and not the file it includes, never mixes two blobs.
      out += fmt::format("// program.bin: {} bytes, SHA-256 {}\n", bytes_.size(),
                         sha256_hex(std::string(bytes_.begin(), bytes_.end())));
      out += "extern \"C\" const unsigned char planner_program_bytes[];\n";
      out +=
          "asm(\".section .rodata\\n.balign 16\\n.globl planner_program_bytes\\n"
          ".hidden planner_program_bytes\\nplanner_program_bytes:\\n.incbin "
          "\\\"program.bin\\\"\\n.byte 0\\n.previous\");\n";
      out += "const unsigned char* const kBytes = planner_program_bytes;\n\n}  // namespace\n\n";
    } else {
      out += "const unsigned char kBytes[] = {\n";
      for (size_t k = 0; k < bytes_.size(); k += 24) {
        out += "    ";
        for (size_t j = k; j < std::min(bytes_.size(), k + 24); ++j)
          out += fmt::format("{},", bytes_[j]);
        out += "\n";
      }
      out += "    0};\n\n}  // namespace\n\n";
    }
    out += fmt::format(
        "const ProgramTable kProgram = {{kStrings, {}, kInts, {}, kDoubles, {}, kBytes, {}}};\n\n",
        strings_.size(), ints_.size(), doubles_.size(), bytes_.size());
    out += "}  // namespace launcher\n";
    return out;
  }

  /// Whether the bytes go into program.bin instead of program.cpp (over 256 KiB).
  bool blob() const { return bytes_.size() > kInlineBytes; }
  std::string blob_bytes() const { return std::string(bytes_.begin(), bytes_.end()); }

  static constexpr size_t kInlineBytes = 256 * 1024;

 private:
  std::vector<std::string> strings_;
  std::map<std::string, int64_t> string_index_;
  std::vector<int64_t> ints_;
  std::vector<double> doubles_;
  std::vector<uint8_t> bytes_;
};

// A tensor attribute's values as the runtime reads them (ConstantOfShape's and Constant's
// `value`): one element as a scalar, more as a flat list; integers stay integers. Absent where
// the tensor holds no numeric data (the kernels then fail naming the attribute).
std::optional<ir::Attribute> tensor_attribute_values(const ir::Attribute& a) {
  const ir::Tensor& t = *std::get<std::shared_ptr<const ir::Tensor>>(a.value);
  if (!t.has_data() || t.dtype == ir::DType::kString) return std::nullopt;
  const bool integral = !ir::is_floating(t.dtype);
  if (t.num_elements() == 1)
    return integral ? ir::Attribute{t.int_values()[0]} : ir::Attribute{t.float_values()[0]};
  return integral ? ir::Attribute{t.int_values()} : ir::Attribute{t.float_values()};
}

void encode_attribute(Encoder& e, const std::string& name, const ir::Attribute& a) {
  e.s(name);
  if (a.is_int()) {
    e.i(0);
    e.i(std::get<int64_t>(a.value));
  } else if (a.is_float()) {
    e.i(1);
    e.d(std::get<double>(a.value));
  } else if (a.is_string()) {
    e.i(2);
    e.s(std::get<std::string>(a.value));
  } else if (a.is_ints()) {
    e.i(3);
    e.shape(std::get<std::vector<int64_t>>(a.value));
  } else if (a.is_floats()) {
    const auto& v = std::get<std::vector<double>>(a.value);
    e.i(4);
    e.i(static_cast<int64_t>(v.size()));
    for (double x : v) e.d(x);
  } else {
    const auto& v = std::get<std::vector<std::string>>(a.value);
    e.i(5);
    e.i(static_cast<int64_t>(v.size()));
    for (const std::string& x : v) e.s(x);
  }
}

const char* kProgramHeader =
    "// Generated by `planner compile`: the per-rank programs as tables (see main.cpp). Do not "
    "edit.\n";

}  // namespace

namespace {

Encoder encode_program(const Programs& p) {
  Encoder e;
  e.i(0x504c4e52);
  // Format 3: the precision (ir::Precision's value), then buffers with their arena offsets and
  // each rank's arena bytes (memory_plan.h).
  e.i(3);
  e.i(static_cast<int64_t>(p.precision));
  const MemoryPlan memory = plan_memory(p);
  e.i(p.num_ranks);
  e.i(static_cast<int64_t>(p.buffers.size()));
  for (const Buffer& b : p.buffers) {
    e.i(b.rank);
    e.i(static_cast<int64_t>(b.dtype));
    e.shape(b.shape());
    e.shape(b.global_shape);
    std::vector<int64_t> offset;
    for (const analysis::Range& r : b.region) offset.push_back(r.begin);
    e.shape(offset);
    e.i(static_cast<int64_t>(b.init));
    e.s(b.values_of.empty() ? b.tensor_name : b.values_of);  // the name fill_uniform draws by
    e.d(b.lo);
    e.d(b.hi);
    e.i(b.init == BufferInit::kConstant ? e.bytes(b.data) : 0);
    e.i(b.init == BufferInit::kConstant ? static_cast<int64_t>(b.data.size()) : 0);
    e.i(memory.offset[static_cast<size_t>(b.id)]);
  }
  e.ints(p.outputs);
  e.i(static_cast<int64_t>(p.carries.size()));
  for (auto [a, b] : p.carries) {
    e.i(a);
    e.i(b);
  }
  for (int64_t bytes : memory.rank_bytes) e.i(bytes);
  for (const RankProgram& r : p.ranks) {
    e.i(static_cast<int64_t>(r.steps.size()));
    for (const Step& s : r.steps) {
      e.i(static_cast<int64_t>(s.kind));
      e.s(s.op_type);
      e.s(s.domain);
      e.s(s.node);
      std::vector<std::pair<std::string, ir::Attribute>> attrs;
      for (const auto& [k, a] : s.attributes) {
        if (!a.is_tensor())
          attrs.emplace_back(k, a);
        else if (std::optional<ir::Attribute> v = tensor_attribute_values(a))
          attrs.emplace_back(k, *v);
      }
      e.i(static_cast<int64_t>(attrs.size()));
      for (const auto& [k, a] : attrs) encode_attribute(e, k, a);
      e.ints(s.inputs);
      e.ints(s.outputs);
      e.ints(s.group);
      e.i(s.peer);
      e.i(s.axis);
      e.i(s.axis2);
      e.i(static_cast<int64_t>(s.reducer));
      e.shape(s.extents);
    }
  }
  return e;
}

}  // namespace

std::string launcher_program_source(const Programs& p) {
  return encode_program(p).source(kProgramHeader);
}

std::map<std::string, std::string> launcher_files(const Programs& programs,
                                                  const LauncherOptions& options) {
  std::map<std::string, std::string> files;
  files["launcher/main.cpp"] = kLauncherMainTemplate;
  files["launcher/launcher.h"] = kLauncherHeaderTemplate;
  const Encoder program = encode_program(programs);
  files["launcher/program.cpp"] = program.source(kProgramHeader);
  std::string blob_rules;
  if (program.blob()) {
    files["launcher/program.bin"] = program.blob_bytes();
    blob_rules =
        "# program.bin holds the constants' bytes; program.cpp assembles it in (.incbin).\n"
        "target_compile_options(${PLANNER_LAUNCHER_TARGET} PRIVATE\n"
        "  \"-Wa,-I${CMAKE_CURRENT_SOURCE_DIR}\")\n"
        "set_source_files_properties(program.cpp PROPERTIES\n"
        "  OBJECT_DEPENDS \"${CMAKE_CURRENT_SOURCE_DIR}/program.bin\")\n";
  }
  files["launcher/CMakeLists.txt"] = fmt::format(
      R"CMAKE(# Generated by `planner compile`: builds the launcher of a {}-rank program.
#   cmake -S launcher -B build && cmake --build build && build/launcher --steps 3
# runtime_stub/ next to this folder is a copy of the planner's runtime library; it is built
# here unless PLANNER_RT_PREBUILT names a libplanner_rt.a built from the same sources.
# -DPLANNER_RT_BACKEND=cuda builds for GPUs; add -DPLANNER_RT_MPI=ON to run one process per
# rank under mpirun (build/launcher --help lists how ranks can run).
cmake_minimum_required(VERSION 3.20)
project(planner_launcher LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
set(PLANNER_RT_BACKEND "{}" CACHE STRING "runtime backend: cpu or cuda")
set(PLANNER_RT_PREBUILT "" CACHE FILEPATH "a prebuilt libplanner_rt.a (optional)")
if(NOT DEFINED PLANNER_LAUNCHER_TARGET)
  set(PLANNER_LAUNCHER_TARGET launcher)  # a wrapper project building several launchers renames it
endif()

if(NOT TARGET planner_rt)
  if(PLANNER_RT_PREBUILT)
    find_package(BLAS REQUIRED)
    find_package(Threads REQUIRED)
    add_library(planner_rt STATIC IMPORTED)
    set_target_properties(planner_rt PROPERTIES
      IMPORTED_LOCATION "${{PLANNER_RT_PREBUILT}}"
      INTERFACE_INCLUDE_DIRECTORIES "${{CMAKE_CURRENT_SOURCE_DIR}}/../runtime_stub/include"
      INTERFACE_LINK_LIBRARIES "Threads::Threads;${{BLAS_LIBRARIES}}")
  else()
    add_subdirectory(${{CMAKE_CURRENT_SOURCE_DIR}}/../runtime_stub ${{CMAKE_CURRENT_BINARY_DIR}}/runtime_stub)
  endif()
endif()

add_executable(${{PLANNER_LAUNCHER_TARGET}} main.cpp program.cpp)
target_link_libraries(${{PLANNER_LAUNCHER_TARGET}} PRIVATE planner_rt)
set_target_properties(${{PLANNER_LAUNCHER_TARGET}} PROPERTIES OUTPUT_NAME launcher)
{})CMAKE",
      programs.num_ranks, options.backend, blob_rules);
  return files;
}

}  // namespace planner::codegen
