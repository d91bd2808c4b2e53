// A graph-only LLaMA-style decoder (Touvron et al. 2023, "LLaMA", section 2.2; "Llama 2",
// section 2.2 and table 1 for grouped-query attention): the architecture most models trained
// today follow, written in the operators exporters emit for it, so that planning and the
// runtime meet them:
// - RMSNorm (Zhang and Sennrich 2019) as x / sqrt(mean(x^2) + eps) * w (Mul, ReduceMean, Add,
//   Sqrt, Div, Mul), before attention, before the MLP and at the end;
// - rotary position embeddings (Su et al. 2021) on queries and keys, in the rotate-half form
//   (Slice, Neg, Concat, Mul, Add) with cos and sin computed in the graph from the positions
//   (Range, Cast, Unsqueeze, Mul, Concat, Cos, Sin);
// - grouped-query attention (Ainslie et al. 2023): `kv_heads` key/value heads, each repeated
//   for heads / kv_heads query heads (Unsqueeze, Expand, Reshape);
// - the SwiGLU MLP (Shazeer 2020): W2 (silu(x W1) * (x W3)), SiLU as x * sigmoid(x);
// - no biases, an untied output head, a causal mask as in gpt_model.h.
// Every initializer is an external-data reference into a file that is never written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "importers/gpt_model.h"
#include "support/expected.h"

namespace planner::importers {

/// The shape of a LLaMA-style decoder.
struct LlamaShape {
  int64_t layers = 32;
  int64_t hidden = 4096;
  int64_t heads = 32;
  int64_t kv_heads = 0;  ///< 0: as many as heads (multi-head attention)
  int64_t seq = 2048;
  int64_t vocab = 32000;
  int64_t ffn = 0;    ///< SwiGLU width; 0: 2/3 of 4 x hidden rounded up to a multiple of 256
  int64_t batch = 0;  ///< 0: a dynamic dimension named "batch"
  /// End in torch's loss (detail::language_model_loss): a `labels` input, the scalar `loss` out
  bool loss = false;
  // What Hugging Face configurations vary beyond the sizes (importers/hf_config.h); the
  // defaults are LLaMA's.
  int64_t head_dim = 0;         ///< per-head width; 0: hidden / heads
  bool qkv_bias = false;        ///< biases on the query, key and value projections (Qwen2)
  bool output_bias = false;     ///< a bias on the attention's output projection
  bool qk_norm = false;         ///< RMSNorm over each query and key head (Qwen3)
  bool tie_embeddings = false;  ///< the output head reuses the token embedding (transposed)
  double rope_theta = 10000.0;  ///< the rotary embedding's base
  float rms_eps = 1e-5f;        ///< RMSNorm's epsilon
  /// Llama 3.1's rotary rescaling ("rope_type": "llama3"; factor 0: none): long wavelengths
  /// divided by `rope_factor`, short ones kept, the band between blended.
  double rope_factor = 0, rope_low = 1, rope_high = 4, rope_original = 8192;
  /// Linear position scaling ("rope_type": "linear"): positions divided by this (1: none).
  double rope_linear = 1;
};

using LlamaPreset = ModelPreset<LlamaShape>;

/// LLaMA 7B and 13B, Llama 2 7B, 13B and 70B, as their papers give them.
const std::vector<LlamaPreset>& llama_presets();

/// Checks a shape (errors name the flag).
Expected<void> check_llama_shape(const LlamaShape& shape);

/// The per-head width the shape uses.
int64_t llama_head_dim(const LlamaShape& shape);

/// The rotary embedding's inverse frequencies (head_dim / 2 of them), rescaled as the shape says.
std::vector<double> llama_inv_freq(const LlamaShape& shape);

/// The SwiGLU width the shape uses.
int64_t llama_ffn(const LlamaShape& shape);

/// Trainable parameters.
int64_t llama_parameter_count(const LlamaShape& shape);

/// The serialised ONNX ModelProto (opset 17), initializers pointing into `data_file`.
Expected<std::string> llama_model_bytes(const LlamaShape& shape, const std::string& name,
                                        const std::string& data_file);

}  // namespace planner::importers
