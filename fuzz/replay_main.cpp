// A main() for the fuzz harnesses without libFuzzer (any compiler): runs each input once.
//
//   fuzz_replay_NAME [--skip LIST] PATH...
//
// A PATH that is a folder stands for its files in name order. LIST is a text file of inputs
// known to crash whose fixes have not landed (fuzz/regressions/open.txt: one path relative to
// fuzz/regressions per line, `#` comments); they are named and skipped. A crash or a broken
// property aborts, so the test fails; the input is printed first.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

// The entries of a skip list: "onnx_text/deep_if.onnxtxt  # comment" ->
// "onnx_text/deep_if.onnxtxt".
std::set<std::string> read_skip_list(const std::string& path) {
  std::set<std::string> skip;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    std::exit(2);
  }
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    line.erase(0, line.find_first_not_of(" \t"));
    if (!line.empty()) skip.insert(line);
  }
  return skip;
}

// Whether `file` is named by the skip list (as the last two components of its path).
bool skipped(const fs::path& file, const std::set<std::string>& skip) {
  std::string key = (file.parent_path().filename() / file.filename()).generic_string();
  return skip.count(key) > 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::set<std::string> skip;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--skip" && i + 1 < argc) {
      skip = read_skip_list(argv[++i]);
      continue;
    }
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.emplace_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such file or folder\n", arg.c_str());
      return 2;
    }
  }
  int ran = 0, open = 0;
  for (const fs::path& file : inputs) {
    if (skipped(file, skip)) {
      std::printf("skipped (open finding, see fuzz/regressions/open.txt): %s\n", file.c_str());
      ++open;
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: cannot read\n", file.c_str());
      return 2;
    }
    std::fprintf(stderr, "running %s (%zu bytes)\n", file.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++ran;
  }
  std::printf("%d inputs ran, %d open findings skipped\n", ran, open);
  return 0;
}
