// Fuzz target: TDL source through tdl::parse_file (lexer, parser and semantic checks).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "tdl/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source = "fuzz.tdl";
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto file = planner::tdl::parse_file(text, source);
  if (!file) planner::fuzz::check_error(file.error(), source);
  return 0;
}
