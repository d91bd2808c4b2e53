// Expected<T>: a value or an Error, for everything a user's input can make fail.
//
// The planner has two error channels (see docs/architecture.md): problems a user can cause
// (a broken model, a bad topology, an unknown operator) travel as Error values up to the
// command line, which prints them as one line and exits non-zero; broken invariants are
// PLANNER_CHECK failures that abort with context.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace planner {

/// A user-facing error: one line, LLVM style (lowercase, where first, no trailing period),
/// for example "model.onnx: node 'conv1' (Conv): input 'w' is not defined".
class Error {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}

  const std::string& message() const { return message_; }

  /// Returns the same error with "where: " put in front of the message.
  Error with_context(const std::string& where) const {
    return Error(where.empty() ? message_ : where + ": " + message_);
  }

 private:
  std::string message_;
};

/// Builds an Error from a fmt format string.
template <typename... Args>
Error make_error(fmt::format_string<Args...> format, Args&&... args) {
  return Error(fmt::format(format, std::forward<Args>(args)...));
}

/// A T or an Error. Check with has_value() / operator bool before dereferencing.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}      // NOLINT
  Expected(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool has_value() const { return storage_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return check_value(), std::get<0>(storage_); }
  const T& value() const& { return check_value(), std::get<0>(storage_); }
  T&& value() && { return check_value(), std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    if (has_value()) abort_with("Expected::error() called on a value");
    return std::get<1>(storage_);
  }

 private:
  void check_value() const {
    if (!has_value())
      abort_with(
          ("Expected::value() called on an error: " + std::get<1>(storage_).message()).c_str());
  }
  [[noreturn]] static void abort_with(const char* what) {
    std::fprintf(stderr, "internal error: %s\n", what);
    std::abort();
  }

  std::variant<T, Error> storage_;
};

/// Expected<void>: success or an Error.
template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)) {}  // NOLINT

  bool has_value() const { return !error_.has_value(); }
  explicit operator bool() const { return has_value(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

/// Success value for Expected<void>.
inline Expected<void> ok() {
  return {};
}

}  // namespace planner

/// Invariant check: aborts with file, line and message. For programmer errors only; anything
/// a user's input can trigger must return an Error instead.
#define PLANNER_CHECK(cond, ...)                                                                   \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "internal error at %s:%d: check '%s' failed: %s\n", __FILE__, __LINE__, \
                   #cond, ::fmt::format(__VA_ARGS__).c_str());                                     \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

/// Propagates an error from an Expected expression; binds its value otherwise.
#define PLANNER_TRY_ASSIGN(lhs, expr)                       \
  auto PLANNER_CONCAT(_planner_tmp_, __LINE__) = (expr);    \
  if (!PLANNER_CONCAT(_planner_tmp_, __LINE__))             \
    return PLANNER_CONCAT(_planner_tmp_, __LINE__).error(); \
  lhs = std::move(*PLANNER_CONCAT(_planner_tmp_, __LINE__))

#define PLANNER_TRY(expr)                                 \
  do {                                                    \
    auto _planner_status = (expr);                        \
    if (!_planner_status) return _planner_status.error(); \
  } while (0)

#define PLANNER_CONCAT_INNER(a, b) a##b
#define PLANNER_CONCAT(a, b) PLANNER_CONCAT_INNER(a, b)
