// A Hugging Face `config.json` as the decoder the planner generates for it (no weights, nothing
// fetched): `planner generate hf CONFIG.json OUT.onnx`. The dense decoders of the Llama family
// (LlamaForCausalLM: Llama 2, 3, 3.1, 3.2, 3.3; MistralForCausalLM; Qwen2ForCausalLM;
// Qwen3ForCausalLM) map onto importers/llama_model.h's generator; presets hold published
// configurations.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "importers/llama_model.h"
#include "support/expected.h"

namespace planner::importers {

/// What a configuration describes.
struct HfModel {
  std::string architecture;   ///< "LlamaForCausalLM", as the config names it
  LlamaShape shape;           ///< seq: --seq's default, at most max_position_embeddings
  int64_t max_positions = 0;  ///< max_position_embeddings
};

/// The architectures `generate hf` knows, in the order messages list them.
const std::vector<std::string_view>& hf_architectures();

/// Reads a configuration's text (`path` names it in errors, with the JSON path of the field:
/// "config.json: $.num_attention_heads: expected an integer from 1 to 16777216"). An
/// architecture it does not know, or a feature of a known one it does not model (a sliding
/// window shorter than `seq`, rope scaling other than llama3/linear/dynamic, an MLP bias, an
/// activation other than SiLU), is one error naming it. `seq` (0: the default, 4096 or
/// max_position_embeddings if smaller) is the context length to generate.
Expected<HfModel> parse_hf_config(std::string_view text, const std::string& path, int64_t seq = 0);

/// A published configuration, kept as its config.json's fields.
struct HfPreset {
  const char* name;  ///< "llama3.1-8b"
  const char* what;  ///< "Llama 3.1 8B"
  const char* config;
  int64_t published_parameters;  ///< the parameter count its model card or checkpoint gives
};
const std::vector<HfPreset>& hf_presets();

}  // namespace planner::importers
