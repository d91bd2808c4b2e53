// `planner generate gpt OUT.onnx`: a graph-only model of a given architecture and size, to plan
// models this machine could never hold (importers/gpt_model.h).
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "importers/gpt_model.h"
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
  // Which size flags the user gave (they override the preset's).
  CLI::Option *layers = nullptr, *hidden = nullptr, *heads = nullptr, *seq = nullptr,
              *vocab = nullptr;
};

int list_presets() {
  std::printf("%-12s %-20s %7s %7s %6s %6s %15s\n", "preset", "what", "layers", "hidden", "heads",
              "seq", "parameters");
  for (const importers::GptPreset& p : importers::gpt_presets())
    std::printf("%-12s %-20s %7lld %7lld %6lld %6lld %15s\n", p.name, p.what,
                static_cast<long long>(p.shape.layers), static_cast<long long>(p.shape.hidden),
                static_cast<long long>(p.shape.heads), static_cast<long long>(p.shape.seq),
                format_count(importers::gpt_parameter_count(p.shape)).c_str());
  return 0;
}

int run_generate(GenerateFlags& flags) {
  if (flags.list) return list_presets();
  if (flags.output.empty())
    return report(make_error("generate {}: give the output file (OUT.onnx)", flags.architecture));
  importers::GptShape shape = flags.shape;
  if (!flags.preset.empty()) {
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
  if (auto ok = importers::check_gpt_shape(shape); !ok) return report(ok.error());

  // A file already there is replaced only when this command wrote it.
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(flags.output, ec)) &&
      !importers::is_generated_model(flags.output))
    return report(make_error("{}: exists and is not a model `planner generate` wrote; not replaced",
                             flags.output));
  if (auto usable = check_outputs({{flags.output}}, {}); !usable) return report(usable.error());

  const fs::path out(flags.output);
  const std::string name = out.stem().string();
  const std::string data_file = name + ".weights";
  auto bytes = importers::gpt_model_bytes(shape, name, data_file);
  if (!bytes) return report(bytes.error());
  if (auto written = write_file_atomically(flags.output, *bytes); !written)
    return report(written.error());
  std::printf(
      "%s: GPT-style decoder, %lld layers, hidden %lld, %lld heads, seq %lld, vocabulary %lld, "
      "%s parameters (%s in fp32, external data '%s', not written)\n",
      flags.output.c_str(), static_cast<long long>(shape.layers),
      static_cast<long long>(shape.hidden), static_cast<long long>(shape.heads),
      static_cast<long long>(shape.seq), static_cast<long long>(shape.vocab),
      format_count(importers::gpt_parameter_count(shape)).c_str(),
      format_bytes(4.0 * static_cast<double>(importers::gpt_parameter_count(shape))).c_str(),
      data_file.c_str());
  return 0;
}

}  // namespace

void configure_generate(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<GenerateFlags>();
  app.add_option("architecture", flags->architecture, "what to generate: gpt")
      ->required()
      ->check(CLI::IsMember({"gpt"}));
  app.add_option("output", flags->output, "the ONNX file to write (graph only)");
  app.add_flag("--list", flags->list, "list the presets and their sizes");
  app.add_option("--preset", flags->preset, "a named size: gpt2-small, gpt3-125m ... gpt3-175b");
  flags->layers = app.add_option("--layers", flags->shape.layers, "decoder blocks");
  flags->hidden = app.add_option("--hidden", flags->shape.hidden, "model width d_model");
  flags->heads = app.add_option("--heads", flags->shape.heads, "attention heads");
  flags->seq = app.add_option("--seq", flags->shape.seq, "context length");
  flags->vocab = app.add_option("--vocab", flags->shape.vocab, "vocabulary size");
  app.add_option("--ffn", flags->shape.ffn, "MLP width (default 4 x hidden)");
  app.add_option("--batch", flags->shape.batch,
                 "a static batch (default: a dynamic 'batch' dimension, bound by --batch when "
                 "planning)");
  app.add_option("--dropout", flags->shape.dropout,
                 "Dropout ratio in training mode after attention probabilities and residual "
                 "branches (default 0: none)");
  run = [flags] { return run_generate(*flags); };
}

}  // namespace planner::cli
