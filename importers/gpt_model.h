// A graph-only GPT-style decoder of any size: the ONNX model `planner generate gpt` writes, so
// that 6.7B-, 13B- and 175B-parameter models can be planned on a machine that could never hold
// their weights. Every initializer is an external-data reference into a file that is never
// written (the convention of the shared models, docs/models.md); the planner reads no weights
// to plan.
//
// The decoder is GPT-2/GPT-3's (Radford et al. 2019; Brown et al. 2020, section 2.1): token
// embedding plus learned position embedding, `layers` pre-LayerNorm blocks of causal multi-head
// self-attention (one fused QKV projection, scaled scores, an additive causal mask, softmax)
// and a GELU MLP, each with a residual connection, a final LayerNorm and an LM head tied to the
// token embedding. Dropout (training mode) after the attention probabilities and each residual
// branch when `dropout` > 0. Opset 17 (native LayerNormalization).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/expected.h"

namespace planner::importers {

/// The shape of a GPT-style decoder.
struct GptShape {
  int64_t layers = 12;
  int64_t hidden = 768;  ///< d_model
  int64_t heads = 12;    ///< must divide `hidden`
  int64_t seq = 1024;    ///< context length (static)
  int64_t vocab = 50257;
  int64_t ffn = 0;       ///< MLP width; 0: 4 x hidden
  int64_t batch = 0;     ///< 0: a dynamic dimension named "batch" (bind it with --batch)
  double dropout = 0.0;  ///< 0: no Dropout nodes
  /// End in torch's loss (detail::language_model_loss): a `labels` input, the scalar `loss` out
  bool loss = false;
  /// The fused query/key/value projection's output layout: false (Megatron-LM's) keeps each
  /// head's query, key and value together ([heads, 3, d_head]), so a split of the projection
  /// at head boundaries gives every GPU its heads whole; true is GPT-2's (Hugging Face's
  /// Conv1D) [3, heads, d_head], whose contiguous pieces mix queries of some heads with keys of
  /// others (docs/models.md, "Generated models").
  bool qkv_blocks = false;
};

/// A named size of a generated architecture (`--preset NAME`).
template <typename Shape>
struct ModelPreset {
  const char* name;
  const char* what;
  Shape shape;
};

/// A named shape from the GPT-3 paper's table 2.1 (context 2048, vocabulary 50257) or GPT-2
/// small (context 1024).
using GptPreset = ModelPreset<GptShape>;

/// The presets, smallest first.
const std::vector<GptPreset>& gpt_presets();

/// Checks a shape: positive sizes, heads dividing hidden, dropout in [0, 1). Errors name the
/// offending field (`--heads 7: does not divide --hidden 768`).
Expected<void> check_gpt_shape(const GptShape& shape);

/// Trainable parameters of the decoder (the tied head counted once).
int64_t gpt_parameter_count(const GptShape& shape);

/// The serialised ONNX ModelProto. `data_file` is the external-data location every initializer
/// points at (relative to the model's folder; never written). `name` becomes the graph name.
Expected<std::string> gpt_model_bytes(const GptShape& shape, const std::string& name,
                                      const std::string& data_file);

/// The producer name written into generated models; a file carrying it may be replaced by a
/// later `planner generate`.
inline constexpr std::string_view kGeneratorProducer = "planner generate";

/// Whether the file at `path` is an ONNX model this generator wrote (its producer name).
bool is_generated_model(const std::string& path);

}  // namespace planner::importers
