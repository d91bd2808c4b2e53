// Tests for support/sha256.cpp: the FIPS 180-4 example vectors, streaming, files.
#include "support/sha256.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <doctest/doctest.h>

namespace planner {
namespace {

TEST_CASE("FIPS 180-4 test vectors") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // The 448-bit message: padding must spill into a second block.
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("messages whose padding ends at or crosses a block boundary") {
  // Digests from an independent implementation (Python's hashlib) for runs of 'a'.
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"}};
  // Not a structured binding: doctest's message macros are lambdas, which clang 14 keeps off them.
  for (const auto& c : cases)
    CHECK_MESSAGE(sha256_hex(std::string(c.first, 'a')) == c.second, c.first);
}

TEST_CASE("streaming in pieces of any size gives the same digest") {
  std::string message;
  for (int i = 0; i < 1000; ++i) message += static_cast<char>(i * 7 + 3);
  const std::string whole = sha256_hex(message);
  for (size_t piece : {1, 3, 55, 56, 63, 64, 65, 200}) {
    Sha256 h;
    for (size_t i = 0; i < message.size(); i += piece)
      h.update(std::string_view(message).substr(i, piece));
    CHECK_MESSAGE(h.hex_digest() == whole, "piece size " << piece);
  }
  // Lengths around the padding boundary (55, 56, 64 bytes) each hash differently.
  CHECK(sha256_hex(std::string(55, 'x')) != sha256_hex(std::string(56, 'x')));
}

TEST_CASE("a file's digest is that of its bytes; a missing file is an error") {
  auto path = std::filesystem::temp_directory_path() / "planner_sha256_test.bin";
  std::string bytes = std::string(100000, 'a') + std::string("\0\x01\xff", 3);
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  auto digest = sha256_file(path.string());
  REQUIRE(digest);
  CHECK(*digest == sha256_hex(bytes));
  std::filesystem::remove(path);
  auto missing = sha256_file(path.string());
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message() == path.string() + ": no such file");
  auto dir = sha256_file(std::filesystem::temp_directory_path().string());
  REQUIRE_FALSE(dir);
  CHECK(dir.error().message() ==
        std::filesystem::temp_directory_path().string() + ": is a directory, not a file");
  // A device would never end; a FIFO would block the open.
  auto device = sha256_file("/dev/zero");
  REQUIRE_FALSE(device);
  CHECK(device.error().message() == "/dev/zero: is a character device, not a regular file");
}

}  // namespace
}  // namespace planner
