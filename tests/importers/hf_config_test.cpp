// Hugging Face configurations (importers/hf_config.h): the presets give their published
// parameter counts, each field reaches the generator's shape, and what is not modelled is one
// error naming the field. (The graphs themselves are held against transformers' models by
// scripts/hf_generate_compare.py.)
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "importers/hf_config.h"

namespace im = planner::importers;

namespace {

std::string error_of(const std::string& text, int64_t seq = 0) {
  auto m = im::parse_hf_config(text, "config.json", seq);
  return m ? "ok" : m.error().message();
}

const std::string kLlama =
    R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
        "max_position_embeddings": 256)";

}  // namespace

TEST_CASE("every preset has its published parameter count") {
  for (const im::HfPreset& p : im::hf_presets()) {
    CAPTURE(p.name);
    auto m = im::parse_hf_config(p.config, p.name);
    REQUIRE(m.has_value());
    CHECK(im::llama_parameter_count(m->shape) == p.published_parameters);
  }
}

TEST_CASE("fields reach the shape") {
  auto m = im::parse_hf_config(kLlama + R"(, "num_key_value_heads": 2, "head_dim": 24,
      "tie_word_embeddings": true, "attention_bias": true, "rope_theta": 500000,
      "rms_norm_eps": 1e-6})",
                               "config.json");
  REQUIRE(m.has_value());
  const im::LlamaShape& s = m->shape;
  CHECK(s.kv_heads == 2);
  CHECK(im::llama_head_dim(s) == 24);
  CHECK(s.tie_embeddings);
  CHECK(s.qkv_bias);
  CHECK(s.output_bias);
  CHECK(s.rope_theta == 500000);
  CHECK(s.seq == 256);  // max_position_embeddings when under 4096
  auto q = im::parse_hf_config(R"({"model_type": "qwen2", "hidden_size": 64,
      "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 128, "max_position_embeddings": 8192})",
                               "config.json", 512);
  REQUIRE(q.has_value());
  CHECK(q->architecture == "Qwen2ForCausalLM");
  CHECK(q->shape.qkv_bias);
  CHECK_FALSE(q->shape.output_bias);
  CHECK(q->shape.seq == 512);
}

TEST_CASE("llama3 rope scaling slows long wavelengths only") {
  auto m = im::parse_hf_config(kLlama + R"(, "rope_theta": 500000, "rope_scaling":
      {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
       "original_max_position_embeddings": 8192}})",
                               "config.json");
  REQUIRE(m.has_value());
  im::LlamaShape plain = m->shape;
  plain.rope_factor = 0;
  const auto scaled = im::llama_inv_freq(m->shape), base = im::llama_inv_freq(plain);
  REQUIRE(scaled.size() == 8);
  const double pi = 3.14159265358979323846;
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    const double wavelength = 2 * pi / base[i];
    if (wavelength < 8192.0 / 4) CHECK(scaled[i] == base[i]);
    if (wavelength > 8192.0) CHECK(scaled[i] == doctest::Approx(base[i] / 8));
    CHECK(scaled[i] <= base[i]);
    CHECK(scaled[i] >= base[i] / 8 * (1 - 1e-12));
  }
}

TEST_CASE("what is not modelled is one error naming the field") {
  CHECK(error_of(R"({"architectures": ["MixtralForCausalLM"]})") ==
        "config.json: $.architectures[0]: 'MixtralForCausalLM' is not supported; known: "
        "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM");
  CHECK(error_of(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})") ==
        "config.json: $.intermediate_size: missing (a LlamaForCausalLM config needs it)");
  CHECK(error_of(kLlama + R"(, "num_attention_heads": 0})").find("$.num_attention_heads") !=
        std::string::npos);
  CHECK(error_of(kLlama + R"(, "hidden_act": "gelu"})") ==
        "config.json: $.hidden_act: only silu (SwiGLU) is modelled");
  CHECK(error_of(kLlama + R"(, "mlp_bias": true})") ==
        "config.json: $.mlp_bias: MLP biases are not modelled");
  CHECK(error_of(kLlama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4}})") ==
        "config.json: $.rope_scaling: rope type 'yarn' is not modelled (llama3, linear and "
        "dynamic are)");
  const std::string mistral =
      R"({"architectures": ["MistralForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
          "max_position_embeddings": 8192, "sliding_window": 1024})";
  CHECK(error_of(mistral) ==
        "config.json: $.sliding_window: a window of 1024 inside a context of 4096 is not "
        "modelled; generate with --seq 1024 or less");
  CHECK(error_of(mistral, 1024) == "ok");
  CHECK(error_of(kLlama + "}", 512) == "--seq 512: past the config's max_position_embeddings 256");
  CHECK(error_of("[1, 2]") == "config.json: not a JSON object (a Hugging Face config.json)");
  CHECK(error_of("{\"architectures\": ") ==
        "config.json: not a JSON object (a Hugging Face config.json)");
}
