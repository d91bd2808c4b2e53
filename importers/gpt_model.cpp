#include "importers/gpt_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "importers/onnx_builder.h"
#include "support/text.h"

namespace planner::importers {
using detail::Builder;

const std::vector<GptPreset>& gpt_presets() {
  // GPT-3 paper (Brown et al. 2020), table 2.1: n_layers, d_model, n_heads; n_ctx 2048.
  // The paper lists GPT-3 XL with 24 heads of 128 (3072 != d_model 2048) and 13B with d_model
  // 5140 (not a multiple of its 40 heads): these presets use 16 heads for XL (d_head 128) and
  // d_model 5120 for 13B (40 x 128), as Megatron-LM's and the reproductions do.
  static const std::vector<GptPreset> presets = {
      {"gpt2-small", "GPT-2 small, 124M", {12, 768, 12, 1024, 50257}},
      {"gpt3-125m", "GPT-3 Small, 125M", {12, 768, 12, 2048, 50257}},
      {"gpt3-350m", "GPT-3 Medium, 350M", {24, 1024, 16, 2048, 50257}},
      {"gpt3-760m", "GPT-3 Large, 760M", {24, 1536, 16, 2048, 50257}},
      {"gpt3-1.3b", "GPT-3 XL, 1.3B", {24, 2048, 16, 2048, 50257}},
      {"gpt3-2.7b", "GPT-3 2.7B", {32, 2560, 32, 2048, 50257}},
      {"gpt3-6.7b", "GPT-3 6.7B", {32, 4096, 32, 2048, 50257}},
      {"gpt3-13b", "GPT-3 13B", {40, 5120, 40, 2048, 50257}},
      {"gpt3-175b", "GPT-3 175B", {96, 12288, 96, 2048, 50257}},
  };
  return presets;
}

Expected<void> check_gpt_shape(const GptShape& s) {
  auto positive = [](const char* flag, int64_t v, int64_t limit) -> Expected<void> {
    if (v < 1 || v > limit) return make_error("--{} {}: must be between 1 and {}", flag, v, limit);
    return {};
  };
  constexpr int64_t kBig = int64_t{1} << 24;
  for (auto [flag, v] :
       {std::pair{"layers", s.layers}, std::pair{"hidden", s.hidden}, std::pair{"heads", s.heads},
        std::pair{"seq", s.seq}, std::pair{"vocab", s.vocab}})
    if (auto ok = positive(flag, v, kBig); !ok) return ok;
  if (s.ffn != 0)
    if (auto ok = positive("ffn", s.ffn, kBig); !ok) return ok;
  if (s.batch != 0)
    if (auto ok = positive("batch", s.batch, kBig); !ok) return ok;
  if (s.hidden % s.heads != 0)
    return make_error("--heads {}: does not divide --hidden {}", s.heads, s.hidden);
  if (!(s.dropout >= 0.0 && s.dropout < 1.0))
    return make_error("--dropout {}: must be in [0, 1)", s.dropout);
  return {};
}

int64_t gpt_parameter_count(const GptShape& s) {
  const int64_t d = s.hidden, f = s.ffn ? s.ffn : 4 * s.hidden;
  const int64_t per_layer = 2 * d                // ln1
                            + d * 3 * d + 3 * d  // qkv
                            + d * d + d          // attention output
                            + 2 * d              // ln2
                            + d * f + f          // mlp in
                            + f * d + d;         // mlp out
  return s.vocab * d + s.seq * d + s.layers * per_layer + 2 * d;
}

Expected<std::string> gpt_model_bytes(const GptShape& s, const std::string& name,
                                      const std::string& data_file) {
  if (auto ok = check_gpt_shape(s); !ok) return ok.error();
  const int64_t d = s.hidden, h = s.heads, dh = d / h, f = s.ffn ? s.ffn : 4 * d;
  const int64_t S = s.seq, V = s.vocab;

  onnx::ModelProto model;
  onnx::GraphProto& g = detail::start_decoder(model, name, s.batch, S, V);

  Builder b(g, data_file);
  const std::string wte = b.param("wte", {V, d});
  const std::string wpe = b.param("wpe", {S, d});
  const std::string split_qkv = s.qkv_blocks ? b.ints("split_qkv", {d, d, d}, false)
                                             : b.ints("split_qkv", {dh, dh, dh}, false);
  const std::string heads_shape = b.ints("heads_shape", {-1, S, h, dh}, false);
  const std::string qkv_heads_shape =
      s.qkv_blocks ? std::string() : b.ints("qkv_heads_shape", {-1, S, h, 3 * dh}, false);
  const std::string model_shape = b.ints("model_shape", {-1, S, d}, false);
  const std::string scale = b.scalar("attention_scale", 1.0f / std::sqrt(static_cast<float>(dh)));
  const std::string half = b.scalar("half", 0.5f);
  const std::string one = b.scalar("one", 1.0f);
  const std::string sqrt2 = b.scalar("sqrt2", std::sqrt(2.0f));
  std::string ratio, training;
  if (s.dropout > 0) {
    ratio = b.scalar("dropout_ratio", static_cast<float>(s.dropout));
    training = b.boolean("dropout_training", true);
  }
  const std::string mask = detail::causal_mask(b, S);

  auto dropout = [&](const std::string& x, const std::string& where) {
    if (s.dropout <= 0) return x;
    return b.nodes("Dropout", where + "/dropout", {x, ratio, training},
                   {where + "/dropout", where + "/dropout_mask"})[0];
  };
  auto layer_norm = [&](const std::string& x, const std::string& p) {
    std::string y = b.node("LayerNormalization", p,
                           {x, b.param(p + ".weight", {d}), b.param(p + ".bias", {d})});
    b.attr("axis", int64_t{-1});
    b.attr("epsilon", 1e-5f);
    return y;
  };
  auto linear = [&](const std::string& x, const std::string& p, int64_t in, int64_t out) {
    std::string y = b.node("MatMul", p + "/matmul", {x, b.param(p + ".weight", {in, out})});
    return b.node("Add", p + "/bias", {y, b.param(p + ".bias", {out})});
  };

  std::string x = b.node("Gather", "embed/tokens", {wte, "input_ids"});
  x = dropout(b.node("Add", "embed/positions", {x, wpe}), "embed");
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "h" + std::to_string(l);
    // Attention.
    std::string a = layer_norm(x, p + ".ln_1");
    std::string qkv = linear(a, p + ".attn.c_attn", d, 3 * d);
    // Megatron's layout: [B, S, heads, 3 d_head], split into each head's query, key and value.
    if (!s.qkv_blocks) qkv = b.node("Reshape", p + "/qkv_heads", {qkv, qkv_heads_shape});
    auto parts = b.nodes("Split", p + "/split", {qkv, split_qkv}, {p + "/q", p + "/k", p + "/v"});
    b.attr("axis", int64_t{s.qkv_blocks ? 2 : 3});
    auto heads = [&](const std::string& t, const std::vector<int64_t>& perm) {
      std::string r = s.qkv_blocks ? b.node("Reshape", t + "/heads", {t, heads_shape}) : t;
      std::string y = b.node("Transpose", t + "/transpose", {r});
      b.attr("perm", perm);
      return y;
    };
    std::string q = heads(parts[0], {0, 2, 1, 3});
    std::string k = heads(parts[1], {0, 2, 3, 1});
    std::string v = heads(parts[2], {0, 2, 1, 3});
    std::string scores = b.node("MatMul", p + "/scores", {q, k});
    scores = b.node("Mul", p + "/scale", {scores, scale});
    scores = b.node("Add", p + "/mask", {scores, mask});
    std::string probs = b.node("Softmax", p + "/softmax", {scores});
    b.attr("axis", int64_t{-1});
    probs = dropout(probs, p + ".attn");
    std::string ctx = b.node("MatMul", p + "/context", {probs, v});
    ctx = b.node("Transpose", p + "/context/transpose", {ctx});
    b.attr("perm", std::vector<int64_t>{0, 2, 1, 3});
    ctx = b.node("Reshape", p + "/context/merge", {ctx, model_shape});
    std::string proj = dropout(linear(ctx, p + ".attn.c_proj", d, d), p + ".attn.resid");
    x = b.node("Add", p + "/residual_1", {x, proj});
    // MLP with GELU (erf form).
    std::string m = linear(layer_norm(x, p + ".ln_2"), p + ".mlp.c_fc", d, f);
    std::string e = b.node("Erf", p + "/gelu/erf", {b.node("Div", p + "/gelu/div", {m, sqrt2})});
    e = b.node("Add", p + "/gelu/add", {e, one});
    m = b.node("Mul", p + "/gelu", {b.node("Mul", p + "/gelu/half", {m, half}), e});
    m = dropout(linear(m, p + ".mlp.c_proj", f, d), p + ".mlp.resid");
    x = b.node("Add", p + "/residual_2", {x, m});
  }
  x = layer_norm(x, "ln_f");
  // The LM head tied to the token embedding: logits = x wte^T.
  std::string rows = b.node("Reshape", "head/rows", {x, b.ints("rows_shape", {-1, d}, false)});
  std::string logits = b.node("Gemm", "head", {rows, wte});
  b.attr("transB", int64_t{1});
  b.nodes("Reshape", "head/unrows", {logits, b.ints("logits_shape", {-1, S, V}, false)},
          {"logits"});
  if (s.loss) detail::language_model_loss(b, g, "logits", s.batch, S, V);

  std::string bytes;
  if (!model.SerializeToString(&bytes)) return make_error("cannot serialise the generated model");
  return bytes;
}

bool is_generated_model(const std::string& path) {
  // Generated models hold no weights: even 175B parameters make a file of a few MB.
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (64u << 20)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) return false;
  return model.producer_name() == kGeneratorProducer;
}

}  // namespace planner::importers
