// Hugging Face configurations of the Llama family, read into the decoder generator's shape.
#include "importers/hf_config.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace planner::importers {

namespace {

using json = nlohmann::json;

constexpr int64_t kBig = int64_t{1} << 24;

struct Reader {
  const json& root;
  const std::string& path;
  std::string architecture = "";

  Error at(const std::string& field, const std::string& what) const {
    return Error(fmt::format("{}: $.{}: {}", path, field, what));
  }
  // An integer field from `lo` to kBig; `fallback` when absent (-1: required).
  Expected<int64_t> integer(const std::string& field, int64_t fallback, int64_t lo = 1) const {
    auto it = root.find(field);
    if (it == root.end() || it->is_null()) {
      if (fallback < 0)
        return at(field, fmt::format("missing (a {} config needs it)", architecture));
      return fallback;
    }
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > kBig)
      return at(field, fmt::format("expected an integer from {} to {}", lo, kBig));
    return it->get<int64_t>();
  }
  Expected<double> number(const std::string& field, double fallback) const {
    auto it = root.find(field);
    if (it == root.end() || it->is_null()) return fallback;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0)
      return at(field, "expected a positive number");
    return it->get<double>();
  }
  Expected<bool> boolean(const std::string& field, bool fallback) const {
    auto it = root.find(field);
    if (it == root.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return at(field, "expected true or false");
    return it->get<bool>();
  }
};

Expected<void> read_rope_scaling(const Reader& r, LlamaShape& s) {
  auto it = r.root.find("rope_scaling");
  if (it == r.root.end() || it->is_null()) return ok();
  if (!it->is_object()) return r.at("rope_scaling", "expected an object or null");
  const json& rs = *it;
  std::string type;
  for (const char* key : {"rope_type", "type"})
    if (rs.contains(key) && rs[key].is_string()) type = rs[key].get<std::string>();
  const Reader sub{rs, r.path, r.architecture};
  auto field = [&](const char* key, double fallback) -> Expected<double> {
    auto v = sub.number(key, fallback);
    if (!v) return r.at(std::string("rope_scaling.") + key, "expected a positive number");
    return v;
  };
  if (type == "llama3") {
    PLANNER_TRY_ASSIGN(s.rope_factor, field("factor", 8));
    PLANNER_TRY_ASSIGN(s.rope_low, field("low_freq_factor", 1));
    PLANNER_TRY_ASSIGN(s.rope_high, field("high_freq_factor", 4));
    PLANNER_TRY_ASSIGN(s.rope_original, field("original_max_position_embeddings", 8192));
    if (!(s.rope_high > s.rope_low))
      return r.at("rope_scaling", "high_freq_factor must exceed low_freq_factor");
    return ok();
  }
  if (type == "linear") {
    PLANNER_TRY_ASSIGN(s.rope_linear, field("factor", 1));
    return ok();
  }
  // Dynamic NTK scaling changes nothing up to max_position_embeddings, which seq never passes.
  if (type == "dynamic") return ok();
  return r.at("rope_scaling", fmt::format("rope type '{}' is not modelled (llama3, linear and "
                                          "dynamic are)",
                                          type));
}

}  // namespace

const std::vector<std::string_view>& hf_architectures() {
  static const std::vector<std::string_view> known = {"LlamaForCausalLM", "MistralForCausalLM",
                                                      "Qwen2ForCausalLM", "Qwen3ForCausalLM"};
  return known;
}

Expected<HfModel> parse_hf_config(std::string_view text, const std::string& path, int64_t seq) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object())
    return Error(fmt::format("{}: not a JSON object (a Hugging Face config.json)", path));
  Reader r{root, path};
  HfModel m;
  auto arch = root.find("architectures");
  auto type = root.find("model_type");
  if (arch != root.end() && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
    m.architecture = (*arch)[0].get<std::string>();
  } else if (type != root.end() && type->is_string()) {
    // A config written without save_pretrained names only its model type.
    const std::string t = type->get<std::string>();
    m.architecture = t == "llama"     ? "LlamaForCausalLM"
                     : t == "mistral" ? "MistralForCausalLM"
                     : t == "qwen2"   ? "Qwen2ForCausalLM"
                     : t == "qwen3"   ? "Qwen3ForCausalLM"
                                      : "model_type " + t;
  } else {
    return r.at("architectures",
                "missing: a config names its model class, e.g. "
                "[\"LlamaForCausalLM\"]");
  }
  const auto& known = hf_architectures();
  if (std::find(known.begin(), known.end(), m.architecture) == known.end())
    return r.at("architectures[0]", fmt::format("'{}' is not supported; known: {}", m.architecture,
                                                fmt::join(known, ", ")));
  r.architecture = m.architecture;
  const bool qwen2 = m.architecture == "Qwen2ForCausalLM";
  LlamaShape& s = m.shape;
  PLANNER_TRY_ASSIGN(s.hidden, r.integer("hidden_size", -1));
  PLANNER_TRY_ASSIGN(s.ffn, r.integer("intermediate_size", -1));
  PLANNER_TRY_ASSIGN(s.layers, r.integer("num_hidden_layers", -1));
  PLANNER_TRY_ASSIGN(s.heads, r.integer("num_attention_heads", -1));
  PLANNER_TRY_ASSIGN(s.kv_heads, r.integer("num_key_value_heads", s.heads));
  PLANNER_TRY_ASSIGN(s.vocab, r.integer("vocab_size", -1));
  PLANNER_TRY_ASSIGN(m.max_positions, r.integer("max_position_embeddings", 2048));
  PLANNER_TRY_ASSIGN(s.head_dim, r.integer("head_dim", 0, 0));
  PLANNER_TRY_ASSIGN(s.rope_theta, r.number("rope_theta", 10000));
  PLANNER_TRY_ASSIGN(double eps, r.number("rms_norm_eps", 1e-6));
  s.rms_eps = static_cast<float>(eps);
  PLANNER_TRY_ASSIGN(s.tie_embeddings, r.boolean("tie_word_embeddings", false));
  PLANNER_TRY_ASSIGN(bool attention_bias, r.boolean("attention_bias", false));
  // Llama's attention_bias covers all four projections; Qwen2 biases q, k and v always, Qwen3
  // as attention_bias says; Qwen3 normalises each query and key head.
  const bool qwen3 = m.architecture == "Qwen3ForCausalLM";
  s.qkv_bias = qwen2 || attention_bias;
  s.output_bias = !qwen2 && !qwen3 && attention_bias;
  s.qk_norm = qwen3;
  PLANNER_TRY_ASSIGN(bool mlp_bias, r.boolean("mlp_bias", false));
  if (mlp_bias) return r.at("mlp_bias", "MLP biases are not modelled");
  if (auto act = root.find("hidden_act");
      act != root.end() && (!act->is_string() || act->get<std::string>() != "silu"))
    return r.at("hidden_act", "only silu (SwiGLU) is modelled");
  PLANNER_TRY(read_rope_scaling(r, s));
  if (seq < 0 || seq > kBig) return Error(fmt::format("--seq {}: must be from 1 to {}", seq, kBig));
  s.seq = seq ? seq : std::min<int64_t>(4096, m.max_positions);
  if (s.seq > m.max_positions)
    return Error(fmt::format("--seq {}: past the config's max_position_embeddings {}", s.seq,
                             m.max_positions));
  // Mistral attends within a sliding window; Qwen2 only with use_sliding_window.
  PLANNER_TRY_ASSIGN(bool windowed, r.boolean("use_sliding_window", !qwen2 && !qwen3));
  PLANNER_TRY_ASSIGN(int64_t window, r.integer("sliding_window", 0, 0));
  if (windowed && window > 0 && window < s.seq)
    return r.at("sliding_window",
                fmt::format("a window of {} inside a context of {} is not modelled; generate with "
                            "--seq {} or less",
                            window, s.seq, window));
  if (auto shape_ok = check_llama_shape(s); !shape_ok)
    return Error(fmt::format("{}: {}", path, shape_ok.error().message()));
  return m;
}

const std::vector<HfPreset>& hf_presets() {
  // The fields of the published config.json files (Meta's, Mistral AI's and Qwen's repositories
  // on the Hugging Face hub); the counts are those of their model cards and checkpoints.
  static const std::vector<HfPreset> presets = {
      {"llama2-7b", "Llama 2 7B",
       R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
           "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
           "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu"})",
       6738415616},
      {"llama3-8b", "Llama 3 8B",
       R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 128256, "max_position_embeddings": 8192, "rms_norm_eps": 1e-05,
           "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu"})",
       8030261248},
      {"llama3.1-8b", "Llama 3.1 8B",
       R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
           "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu",
           "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
       8030261248},
      {"llama3.1-70b", "Llama 3.1 70B",
       R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "intermediate_size": 28672,
           "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
           "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
           "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu",
           "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
       70553706496},
      {"llama3.1-405b", "Llama 3.1 405B",
       R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 16384, "intermediate_size": 53248,
           "num_hidden_layers": 126, "num_attention_heads": 128, "num_key_value_heads": 8,
           "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
           "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu",
           "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
       405853388800},
      {"llama3.2-1b", "Llama 3.2 1B",
       R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
           "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
           "head_dim": 64, "vocab_size": 128256, "max_position_embeddings": 131072,
           "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": true,
           "hidden_act": "silu",
           "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
       1235814400},
      {"llama3.2-3b", "Llama 3.2 3B",
       R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 3072, "intermediate_size": 8192,
           "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8,
           "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 131072,
           "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": true,
           "hidden_act": "silu",
           "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
       3212749824},
      {"mistral-7b", "Mistral 7B v0.1",
       R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
           "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
           "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
           "tie_word_embeddings": false, "hidden_act": "silu"})",
       7241732096},
      {"qwen2-7b", "Qwen2 7B",
       R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944,
           "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
           "vocab_size": 152064, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
           "rope_theta": 1000000.0, "sliding_window": 131072, "use_sliding_window": false,
           "tie_word_embeddings": false, "hidden_act": "silu"})",
       7615616512},
      {"qwen3-0.6b", "Qwen3 0.6B",
       R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "intermediate_size": 3072,
           "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
           "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
           "rms_norm_eps": 1e-06, "rope_theta": 1000000, "attention_bias": false,
           "use_sliding_window": false, "tie_word_embeddings": true, "hidden_act": "silu"})",
       596049920},
      {"qwen3-8b", "Qwen3 8B",
       R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 4096, "intermediate_size": 12288,
           "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
           "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
           "rms_norm_eps": 1e-06, "rope_theta": 1000000, "attention_bias": false,
           "use_sliding_window": false, "tie_word_embeddings": false, "hidden_act": "silu"})",
       8190735360},
  };
  return presets;
}

}  // namespace planner::importers
