// SHA-256 (FIPS 180-4): identifies the model file a plan was made for, without new dependencies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "support/expected.h"

namespace planner {

/// An incremental SHA-256 hash: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();

  /// Appends `size` bytes to the message.
  void update(const void* data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }

  /// The 32-byte digest of everything appended. Precondition: called at most once.
  std::array<uint8_t, 32> digest();
  /// The digest as 64 lowercase hex digits. Precondition: called at most once.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool finished_ = false;
};

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// SHA-256 of a file's bytes as 64 lowercase hex digits, streamed; errors name the file. Only
/// a regular file of at most `max_bytes` is read (check_input_file, before any byte is read): a
/// FIFO, a device or a file past the bound is refused at once.
/// `what` names the kind of file in messages ("model file").
Expected<std::string> sha256_file(const std::string& path,
                                  int64_t max_bytes = std::numeric_limits<int64_t>::max(),
                                  std::string_view what = "file");

/// The most bytes a model file may have (protobuf's bound on one message): what is hashed,
/// looked up or imported as a model is refused past it before a byte is read.
inline constexpr int64_t kMaxModelFileBytes = int64_t{2} << 30;

}  // namespace planner
