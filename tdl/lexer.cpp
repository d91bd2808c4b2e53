// The TDL lexer.
#include "tdl/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace planner::tdl {
namespace {

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

}  // namespace

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kIdent:
      return fmt::format("identifier '{}'", token.text);
    case TokenKind::kInt:
    case TokenKind::kFloat:
      return fmt::format("number '{}'", token.text);
    case TokenKind::kString:
      return fmt::format("string \"{}\"", token.text);
    case TokenKind::kPunct:
      return fmt::format("'{}'", token.text);
    case TokenKind::kEnd:
      return "end of input";
  }
  return "token";
}

Expected<std::vector<Token>> tokenize(const Source& source) {
  const std::string& s = source.text;
  std::vector<Token> tokens;
  size_t i = 0;
  int line = 1;
  size_t line_start = 0;
  auto loc_at = [&](size_t pos) { return SourceLoc{line, static_cast<int>(pos - line_start) + 1}; };
  // Longest operators first so that "..." wins over ".." and "->" over "-".
  static const char* const kPuncts[] = {"...", "..", "->", "==", "!=", "<=", ">=", "(", ")",
                                        "[",   "]",  "<",  ">",  ",",  ":",  "=",  "+", "-",
                                        "*",   "/",  "%",  "@",  "?",  ".",  "!"};
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      ++i;
      ++line;
      line_start = i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    Token tok;
    tok.loc = loc_at(i);
    if (is_ident_start(c)) {
      size_t start = i;
      while (i < s.size() && is_ident_char(s[i])) ++i;
      tok.kind = TokenKind::kIdent;
      tok.text = s.substr(start, i - start);
      tokens.push_back(std::move(tok));
      continue;
    }
    if (is_digit(c)) {
      size_t start = i;
      while (i < s.size() && is_digit(s[i])) ++i;
      bool is_float = false;
      // "1.5" is a float, but "1..a" or "1...": the dots belong to an ellipsis.
      if (i + 1 < s.size() && s[i] == '.' && is_digit(s[i + 1])) {
        is_float = true;
        ++i;
        while (i < s.size() && is_digit(s[i])) ++i;
      } else if (i < s.size() && s[i] == '.' && (i + 1 >= s.size() || s[i + 1] != '.')) {
        is_float = true;  // "1." is 1.0
        ++i;
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < s.size() && is_digit(s[j])) {
          is_float = true;
          i = j;
          while (i < s.size() && is_digit(s[i])) ++i;
        }
      }
      tok.text = s.substr(start, i - start);
      if (is_float) {
        tok.kind = TokenKind::kFloat;
        tok.float_value = std::strtod(tok.text.c_str(), nullptr);
      } else {
        tok.kind = TokenKind::kInt;
        errno = 0;
        tok.int_value = std::strtoll(tok.text.c_str(), nullptr, 10);
        if (errno == ERANGE)
          return located_error(source, tok.loc, fmt::format("integer '{}' is too large", tok.text));
      }
      if (i < s.size() && is_ident_start(s[i])) {
        return located_error(source, loc_at(i),
                             fmt::format("unexpected character '{}' after number", s[i]));
      }
      tokens.push_back(std::move(tok));
      continue;
    }
    if (c == '"') {
      size_t start = ++i;
      while (i < s.size() && s[i] != '"' && s[i] != '\n') ++i;
      if (i >= s.size() || s[i] != '"')
        return located_error(source, tok.loc, "unterminated string");
      tok.kind = TokenKind::kString;
      tok.text = s.substr(start, i - start);
      ++i;
      tokens.push_back(std::move(tok));
      continue;
    }
    bool matched = false;
    for (const char* p : kPuncts) {
      std::string_view punct(p);
      if (s.compare(i, punct.size(), punct) == 0) {
        tok.kind = TokenKind::kPunct;
        tok.text = std::string(punct);
        i += punct.size();
        tokens.push_back(std::move(tok));
        matched = true;
        break;
      }
    }
    if (!matched) {
      return located_error(
          source, tok.loc,
          std::isprint(static_cast<unsigned char>(c))
              ? fmt::format("unexpected character '{}'", c)
              : fmt::format("unexpected byte 0x{:02x}", static_cast<unsigned char>(c)));
    }
  }
  Token end;
  end.kind = TokenKind::kEnd;
  end.loc = loc_at(i);
  tokens.push_back(std::move(end));
  return tokens;
}

}  // namespace planner::tdl
