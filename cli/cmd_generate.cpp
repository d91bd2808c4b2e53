// `planner generate gpt OUT.onnx`: a graph-only model of a given architecture and size, to plan
// models this machine could never hold (importers/gpt_model.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "importers/gpt_model.h"
#include "importers/llama_model.h"
#include "support/output_file.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct GenerateFlags {
  std::string architecture;
  std::string output;
  std::string preset;
  bool list = false;
  importers::GptShape shape;
  int64_t kv_heads = 0;       ///< llama: key/value heads (0: as many as heads)
  std::string qkv = "heads";  ///< gpt: the fused projection's layout (GptShape::qkv_blocks)
  // Which size flags the user gave (they override the preset's).
  CLI::Option *layers = nullptr, *hidden = nullptr, *heads = nullptr, *seq = nullptr,
              *vocab = nullptr, *kv = nullptr, *ffn = nullptr;
};

int list_presets(const std::string& architecture) {
  std::printf("%-12s %-20s %7s %7s %6s %6s %15s\n", "preset", "what", "layers", "hidden", "heads",
              "seq", "parameters");
  auto row = [](const char* name, const char* what, int64_t layers, int64_t hidden, int64_t heads,
                int64_t seq, int64_t params) {
    std::printf("%-12s %-20s %7lld %7lld %6lld %6lld %15s\n", name, what,
                static_cast<long long>(layers), static_cast<long long>(hidden),
                static_cast<long long>(heads), static_cast<long long>(seq),
                format_count(params).c_str());
  };
  if (architecture == "llama")
    for (const importers::LlamaPreset& p : importers::llama_presets())
      row(p.name, p.what, p.shape.layers, p.shape.hidden, p.shape.heads, p.shape.seq,
          importers::llama_parameter_count(p.shape));
  else
    for (const importers::GptPreset& p : importers::gpt_presets())
      row(p.name, p.what, p.shape.layers, p.shape.hidden, p.shape.heads, p.shape.seq,
          importers::gpt_parameter_count(p.shape));
  return 0;
}

// The model of `layers` blocks must be one protobuf message (under 2 GiB). Checked before it is
// built, from the sizes of the same model with one and two blocks (the names of later blocks
// are longer by their digits: a quarter more is allowed per block), so that a huge --layers is
// one error line rather than a graph built in memory.
template <typename Shape, typename Make>
Expected<void> check_layers_fit(const Shape& shape, const Make& make) {
  constexpr int64_t kLimit = int64_t{2} << 30;
  if (shape.layers <= 2) return ok();
  Shape one = shape, two = shape;
  one.layers = 1, two.layers = 2;
  PLANNER_TRY_ASSIGN(std::string a, make(one));
  PLANNER_TRY_ASSIGN(std::string b, make(two));
  const int64_t fixed = static_cast<int64_t>(a.size());
  const int64_t per_block = (static_cast<int64_t>(b.size()) - fixed) * 5 / 4 + 1;
  const int64_t most = std::max<int64_t>(2, (kLimit - fixed) / per_block);
  if (shape.layers > most)
    return make_error(
        "--layers {}: the model would be about {} GiB, over the 2 GiB one ONNX file may hold "
        "(at most about {} layers of these sizes)",
        shape.layers, (fixed + shape.layers * per_block) >> 30, most);
  return ok();
}

// The LLaMA-style decoder: the preset's sizes where no flag overrides them.
Expected<std::pair<std::string, int64_t>> llama_bytes(const GenerateFlags& flags,
                                                      const std::string& name,
                                                      const std::string& data_file) {
  importers::LlamaShape shape;
  shape.layers = 2, shape.hidden = 256, shape.heads = 4, shape.seq = 128, shape.vocab = 1000;
  if (!flags.preset.empty()) {
    const importers::LlamaPreset* found = nullptr;
    for (const importers::LlamaPreset& p : importers::llama_presets())
      if (flags.preset == p.name) found = &p;
    if (!found)
      return make_error("--preset {}: unknown (planner generate llama --list)", flags.preset);
    shape = found->shape;
  }
  const importers::GptShape& g = flags.shape;
  if (*flags.layers) shape.layers = g.layers;
  if (*flags.hidden) shape.hidden = g.hidden;
  if (*flags.heads) shape.heads = g.heads;
  if (*flags.seq) shape.seq = g.seq;
  if (*flags.vocab) shape.vocab = g.vocab;
  if (*flags.kv) shape.kv_heads = flags.kv_heads;
  if (*flags.ffn) shape.ffn = g.ffn;
  shape.batch = g.batch;
  PLANNER_TRY(check_layers_fit(shape, [&](const importers::LlamaShape& s) {
    return importers::llama_model_bytes(s, name, data_file);
  }));
  PLANNER_TRY_ASSIGN(std::string bytes, importers::llama_model_bytes(shape, name, data_file));
  return std::pair{std::move(bytes), importers::llama_parameter_count(shape)};
}

int run_generate(GenerateFlags& flags) {
  if (flags.list) return list_presets(flags.architecture);
  if (flags.output.empty())
    return report(make_error("generate {}: give the output file (OUT.onnx)", flags.architecture));
  const bool llama = flags.architecture == "llama";
  if (!llama && *flags.kv)
    return report(make_error("--kv-heads: only for llama (grouped-query attention)"));
  if (llama && flags.shape.dropout != 0)
    return report(make_error("--dropout: only for gpt (LLaMA trains without dropout)"));
  if (llama && flags.qkv != "heads")
    return report(
        make_error("--qkv: only for gpt (LLaMA projects queries, keys and values "
                   "separately)"));
  importers::GptShape shape = flags.shape;
  shape.qkv_blocks = flags.qkv == "blocks";
  if (!llama && !flags.preset.empty()) {
    const importers::GptPreset* found = nullptr;
    for (const importers::GptPreset& p : importers::gpt_presets())
      if (flags.preset == p.name) found = &p;
    if (!found)
      return report(make_error("--preset {}: unknown (planner generate gpt --list)", flags.preset));
    // The preset's sizes, except where a flag says otherwise.
    const importers::GptShape& p = found->shape;
    if (!*flags.layers) shape.layers = p.layers;
    if (!*flags.hidden) shape.hidden = p.hidden;
    if (!*flags.heads) shape.heads = p.heads;
    if (!*flags.seq) shape.seq = p.seq;
    if (!*flags.vocab) shape.vocab = p.vocab;
  }
  if (!llama)
    if (auto ok = importers::check_gpt_shape(shape); !ok) return report(ok.error());

  // A file already there is replaced only when this command wrote it.
  namespace fs = std::filesystem;
  std::error_code ec;
  if (auto usable = check_outputs({{flags.output}}, {}); !usable) return report(usable.error());
  if (fs::exists(fs::symlink_status(flags.output, ec)) &&
      !importers::is_generated_model(flags.output))
    return report(make_error("{}: exists and is not a model `planner generate` wrote; not replaced",
                             flags.output));

  const fs::path out(flags.output);
  const std::string name = out.stem().string();
  const std::string data_file = name + ".weights";
  std::string bytes;
  int64_t params = 0;
  if (llama) {
    auto made = llama_bytes(flags, name, data_file);
    if (!made) return report(made.error());
    bytes = std::move(made->first);
    params = made->second;
  } else {
    auto fits = check_layers_fit(shape, [&](const importers::GptShape& s) {
      return importers::gpt_model_bytes(s, name, data_file);
    });
    if (!fits) return report(fits.error());
    auto made = importers::gpt_model_bytes(shape, name, data_file);
    if (!made) return report(made.error());
    bytes = std::move(*made);
    params = importers::gpt_parameter_count(shape);
  }
  if (auto written = write_file_atomically(flags.output, bytes); !written)
    return report(written.error());
  std::printf("%s: %s decoder, %s parameters (%s in fp32, external data '%s', not written)\n",
              flags.output.c_str(), llama ? "LLaMA-style" : "GPT-style",
              format_count(params).c_str(), format_bytes(4.0 * static_cast<double>(params)).c_str(),
              data_file.c_str());
  return 0;
}

}  // namespace

void configure_generate(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<GenerateFlags>();
  app.add_option("architecture", flags->architecture,
                 "what to generate: gpt (GPT-2/GPT-3) or llama (RMSNorm, rotary embeddings, "
                 "SwiGLU, grouped-query attention)")
      ->required()
      ->check(CLI::IsMember({"gpt", "llama"}));
  app.add_option("output", flags->output, "the ONNX file to write (graph only)");
  app.add_flag("--list", flags->list, "list the presets and their sizes");
  app.add_option("--preset", flags->preset,
                 "a named size: gpt2-small, gpt3-125m ... gpt3-175b; llama-7b ... llama2-70b");
  flags->layers = app.add_option("--layers", flags->shape.layers, "decoder blocks");
  flags->hidden = app.add_option("--hidden", flags->shape.hidden, "model width d_model");
  flags->heads = app.add_option("--heads", flags->shape.heads, "attention heads");
  flags->seq = app.add_option("--seq", flags->shape.seq, "context length");
  flags->vocab = app.add_option("--vocab", flags->shape.vocab, "vocabulary size");
  flags->ffn = app.add_option("--ffn", flags->shape.ffn,
                              "MLP width (default 4 x hidden; llama: 2/3 of that, rounded up to "
                              "a multiple of 256)");
  flags->kv = app.add_option("--kv-heads", flags->kv_heads,
                             "llama: key/value heads (grouped-query attention; default: heads)");
  app.add_option("--batch", flags->shape.batch,
                 "a static batch (default: a dynamic 'batch' dimension, bound by --batch when "
                 "planning)");
  app.add_option("--qkv", flags->qkv,
                 "gpt: the fused query/key/value projection's layout: heads (Megatron-LM's: each "
                 "head's query, key and value together, so tensor parallelism splits it at head "
                 "boundaries) or blocks (GPT-2's: all queries, then keys, then values)")
      ->check(CLI::IsMember({"heads", "blocks"}));
  app.add_option("--dropout", flags->shape.dropout,
                 "Dropout ratio in training mode after attention probabilities and residual "
                 "branches (default 0: none)");
  run = [flags] { return run_generate(*flags); };
}

}  // namespace planner::cli
