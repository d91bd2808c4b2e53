// Helpers shared by unit tests: paths to the source tree and the shared models.
#pragma once

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

namespace planner::testing {

/// The repository root.
inline std::filesystem::path source_dir() { return PLANNER_SOURCE_DIR; }

/// ../shared/models, or empty when the shared folder is absent.
inline std::filesystem::path shared_models_dir() {
  std::filesystem::path dir = std::filesystem::path(PLANNER_SHARED_DIR) / "models";
  return std::filesystem::is_directory(dir) ? dir : std::filesystem::path();
}

}  // namespace planner::testing

/// Skips the rest of a test case, visibly, when ../shared/models is absent.
#define PLANNER_REQUIRE_SHARED_MODELS()                                                \
  do {                                                                                 \
    if (::planner::testing::shared_models_dir().empty()) {                             \
      MESSAGE("SKIPPED: ../shared/models is absent; tests on the shared models skipped"); \
      return;                                                                          \
    }                                                                                  \
  } while (0)
