// verify's adjudication of discrete decisions (docs/codegen.md, "Where the model of independent
// roundings fails: discontinuities"). Two runs of one step that round differently can decide a
// ReLU input lying within rounding of zero, or a max-pooling window holding two values within
// rounding of each other, differently; the whole gradient of that element then goes another
// way, a difference of the gradient's own size. The launcher observes every ReLU's output per
// step (--observe-relu, dumped with --dump) and can take another run's ReLU outputs in place of
// its own (--impose-relu FILE): where those agree within the tolerance, both runs then take the
// same decisions at every ReLU and at every max-pooling window that reads one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "planner_rt/executor.h"

namespace planner::rt {

/// One observed ReLU output slice: `name` is "relu:<tensor>@<step>#<k>" (the k-th ReLU writing
/// a slice of that tensor on this rank in that step, counted from 0), `buffer` gives its dtype,
/// shape and place in the whole tensor.
struct ObservedRelu {
  int buffer = 0;
  std::string name;
  std::vector<unsigned char> bytes;
};

class ReluDecisions {
 public:
  /// Loads the decisions to impose: the records named "relu:..." of a dump file (PLNRDUMP2,
  /// f32 whole tensors or slices placed by their offsets). Throws Error naming the file.
  void load(const std::string& path);

  /// ExecutorOptions::after_kernel: observes (with `observe`) the outputs of the ReLU kernels of
  /// `program` and replaces them with what load() read; `step` counts the steps run from 1.
  void after_kernel(const Program& program, int64_t step, const StepSpec& s,
                    const std::vector<Tensor>& outputs);

  bool observe = false;
  std::vector<ObservedRelu> observed;  ///< what observe saw, in order
  int64_t imposed_elements = 0;        ///< elements whose decision (output > 0) changed

 private:
  struct Whole {
    Shape shape;
    std::vector<float> values;
  };
  std::map<std::string, Whole> imposed_;
  std::map<std::string, int> occurrences_;  ///< this step's ReLUs per tensor
  int64_t step_ = 0;
};

}  // namespace planner::rt
