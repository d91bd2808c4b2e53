#include "importers/llama_model.h"

#include <cmath>

#include <onnx/onnx_pb.h>

#include "importers/gpt_model.h"
#include "importers/onnx_builder.h"

namespace planner::importers {

using detail::Builder;

const std::vector<LlamaPreset>& llama_presets() {
  // LLaMA (Touvron et al. 2023a), table 2; Llama 2 (Touvron et al. 2023b), table 1 and the
  // released configurations (70B: 8 key/value heads, SwiGLU width 28672). Vocabulary 32000.
  static const std::vector<LlamaPreset> presets = {
      {"llama-7b", "LLaMA 7B", {32, 4096, 32, 0, 2048, 32000}},
      {"llama-13b", "LLaMA 13B", {40, 5120, 40, 0, 2048, 32000}},
      {"llama2-7b", "Llama 2 7B", {32, 4096, 32, 0, 4096, 32000}},
      {"llama2-13b", "Llama 2 13B", {40, 5120, 40, 0, 4096, 32000}},
      {"llama2-70b", "Llama 2 70B (GQA)", {80, 8192, 64, 8, 4096, 32000, 28672}},
  };
  return presets;
}

int64_t llama_ffn(const LlamaShape& s) {
  if (s.ffn) return s.ffn;
  const int64_t f = (2 * 4 * s.hidden + 2) / 3;  // 2/3 of 4 x hidden, rounded up
  return (f + 255) / 256 * 256;
}

int64_t llama_head_dim(const LlamaShape& s) {
  return s.head_dim ? s.head_dim : s.hidden / s.heads;
}

std::vector<double> llama_inv_freq(const LlamaShape& s) {
  const int64_t dh = llama_head_dim(s);
  std::vector<double> inv;
  for (int64_t i = 0; i < dh / 2; ++i) {
    double f = std::pow(s.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
    f /= s.rope_linear;
    if (s.rope_factor > 0) {
      // Llama 3.1: wavelengths longer than the original context over low_freq_factor are
      // slowed by the factor, those shorter than it over high_freq_factor kept, and the band
      // between blended linearly in original / wavelength.
      const double pi = 3.14159265358979323846;
      const double wavelen = 2 * pi / f;
      const double low = s.rope_original / s.rope_low, high = s.rope_original / s.rope_high;
      if (wavelen > low) {
        f /= s.rope_factor;
      } else if (wavelen >= high) {
        const double smooth = (s.rope_original / wavelen - s.rope_low) / (s.rope_high - s.rope_low);
        f = (1 - smooth) * f / s.rope_factor + smooth * f;
      }
    }
    inv.push_back(f);
  }
  return inv;
}

Expected<void> check_llama_shape(const LlamaShape& s) {
  constexpr int64_t kBig = int64_t{1} << 24;
  for (auto [flag, v] :
       {std::pair{"layers", s.layers}, std::pair{"hidden", s.hidden}, std::pair{"heads", s.heads},
        std::pair{"seq", s.seq}, std::pair{"vocab", s.vocab}})
    if (v < 1 || v > kBig) return make_error("--{} {}: must be between 1 and {}", flag, v, kBig);
  for (auto [flag, v] :
       {std::pair{"kv-heads", s.kv_heads}, std::pair{"ffn", s.ffn}, std::pair{"batch", s.batch}})
    if (v < 0 || v > kBig) return make_error("--{} {}: must be between 0 and {}", flag, v, kBig);
  if (s.head_dim < 0 || s.head_dim > kBig)
    return make_error("head_dim {}: must be between 0 and {}", s.head_dim, kBig);
  if (s.head_dim == 0 && s.hidden % s.heads != 0)
    return make_error("--heads {}: does not divide --hidden {}", s.heads, s.hidden);
  if (llama_head_dim(s) % 2 != 0)
    return make_error("--heads {}: the head size {} must be even for rotary embeddings", s.heads,
                      llama_head_dim(s));
  if (!(s.rope_theta > 1) || !(s.rope_linear > 0) || !(s.rope_factor >= 0) || !(s.rms_eps > 0) ||
      (s.rope_factor > 0 && !(s.rope_high > s.rope_low && s.rope_low > 0)))
    return make_error("rope_theta {}, rope scaling or rms_norm_eps {} out of range", s.rope_theta,
                      s.rms_eps);
  const int64_t kv = s.kv_heads ? s.kv_heads : s.heads;
  if (s.heads % kv != 0)
    return make_error("--kv-heads {}: does not divide --heads {}", kv, s.heads);
  return {};
}

int64_t llama_parameter_count(const LlamaShape& s) {
  const int64_t d = s.hidden, dh = llama_head_dim(s), kv = s.kv_heads ? s.kv_heads : s.heads;
  const int64_t q = s.heads * dh;
  const int64_t attention = d * q + 2 * d * kv * dh + q * d + (s.qkv_bias ? q + 2 * kv * dh : 0) +
                            (s.output_bias ? d : 0) + (s.qk_norm ? 2 * dh : 0);
  const int64_t per_layer = attention + 3 * d * llama_ffn(s) + 2 * d;
  return (s.tie_embeddings ? 1 : 2) * s.vocab * d + s.layers * per_layer + d;
}

Expected<std::string> llama_model_bytes(const LlamaShape& s, const std::string& name,
                                        const std::string& data_file) {
  if (auto ok = check_llama_shape(s); !ok) return ok.error();
  const int64_t d = s.hidden, h = s.heads, dh = llama_head_dim(s), S = s.seq, V = s.vocab;
  const int64_t kv = s.kv_heads ? s.kv_heads : h, f = llama_ffn(s);

  onnx::ModelProto model;
  onnx::GraphProto& g = detail::start_decoder(model, name, s.batch, S, V);

  Builder b(g, data_file);
  const std::string embed = b.param("tok_embeddings.weight", {V, d});
  const std::string eps = b.scalar("rms_eps", s.rms_eps);
  const std::string scale = b.scalar("attention_scale", 1.0f / std::sqrt(static_cast<float>(dh)));
  const std::string q_shape = b.ints("q_shape", {-1, S, h, dh}, false);
  const std::string kv_shape = b.ints("kv_shape", {-1, S, kv, dh}, false);
  const std::string rep_shape = b.ints("repeat_shape", {1, 1, h / kv, 1, 1}, false);
  const std::string heads_shape = b.ints("heads_shape", {-1, h, S, dh}, false);
  const std::string model_shape = b.ints("model_shape", {-1, S, h * dh}, false);
  const std::string axis2 = b.ints("axis2", {2}, false);
  const std::string mask = detail::causal_mask(b, S);

  // Rotary tables [S, dh]: angle(p, i) = p * theta^(-2i/dh), cos and sin of [angles, angles].
  std::string pos = b.node("Range", "rope/positions",
                           {b.ints("rope/start", {0}, true), b.ints("rope/limit", {S}, true),
                            b.ints("rope/delta", {1}, true)});
  pos = b.node("Cast", "rope/positions_float", {pos});
  b.attr("to", int64_t{onnx::TensorProto::FLOAT});
  pos = b.node("Unsqueeze", "rope/column", {pos, b.ints("rope/axis1", {1}, false)});
  {
    onnx::TensorProto inv;
    inv.set_data_type(onnx::TensorProto::FLOAT);
    inv.add_dims(1);
    inv.add_dims(dh / 2);
    for (double f : llama_inv_freq(s)) inv.add_float_data(static_cast<float>(f));
    b.node("Constant", "rope/inv_freq", {});
    b.attr("value", std::move(inv));
  }
  std::string angles = b.node("Mul", "rope/angles", {pos, "rope/inv_freq"});
  angles = b.node("Concat", "rope/angles2", {angles, angles});
  b.attr("axis", int64_t{1});
  const std::string cos = b.node("Cos", "rope/cos", {angles});
  const std::string sin = b.node("Sin", "rope/sin", {angles});
  const std::string half_starts = b.ints("rope/half", {dh / 2}, false);
  const std::string zero = b.ints("rope/zero", {0}, false), end = b.ints("rope/end", {dh}, false);
  const std::string last_axis = b.ints("rope/last_axis", {3}, false);

  auto rms_norm = [&](const std::string& x, const std::string& p, int64_t width = 0) {
    std::string sq = b.node("Mul", p + "/square", {x, x});
    std::string ms = b.node("ReduceMean", p + "/mean", {sq});
    b.attr("axes", std::vector<int64_t>{-1});
    b.attr("keepdims", int64_t{1});
    std::string root = b.node("Sqrt", p + "/sqrt", {b.node("Add", p + "/eps", {ms, eps})});
    std::string y = b.node("Div", p + "/div", {x, root});
    return b.node("Mul", p, {y, b.param(p + ".weight", {width ? width : d})});
  };
  auto linear = [&](const std::string& x, const std::string& p, int64_t in, int64_t out,
                    bool bias = false) {
    std::string y = b.node("MatMul", p, {x, b.param(p + ".weight", {in, out})});
    return bias ? b.node("Add", p + "/bias", {y, b.param(p + ".bias", {out})}) : y;
  };
  // [B, S, n*dh] -> [B, n, S, dh] with rotary embeddings applied (rotate-half form).
  // `norm` (Qwen3's q_norm, k_norm): RMSNorm over each head's width before the rotation.
  auto rotary_heads = [&](const std::string& x, const std::string& p, const std::string& shape,
                          const std::string& norm = "") {
    std::string t = b.node("Reshape", p + "/heads", {x, shape});
    if (!norm.empty()) t = rms_norm(t, norm, dh);
    t = b.node("Transpose", p + "/transpose", {t});
    b.attr("perm", std::vector<int64_t>{0, 2, 1, 3});
    std::string lo = b.node("Slice", p + "/lo", {t, zero, half_starts, last_axis});
    std::string hi = b.node("Slice", p + "/hi", {t, half_starts, end, last_axis});
    std::string rot = b.node("Concat", p + "/rotate", {b.node("Neg", p + "/neg", {hi}), lo});
    b.attr("axis", int64_t{3});
    return b.node("Add", p + "/rope",
                  {b.node("Mul", p + "/cos", {t, cos}), b.node("Mul", p + "/sin", {rot, sin})});
  };
  // Grouped-query attention: each key/value head serves heads / kv query heads.
  auto repeat_kv = [&](const std::string& t, const std::string& p) {
    if (kv == h) return t;
    std::string u = b.node("Unsqueeze", p + "/unsqueeze", {t, axis2});
    u = b.node("Expand", p + "/expand", {u, rep_shape});
    return b.node("Reshape", p + "/repeat", {u, heads_shape});
  };

  std::string x = b.node("Gather", "tok_embeddings", {embed, "input_ids"});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    std::string a = rms_norm(x, p + ".attention_norm");
    const bool qb = s.qkv_bias;
    const bool qk = s.qk_norm;
    std::string q = rotary_heads(linear(a, p + ".attention.wq", d, h * dh, qb), p + "/q", q_shape,
                                 qk ? p + ".attention.q_norm" : "");
    std::string k = rotary_heads(linear(a, p + ".attention.wk", d, kv * dh, qb), p + "/k", kv_shape,
                                 qk ? p + ".attention.k_norm" : "");
    std::string v = b.node("Reshape", p + "/v/heads",
                           {linear(a, p + ".attention.wv", d, kv * dh, qb), kv_shape});
    v = b.node("Transpose", p + "/v/transpose", {v});
    b.attr("perm", std::vector<int64_t>{0, 2, 1, 3});
    k = repeat_kv(k, p + "/k");
    v = repeat_kv(v, p + "/v");
    std::string kt = b.node("Transpose", p + "/k/transpose_t", {k});
    b.attr("perm", std::vector<int64_t>{0, 1, 3, 2});
    std::string scores =
        b.node("Mul", p + "/scale", {b.node("MatMul", p + "/scores", {q, kt}), scale});
    scores = b.node("Add", p + "/mask", {scores, mask});
    std::string probs = b.node("Softmax", p + "/softmax", {scores});
    b.attr("axis", int64_t{-1});
    std::string ctx = b.node("MatMul", p + "/context", {probs, v});
    ctx = b.node("Transpose", p + "/context/transpose", {ctx});
    b.attr("perm", std::vector<int64_t>{0, 2, 1, 3});
    ctx = b.node("Reshape", p + "/context/merge", {ctx, model_shape});
    x = b.node("Add", p + "/residual_1",
               {x, linear(ctx, p + ".attention.wo", h * dh, d, s.output_bias)});
    // SwiGLU.
    std::string m = rms_norm(x, p + ".ffn_norm");
    std::string gate = linear(m, p + ".feed_forward.w1", d, f);
    gate = b.node("Mul", p + "/silu", {gate, b.node("Sigmoid", p + "/sigmoid", {gate})});
    std::string up = linear(m, p + ".feed_forward.w3", d, f);
    std::string down = linear(b.node("Mul", p + "/glu", {gate, up}), p + ".feed_forward.w2", f, d);
    x = b.node("Add", p + "/residual_2", {x, down});
  }
  x = rms_norm(x, "norm");
  // A tied head reads the token embedding [V, d] transposed; its gradient adds to the
  // embedding's.
  const std::string head = s.tie_embeddings ? b.node("Transpose", "output/tied", {embed})
                                            : b.param("output.weight", {d, V});
  if (s.tie_embeddings) b.attr("perm", std::vector<int64_t>{1, 0});
  b.nodes("MatMul", "output", {x, head}, {"logits"});
  if (s.loss) detail::language_model_loss(b, g, "logits", s.batch, S, V);

  std::string bytes;
  if (!model.SerializeToString(&bytes)) return make_error("cannot serialise the generated model");
  return bytes;
}

}  // namespace planner::importers
