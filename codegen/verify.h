// Proving a compiled plan right: build launchers (one CMake project, the runtime library built
// once per source version and cached), run them, and compare the partitioned step's outputs
// and updated parameters with the unpartitioned step's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/program.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "support/expected.h"
#include "support/output_file.h"

namespace planner::codegen {

/// One buffer of a launcher's --dump file.
struct DumpedSlice {
  std::string name;  ///< the original tensor's name
  ir::DType dtype = ir::DType::kFloat32;
  int rank = 0;
  std::vector<int64_t> global_shape, offset, shape;
  std::vector<uint8_t> bytes;  ///< the values; an updated parameter's change over the run
  /// An updated parameter's rounding floor: one unit in the last place of its largest updated
  /// value, the rounding of the update itself, which the change cannot resolve (0 otherwise).
  double floor = 0;
};

/// Reads a launcher's --dump file.
Expected<std::vector<DumpedSlice>> read_dump(const std::string& path);

/// How close two runs must be, per element: |partitioned - reference| <= atol * scale +
/// rtol * |reference|, where scale is the largest |reference| of the element's tensor (so atol
/// is relative to the tensor's magnitude, and rtol to the element's).
struct Tolerance {
  double atol = 1e-4;  ///< error allowed relative to the tensor's largest magnitude
  double rtol = 0;     ///< error allowed relative to the element's own magnitude
  /// NaN matches NaN and an infinity the same infinity, and a reference holding them is fine
  /// (runs on given inputs whose expected outputs hold them); else both are errors.
  bool specials_equal = false;
  /// Adam's learning rate times the steps run (0 without Adam): an update divides the first
  /// moment by the root of the second, so where rounding moves the moments relative to their
  /// size it moves the parameter by up to that fraction of this, and by up to twice this where
  /// a gradient is nothing but rounding (a key bias under softmax).
  double adam_step = 0;
};

/// The longest chain of roundings in `program`: kernel steps whose results are rounded to a
/// 16-bit type (a 16-bit output, or a tensor-core operator under mixed precision) or, in a tf32
/// program, whose operands are rounded to TF32 (MatMul, Gemm, Conv and its gradients), counted
/// along the data flow of one step and through the carried parameters over `steps` steps.
int rounding_depth(const Programs& program, int steps);

/// The default tolerance of a verify at `precision` (docs/codegen.md derives it): fp32 atol
/// 1e-4, rtol 0; tf32, fp16 and bf16 atol = rtol = 8 u sqrt(depth) with u the unit roundoff
/// (2^-11 for TF32 operands and f16, 2^-8 for bf16) and `depth` the rounding_depth of the
/// reference program.
Tolerance default_tolerance(ir::Precision precision, int depth);

/// How two runs compare.
struct Comparison {
  bool ok = true;
  int tensors = 0;               ///< reference tensors compared
  double max_abs = 0;            ///< largest |partitioned - reference|
  double max_rel = 0;            ///< largest |difference| / max |reference| of its tensor
  double max_ratio = 0;          ///< largest |difference| / what the tolerance allows there
  std::string worst;             ///< the tensor with the largest difference against its allowance
  std::string problem;           ///< why not ok, when it is something else than the tolerance
  bool reference_finite = true;  ///< false: the reference itself holds NaN or infinity
};

/// Compares every slice of `partitioned` with the same region of the (whole) tensors of
/// `reference`: ok when every reference tensor is covered and every element is within
/// `tolerance`. f16 and bf16 slices are read exactly (as f32).
Comparison compare_dumps(const std::vector<DumpedSlice>& partitioned,
                         const std::vector<DumpedSlice>& reference, const Tolerance& tolerance);

/// Compares the reference run's outputs with outputs computed elsewhere (the ONNX test suite's
/// output_N.pb) the way ONNX's backend test runner does: every element within
/// atol + rtol * |expected| (numpy's assert_allclose; NaN matches NaN), integers and booleans
/// exactly; each expected tensor must be in `reference` whole, with its shape.
Comparison compare_expected(const std::vector<DumpedSlice>& reference,
                            const std::vector<ir::Tensor>& expected, double atol, double rtol);

/// Where verify keeps its runtime builds: $PLANNER_CACHE_DIR, else $XDG_CACHE_HOME/planner or
/// ~/.cache/planner.
std::string cache_dir();

/// Builds the launchers of compiled folders (each with launcher/ and runtime_stub/) as one
/// CMake project in `build_dir`; returns each launcher executable's path. The runtime library
/// is built once per runtime_stub source hash under cache_dir() (guarded by a file lock).
/// `log` collects the build output for error messages.
Expected<std::vector<std::string>> build_launchers(const std::vector<std::string>& compiled_dirs,
                                                   const std::string& build_dir, bool verbose);

/// Runs a command line, capturing stdout and stderr together; returns its exit status. The
/// command runs in a process group the planner kills if a signal stops it
/// (support/temporary_paths.h).
int run_command(const std::string& command, std::string& output);

/// What `verify --keep DIR` may write into: a folder holding a `.planner-verify` marker (an
/// earlier verify's work), an empty folder or a new one.
const OutputFolderKind& verify_folder_kind();

/// Options of verify_programs.
struct VerifyOptions {
  int steps = 2;      ///< training steps run (parameters carried between them)
  uint64_t seed = 1;  ///< initialisation seed of both runs
  /// Overrides of the precision's default_tolerance (negative: the default).
  double atol = -1, rtol = -1;
  std::string work_dir;  ///< where to compile and build; empty: a fresh temporary folder
  bool keep = false;     ///< keep work_dir afterwards
  bool verbose = false;
  /// Outputs the reference run must produce (by graph output name), compared with
  /// compare_expected at expected_atol and expected_rtol; empty: none.
  std::vector<ir::Tensor> expected;
  /// Graph outputs the importer folded to constants: no launcher computes them, so they are
  /// compared with `expected` as they are.
  std::vector<ir::Tensor> constant_outputs;
  double expected_atol = 1e-7, expected_rtol = 1e-3;  ///< ONNX's backend test defaults
  double adam_lr = 0;  ///< the Adam updates' learning rate (0: no Adam), for Tolerance
  /// Where a comparison fails, compare the runs' ReLU outputs, and where they agree within the
  /// tolerance compare again with the reference run on the partitioned run's (f32 steps).
  bool adjudicate_relu = true;
};

/// Two runs' ReLU outputs against each other (codegen/verify_relu.h).
struct ReluDispute {
  int64_t elements = 0;  ///< elements kept (output > 0) by one run and dropped by the other
  double largest = 0;    ///< the largest difference, relative to its tensor's magnitude
  std::string tensor;    ///< where it is
  bool within = true;    ///< every output within the tolerance of the other run's
  std::string problem;   ///< the runs observed different ReLUs
};

/// What one partitioned program did against the reference.
struct VerifyResult {
  Comparison comparison;
  Tolerance tolerance;                 ///< what the comparison allowed
  double step_ms = 0;                  ///< the last step's time, slowest rank
  std::string output;                  ///< the launcher's output
  std::optional<Comparison> expected;  ///< the reference against VerifyOptions::expected
  /// Where the first comparison failed while every ReLU output of the two runs agrees within the
  /// tolerance (a ReLU or max-pooling decision taken differently on values within rounding of
  /// each other): the ReLU outputs' comparison and that first comparison; `comparison` is then
  /// the partitioned step against the reference run on the partitioned run's ReLU outputs.
  std::optional<ReluDispute> relu;
  std::optional<Comparison> before_relu;
};

/// Compiles `reference` (normally a 1-rank program) and every program of `partitioned` for the
/// cpu backend, builds them as one project, runs each with the same seed and compares every
/// output and updated parameter with the reference's. With no partitioned program the result
/// is the reference run's own (its outputs finite, and against VerifyOptions::expected).
/// Errors: a build or a run that fails.
Expected<std::vector<VerifyResult>> verify_programs(const Programs& reference,
                                                    const std::vector<Programs>& partitioned,
                                                    const VerifyOptions& options);

}  // namespace planner::codegen
