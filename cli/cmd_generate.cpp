// `planner generate gpt OUT.onnx`: a graph-only model of a given architecture and size, to plan
// models this machine could never hold (importers/gpt_model.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "importers/gpt_model.h"
#include "importers/hf_config.h"
#include "importers/llama_model.h"
#include "support/input_file.h"
#include "support/output_file.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct GenerateFlags {
  std::string architecture;
  std::vector<std::string>
      files;  ///< OUT.onnx; for hf, CONFIG.json (or none with --preset) and OUT
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

int list_hf_presets() {
  std::printf("%-14s %-16s %-20s %7s %7s %6s %4s %15s\n", "preset", "what", "architecture",
              "layers", "hidden", "heads", "kv", "parameters");
  for (const importers::HfPreset& p : importers::hf_presets()) {
    auto m = importers::parse_hf_config(p.config, p.name);
    if (!m) return report(m.error());
    const importers::LlamaShape& s = m->shape;
    std::printf("%-14s %-16s %-20s %7lld %7lld %6lld %4lld %15s\n", p.name, p.what,
                m->architecture.c_str(), static_cast<long long>(s.layers),
                static_cast<long long>(s.hidden), static_cast<long long>(s.heads),
                static_cast<long long>(s.kv_heads), format_count(llama_parameter_count(s)).c_str());
  }
  return 0;
}

int list_presets(const std::string& architecture) {
  if (architecture == "hf") return list_hf_presets();
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

// The preset named `name` among `presets` (gpt, llama and hf keep theirs in one shape of table);
// unknown: one error pointing at `planner generate ARCHITECTURE --list`.
template <typename Preset>
Expected<const Preset*> find_preset(const std::vector<Preset>& presets, const std::string& name,
                                    const std::string& architecture) {
  for (const Preset& p : presets)
    if (name == p.name) return &p;
  return make_error("--preset {}: unknown (planner generate {} --list)", name, architecture);
}

// The LLaMA-style decoder: the preset's sizes where no flag overrides them.
Expected<std::pair<std::string, int64_t>> llama_bytes(const GenerateFlags& flags,
                                                      const std::string& name,
                                                      const std::string& data_file) {
  importers::LlamaShape shape;
  shape.layers = 2, shape.hidden = 256, shape.heads = 4, shape.seq = 128, shape.vocab = 1000;
  if (!flags.preset.empty()) {
    PLANNER_TRY_ASSIGN(const importers::LlamaPreset* found,
                       find_preset(importers::llama_presets(), flags.preset, "llama"));
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
  shape.loss = g.loss;
  PLANNER_TRY(check_layers_fit(shape, [&](const importers::LlamaShape& s) {
    return importers::llama_model_bytes(s, name, data_file);
  }));
  PLANNER_TRY_ASSIGN(std::string bytes, importers::llama_model_bytes(shape, name, data_file));
  return std::pair{std::move(bytes), importers::llama_parameter_count(shape)};
}

// The decoder of a Hugging Face config.json (flags.files[0]) or of a preset's; --seq and
// --batch as for llama, the other size flags refused (the config says them).
Expected<std::pair<std::string, int64_t>> hf_bytes(const GenerateFlags& flags,
                                                   const std::string& config_path,
                                                   const std::string& name,
                                                   const std::string& data_file,
                                                   std::string& architecture) {
  for (CLI::Option* o : {flags.layers, flags.hidden, flags.heads, flags.vocab, flags.kv, flags.ffn})
    if (*o)
      return make_error("{}: the config gives the sizes; only --seq and --batch apply to hf",
                        o->get_name());
  std::string text, source = config_path;
  if (!flags.preset.empty()) {
    PLANNER_TRY_ASSIGN(const importers::HfPreset* found,
                       find_preset(importers::hf_presets(), flags.preset, "hf"));
    text = found->config, source = found->name;
  } else {
    // A config.json is a few kilobytes: 1 MiB bounds what is read.
    PLANNER_TRY_ASSIGN(text, read_file(config_path, "config file", int64_t{1} << 20));
  }
  PLANNER_TRY_ASSIGN(importers::HfModel m,
                     importers::parse_hf_config(text, source, *flags.seq ? flags.shape.seq : 0));
  m.shape.batch = flags.shape.batch;
  m.shape.loss = flags.shape.loss;
  architecture = m.architecture;
  PLANNER_TRY(check_layers_fit(m.shape, [&](const importers::LlamaShape& s) {
    return importers::llama_model_bytes(s, name, data_file);
  }));
  PLANNER_TRY_ASSIGN(std::string bytes, importers::llama_model_bytes(m.shape, name, data_file));
  return std::pair{std::move(bytes), importers::llama_parameter_count(m.shape)};
}

int run_generate(GenerateFlags& flags) {
  if (flags.list) return list_presets(flags.architecture);
  const bool hf = flags.architecture == "hf";
  // gpt and llama: OUT; hf: CONFIG OUT, or OUT alone with --preset.
  std::string config;
  const size_t wanted = hf && flags.preset.empty() ? 2 : 1;
  if (flags.files.size() > wanted)
    return report(make_error("generate {}: too many files (expected {})", flags.architecture,
                             hf && wanted == 2 ? "CONFIG.json OUT.onnx" : "OUT.onnx"));
  if (flags.files.size() == wanted) {
    flags.output = flags.files.back();
    if (wanted == 2) config = flags.files.front();
  }
  if (flags.output.empty())
    return report(make_error("generate {}: give {}", flags.architecture,
                             wanted == 2 ? "the config and the output file (CONFIG.json OUT.onnx)"
                                         : "the output file (OUT.onnx)"));
  const bool llama = flags.architecture == "llama" || hf;
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
  if (!llama && !flags.preset.empty() && !hf) {
    auto found = find_preset(importers::gpt_presets(), flags.preset, "gpt");
    if (!found) return report(found.error());
    // The preset's sizes, except where a flag says otherwise.
    const importers::GptShape& p = (*found)->shape;
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
  if (auto usable = check_outputs({{flags.output}}, {{config, "the config"}}); !usable)
    return report(usable.error());
  if (fs::exists(fs::symlink_status(flags.output, ec)) &&
      !importers::is_generated_model(flags.output))
    return report(make_error("{}: exists and is not a model `planner generate` wrote; not replaced",
                             flags.output));

  const fs::path out(flags.output);
  const std::string name = out.stem().string();
  const std::string data_file = name + ".weights";
  std::string bytes;
  int64_t params = 0;
  std::string architecture = llama ? "LLaMA-style" : "GPT-style";
  if (hf) {
    auto made = hf_bytes(flags, config, name, data_file, architecture);
    if (!made) return report(made.error());
    bytes = std::move(made->first);
    params = made->second;
  } else if (llama) {
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
              flags.output.c_str(), architecture.c_str(), format_count(params).c_str(),
              format_bytes(4.0 * static_cast<double>(params)).c_str(), data_file.c_str());
  return 0;
}

}  // namespace

void configure_generate(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<GenerateFlags>();
  app.add_option("architecture", flags->architecture,
                 "what to generate: gpt (GPT-2/GPT-3), llama (RMSNorm, rotary embeddings, "
                 "SwiGLU, grouped-query attention) or hf (a Hugging Face config.json: "
                 "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)")
      ->required()
      ->check(CLI::IsMember({"gpt", "llama", "hf"}));
  app.add_option("files", flags->files,
                 "the ONNX file to write (graph only); for hf, the config.json first (none with "
                 "--preset)");
  app.add_flag("--list", flags->list, "list the presets and their sizes");
  app.add_option("--preset", flags->preset,
                 "a named size: gpt2-small, gpt3-125m ... gpt3-175b; llama-7b ... llama2-70b; hf: "
                 "llama3.1-8b, llama3.2-1b, mistral-7b, qwen2-7b ... (--list)");
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
  app.add_flag("--loss", flags->shape.loss,
               "end in the loss as torch computes it (torchtitan's): the logits widened to fp32 "
               "and a mean cross-entropy against a 'labels' input; the output is the scalar "
               "loss (default: the logits, the loss left out)");
  app.add_option("--dropout", flags->shape.dropout,
                 "Dropout ratio in training mode after attention probabilities and residual "
                 "branches (default 0: none)");
  run = [flags] { return run_generate(*flags); };
}

}  // namespace planner::cli
