// planner: the command-line entry point. Only wiring: parse the command line, find the
// subcommand in the table, run it.
#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "support/text.h"

namespace planner::cli {
namespace {

// The command table. Keep it sorted by the order a user meets the commands.
constexpr std::array kCommands = {
    CommandSpec{"inspect", "summarise a model: operators, parameters, activations, FLOPs",
                configure_inspect},
    CommandSpec{"topology", "list, show and check device topologies", configure_topology},
    CommandSpec{"tdl", "list, show and check operator descriptions (TDL)", configure_tdl},
    CommandSpec{"simulate", "simulate a baseline strategy: step time, memory, communication",
                configure_simulate},
    CommandSpec{"plan", "search for a plan and write the plan file", configure_plan},
    CommandSpec{"explain", "why a plan chose what it chose, operator by operator",
                configure_explain},
    CommandSpec{"frontier", "the memory/time frontier, for one GPU count or several",
                configure_frontier},
    CommandSpec{"compare", "run every search and baseline on a model and compare their plans",
                configure_compare},
    CommandSpec{"diff", "compare two plan files; --fail-if-* gates for CI", configure_diff},
    CommandSpec{"compile", "compile a plan: partitioned ONNX files and a launcher",
                configure_compile},
    CommandSpec{"verify", "check a plan: run it partitioned and whole, compare the results",
                configure_verify},
    CommandSpec{"export", "the arguments that run a plan in a training framework (Megatron-LM)",
                configure_export},
    CommandSpec{"generate", "write a graph-only model of a given architecture and size (GPT)",
                configure_generate},
};

// "did you mean …?" for a mistyped subcommand.
const char* closest_command(std::string_view word) {
  const char* best = nullptr;
  size_t best_distance = 3;  // suggest only near misses
  for (const CommandSpec& c : kCommands) {
    size_t d = edit_distance(word, c.name);
    if (d < best_distance) best = c.name, best_distance = d;
  }
  return best;
}

// A sink that writes each distinct message (level and text) once, to `inner`.
class OnceSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit OnceSink(std::shared_ptr<spdlog::sinks::sink> inner) : inner_(std::move(inner)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string key = std::to_string(static_cast<int>(msg.level)) + ':';
    key.append(msg.payload.data(), msg.payload.size());
    if (seen_.insert(std::move(key)).second) inner_->log(msg);
  }
  void flush_() override { inner_->flush(); }
  void set_pattern_(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter_(std::unique_ptr<spdlog::formatter> f) override {
    inner_->set_formatter(std::move(f));
  }

 private:
  std::shared_ptr<spdlog::sinks::sink> inner_;
  std::set<std::string> seen_;
};

int run_main(int argc, char** argv) {
  CLI::App app{"planner: split a deep-learning model across many GPUs, and compile the plan"};
  app.name("planner");
  app.require_subcommand(1);
  app.set_version_flag("--version", "planner 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log what each stage does");

  std::vector<std::function<int()>> runners(kCommands.size());
  std::vector<CLI::App*> subs;
  for (size_t i = 0; i < kCommands.size(); ++i) {
    CLI::App* sub = app.add_subcommand(kCommands[i].name, kCommands[i].summary);
    kCommands[i].configure(*sub, runners[i]);
    subs.push_back(sub);
  }

  if (argc >= 2 && argv[1][0] != '-') {
    std::string_view word = argv[1];
    bool known = std::any_of(kCommands.begin(), kCommands.end(),
                             [&](const CommandSpec& c) { return word == c.name; });
    if (!known) {
      const char* hint = closest_command(word);
      if (hint)
        std::fprintf(stderr, "error: unknown command '%s', did you mean '%s'?\n", argv[1], hint);
      else
        std::fprintf(stderr, "error: unknown command '%s' (see 'planner --help')\n", argv[1]);
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every bad flag or value exits 1, as any input error does
    // (CLI11's own codes, 105 and up, are not the planner's documented exit codes).
    return app.exit(e) == 0 ? 0 : 1;
  }
  // Diagnostics go to stderr, uncoloured, as "warning: ..." lines, so stdout stays clean for
  // JSON and tables and golden files stay byte-stable.
  // Each distinct diagnostic once: the pipeline's front runs again for every step variant a
  // command tries, and its warnings would repeat.
  auto sink = std::make_shared<OnceSink>(std::make_shared<spdlog::sinks::stderr_sink_st>());
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("planner", sink));
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("%l: %v");

  for (size_t i = 0; i < subs.size(); ++i)
    if (subs[i]->parsed() && runners[i]) return runners[i]();
  return 2;
}

}  // namespace
}  // namespace planner::cli

int main(int argc, char** argv) {
  try {
    return planner::cli::run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    // Every user-facing failure should be an Error; reaching this is a bug, but the user
    // still gets one line and a non-zero exit rather than a crash.
    std::fprintf(stderr, "error: internal: %s\n", planner::terminal_safe(e.what()).c_str());
    return 70;
  }
}
