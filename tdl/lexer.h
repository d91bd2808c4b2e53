// The TDL lexer: turns source text into tokens with locations.
//
// API: `tokenize(source)` returns every token of the file followed by one kEnd token, or a
// located error (an unexpected character, an unterminated string). Keywords (op, when, as,
// and, or, not) are plain identifiers here; the parser gives them meaning by context.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/expected.h"
#include "tdl/source.h"

namespace planner::tdl {

/// What a token is.
enum class TokenKind {
  kIdent,   ///< letters, digits, '_' (not starting with a digit)
  kInt,     ///< decimal integer literal
  kFloat,   ///< literal with '.' or an exponent
  kString,  ///< "..." (text holds the contents, without quotes)
  kPunct,   ///< operator or punctuation; text holds it ("->", "...", "==", "(", ...)
  kEnd,     ///< end of input
};

/// One token: kind, its text (for kPunct the operator itself) and where it starts.
struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  SourceLoc loc;
  int64_t int_value = 0;   ///< for kInt
  double float_value = 0;  ///< for kFloat

  /// True for a punctuation token with exactly this text.
  bool is(std::string_view punct) const { return kind == TokenKind::kPunct && text == punct; }
  /// True for an identifier with exactly this text.
  bool is_ident(std::string_view word) const { return kind == TokenKind::kIdent && text == word; }
};

/// Splits `source.text` into tokens; comments (`#` to end of line) and whitespace are skipped.
Expected<std::vector<Token>> tokenize(const Source& source);

/// A short description of a token for messages: `'->'`, `identifier 'x'`, `end of input`.
std::string describe(const Token& token);

}  // namespace planner::tdl
