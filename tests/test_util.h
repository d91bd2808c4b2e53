// Helpers shared by unit tests: paths to the source tree and the shared models.
#pragma once

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PLANNER_TESTING_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PLANNER_TESTING_SANITIZED 1
#endif
#endif

namespace planner::testing {

/// What a test's time limits are multiplied by: sanitizer builds (scripts/sanitize.sh) run
/// code several times slower, and a limit there would only measure the instrumentation.
#ifdef PLANNER_TESTING_SANITIZED
inline constexpr double kTimeScale = 20;
#else
inline constexpr double kTimeScale = 1;
#endif

/// The repository root.
inline std::filesystem::path source_dir() {
  return PLANNER_SOURCE_DIR;
}

/// ../shared/models, or empty when the shared folder is absent.
inline std::filesystem::path shared_models_dir() {
  std::filesystem::path dir = std::filesystem::path(PLANNER_SHARED_DIR) / "models";
  return std::filesystem::is_directory(dir) ? dir : std::filesystem::path();
}

}  // namespace planner::testing

/// Skips the rest of a test case, visibly, when ../shared/models is absent.
#define PLANNER_REQUIRE_SHARED_MODELS()                                                   \
  do {                                                                                    \
    if (::planner::testing::shared_models_dir().empty()) {                                \
      MESSAGE("SKIPPED: ../shared/models is absent; tests on the shared models skipped"); \
      return;                                                                             \
    }                                                                                     \
  } while (0)
