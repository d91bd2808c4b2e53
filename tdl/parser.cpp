// Recursive-descent parser for TDL (grammar: docs/tdl.md).
#include "tdl/parser.h"

#include <fmt/format.h>

#include "tdl/check.h"
#include "tdl/lexer.h"

namespace planner::tdl {
namespace {

bool is_reducer(std::string_view name) {
  return name == "sum" || name == "max" || name == "min" || name == "prod";
}

bool is_comparison(const Token& t) {
  return t.is("==") || t.is("!=") || t.is("<") || t.is("<=") || t.is(">") || t.is(">=");
}

// Counts one level of recursion for as long as it lives.
class DepthGuard {
 public:
  explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  /// True once the recursion is deeper than any real file needs (and the stack can hold).
  bool too_deep() const { return depth_ > kMaxDepth; }
  static constexpr int kMaxDepth = 200;

 private:
  int& depth_;
};

class Parser {
 public:
  Parser(const Source& source, std::vector<Token> tokens)
      : source_(source), tokens_(std::move(tokens)) {}

  Expected<std::vector<OpDef>> parse_ops() {
    std::vector<OpDef> ops;
    while (peek().kind != TokenKind::kEnd) {
      if (!peek().is_ident("op"))
        return error_here(fmt::format("expected 'op', got {}", describe(peek())));
      PLANNER_TRY_ASSIGN(OpDef op, parse_op());
      ops.push_back(std::move(op));
    }
    return ops;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool accept(std::string_view punct) {
    if (!peek().is(punct)) return false;
    next();
    return true;
  }
  Error error_at(SourceLoc loc, std::string_view message) const {
    return located_error(source_, loc, message);
  }
  Error error_here(std::string_view message) const { return error_at(peek().loc, message); }
  Expected<void> expect(std::string_view punct, std::string_view context) {
    if (accept(punct)) return ok();
    return error_here(fmt::format("expected '{}' {}, got {}", punct, context, describe(peek())));
  }
  Expected<Token> expect_ident(std::string_view what) {
    if (peek().kind != TokenKind::kIdent)
      return error_here(fmt::format("expected {}, got {}", what, describe(peek())));
    return next();
  }

  Expected<OpDef> parse_op() {
    OpDef op;
    op.loc = next().loc;  // 'op'
    PLANNER_TRY_ASSIGN(Token first, expect_ident("an operator name"));
    op.name = first.text;
    while (peek().is(".") && peek(1).kind == TokenKind::kIdent) {
      next();
      op.name += "." + next().text;
    }
    size_t dot = op.name.rfind('.');
    op.domain = dot == std::string::npos ? "" : op.name.substr(0, dot);
    op.op_type = dot == std::string::npos ? op.name : op.name.substr(dot + 1);

    if (accept("<")) {
      do {
        AttrDecl attr;
        attr.loc = peek().loc;
        PLANNER_TRY_ASSIGN(Token name, expect_ident("an attribute name"));
        attr.name = name.text;
        if (accept("=")) {
          PLANNER_TRY_ASSIGN(AttrValue value, parse_literal());
          attr.default_value = std::move(value);
        }
        op.attrs.push_back(std::move(attr));
      } while (accept(","));
      PLANNER_TRY(expect(">", "after the attributes"));
    }
    if (peek().is_ident("when")) {
      next();
      in_guard_ = true;
      auto guard = parse_expr();
      in_guard_ = false;
      if (!guard) return guard.error();
      op.guard = *guard;
    }
    PLANNER_TRY(expect("(", "before the inputs"));
    if (!peek().is(")")) {
      do {
        PLANNER_TRY_ASSIGN(InputDecl input, parse_input());
        op.inputs.push_back(std::move(input));
      } while (accept(","));
    }
    PLANNER_TRY(expect(")", "after the inputs"));
    PLANNER_TRY(expect("->", "before the outputs"));
    if (accept("(")) {
      do {
        PLANNER_TRY_ASSIGN(OutputDecl output, parse_output());
        op.outputs.push_back(std::move(output));
      } while (accept(","));
      PLANNER_TRY(expect(")", "after the outputs"));
    } else {
      PLANNER_TRY_ASSIGN(OutputDecl output, parse_output());
      op.outputs.push_back(std::move(output));
    }
    PLANNER_TRY(expect("=", "before the body"));
    if (op.outputs.size() > 1) {
      SourceLoc open = peek().loc;
      PLANNER_TRY(
          expect("(", fmt::format("before the {} bodies of the outputs", op.outputs.size())));
      do {
        PLANNER_TRY_ASSIGN(ExprPtr body, parse_expr());
        op.bodies.push_back(std::move(body));
      } while (accept(","));
      PLANNER_TRY(expect(")", "after the bodies"));
      if (op.bodies.size() != op.outputs.size()) {
        return error_at(open, fmt::format("operator '{}' has {} outputs but {} bodies", op.name,
                                          op.outputs.size(), op.bodies.size()));
      }
    } else {
      PLANNER_TRY_ASSIGN(ExprPtr body, parse_expr());
      op.bodies.push_back(std::move(body));
    }
    return op;
  }

  Expected<AttrValue> parse_literal() {
    DepthGuard guard(depth_);
    if (guard.too_deep())
      return error_here(fmt::format("list is nested too deeply (more than {} levels)", kMaxDepth));
    const Token t = peek();
    if (t.is("[")) {
      next();
      std::vector<AttrValue> items;
      if (!peek().is("]")) {
        do {
          PLANNER_TRY_ASSIGN(AttrValue item, parse_literal());
          items.push_back(std::move(item));
        } while (accept(","));
      }
      PLANNER_TRY(expect("]", "after the list"));
      bool all_int = true, all_number = true, all_string = true;
      for (const auto& item : items) {
        all_int = all_int && std::holds_alternative<int64_t>(item);
        all_number = all_number && (std::holds_alternative<int64_t>(item) ||
                                    std::holds_alternative<double>(item));
        all_string = all_string && std::holds_alternative<std::string>(item);
      }
      if (all_int) {
        std::vector<int64_t> v;
        for (const auto& item : items) v.push_back(std::get<int64_t>(item));
        return AttrValue(v);
      }
      if (all_number) {
        std::vector<double> v;
        for (const auto& item : items)
          v.push_back(std::holds_alternative<double>(item)
                          ? std::get<double>(item)
                          : static_cast<double>(std::get<int64_t>(item)));
        return AttrValue(v);
      }
      if (all_string) {
        std::vector<std::string> v;
        for (const auto& item : items) v.push_back(std::get<std::string>(item));
        return AttrValue(v);
      }
      return error_at(t.loc, "a list literal must hold only numbers or only strings");
    }
    bool negative = false;
    if (peek().is("-")) {
      next();
      negative = true;
    }
    const Token& v = next();
    if (v.kind == TokenKind::kInt) return AttrValue(negative ? -v.int_value : v.int_value);
    if (v.kind == TokenKind::kFloat) return AttrValue(negative ? -v.float_value : v.float_value);
    if (v.kind == TokenKind::kString && !negative) return AttrValue(v.text);
    return error_at(
        v.loc, fmt::format("expected a literal (number, string or list), got {}", describe(v)));
  }

  Expected<DimDecl> parse_dim_decl() {
    DimDecl dim;
    dim.loc = peek().loc;
    if (accept("...")) {
      dim.kind = DimDecl::Kind::kGroup;
      return dim;
    }
    if (accept("..")) {
      PLANNER_TRY_ASSIGN(Token name, expect_ident("a group name after '..'"));
      dim.kind = DimDecl::Kind::kGroup;
      dim.name = name.text;
      return dim;
    }
    PLANNER_TRY_ASSIGN(ExprPtr e, parse_additive());
    dim.expr = e;
    if (e->kind == ExprKind::kName) {
      dim.kind = DimDecl::Kind::kSize;
      dim.name = e->name;
      if (accept("@")) {
        PLANNER_TRY_ASSIGN(Token axis, expect_ident("an attribute name after '@'"));
        dim.axis_attr = axis.text;
      }
    } else if (e->kind == ExprKind::kInt) {
      dim.kind = DimDecl::Kind::kInt;
      dim.value = e->int_value;
    } else {
      dim.kind = DimDecl::Kind::kExpr;
    }
    return dim;
  }

  Expected<std::vector<DimDecl>> parse_dim_decls() {
    std::vector<DimDecl> dims;
    PLANNER_TRY(expect("[", "before the dimensions"));
    if (!peek().is("]")) {
      do {
        PLANNER_TRY_ASSIGN(DimDecl dim, parse_dim_decl());
        dims.push_back(std::move(dim));
      } while (accept(","));
    }
    PLANNER_TRY(expect("]", "after the dimensions"));
    return dims;
  }

  Expected<InputDecl> parse_input() {
    InputDecl input;
    input.loc = peek().loc;
    PLANNER_TRY_ASSIGN(Token name, expect_ident("an input name"));
    input.name = name.text;
    input.variadic = accept("*");
    PLANNER_TRY_ASSIGN(input.dims, parse_dim_decls());
    if (peek().is_ident("as")) {
      next();
      input.has_view = true;
      PLANNER_TRY_ASSIGN(input.view, parse_dim_decls());
    }
    input.optional = accept("?");
    return input;
  }

  Expected<OutputDecl> parse_output() {
    OutputDecl output;
    output.loc = peek().loc;
    PLANNER_TRY_ASSIGN(Token name, expect_ident("an output name"));
    output.name = name.text;
    output.variadic = accept("*");
    PLANNER_TRY(expect("[", "before the output's index variables"));
    if (!peek().is("]")) {
      do {
        OutDim dim;
        dim.loc = peek().loc;
        if (accept("...")) {
          dim.is_group = true;
        } else if (accept("..")) {
          PLANNER_TRY_ASSIGN(Token group, expect_ident("a group name after '..'"));
          dim.is_group = true;
          dim.name = group.text;
        } else {
          PLANNER_TRY_ASSIGN(Token var, expect_ident("an index variable"));
          dim.name = var.text;
          if (accept(":")) {
            PLANNER_TRY_ASSIGN(dim.extent, parse_expr());
          }
        }
        output.dims.push_back(std::move(dim));
      } while (accept(","));
    }
    PLANNER_TRY(expect("]", "after the output's index variables"));
    return output;
  }

  Expected<ExprPtr> parse_expr() { return parse_or(); }

  Expected<ExprPtr> parse_or() {
    PLANNER_TRY_ASSIGN(ExprPtr lhs, parse_and());
    while (peek().is_ident("or")) {
      SourceLoc loc = next().loc;
      PLANNER_TRY_ASSIGN(ExprPtr rhs, parse_and());
      PLANNER_TRY_ASSIGN(lhs, bounded(make_binary("or", lhs, rhs, loc)));
    }
    return lhs;
  }

  Expected<ExprPtr> parse_and() {
    PLANNER_TRY_ASSIGN(ExprPtr lhs, parse_not());
    while (peek().is_ident("and")) {
      SourceLoc loc = next().loc;
      PLANNER_TRY_ASSIGN(ExprPtr rhs, parse_not());
      PLANNER_TRY_ASSIGN(lhs, bounded(make_binary("and", lhs, rhs, loc)));
    }
    return lhs;
  }

  Expected<ExprPtr> parse_not() {
    if (peek().is_ident("not")) {
      DepthGuard guard(depth_);
      if (guard.too_deep()) return nested_too_deeply();
      SourceLoc loc = next().loc;
      PLANNER_TRY_ASSIGN(ExprPtr operand, parse_not());
      return bounded(make_unary("not", operand, loc));
    }
    return parse_comparison();
  }

  Expected<ExprPtr> parse_comparison() {
    PLANNER_TRY_ASSIGN(ExprPtr lhs, parse_additive());
    if (is_comparison(peek())) {
      const Token& op = next();
      std::string name = op.text;
      SourceLoc loc = op.loc;
      PLANNER_TRY_ASSIGN(ExprPtr rhs, parse_additive());
      if (is_comparison(peek())) return error_here("comparisons cannot be chained; use 'and'");
      return bounded(make_binary(name, lhs, rhs, loc));
    }
    return lhs;
  }

  Expected<ExprPtr> parse_additive() {
    PLANNER_TRY_ASSIGN(ExprPtr lhs, parse_multiplicative());
    while (peek().is("+") || peek().is("-")) {
      const Token& op = next();
      std::string name = op.text;
      SourceLoc loc = op.loc;
      PLANNER_TRY_ASSIGN(ExprPtr rhs, parse_multiplicative());
      PLANNER_TRY_ASSIGN(lhs, bounded(make_binary(name, lhs, rhs, loc)));
    }
    return lhs;
  }

  Expected<ExprPtr> parse_multiplicative() {
    PLANNER_TRY_ASSIGN(ExprPtr lhs, parse_unary());
    while (peek().is("*") || peek().is("/") || peek().is("%")) {
      // `X*` followed by ',' or ')' marks a variadic argument (`concat(X*, axis)`), not a product.
      if (peek().is("*") && (peek(1).is(",") || peek(1).is(")"))) break;
      const Token& op = next();
      std::string name = op.text;
      SourceLoc loc = op.loc;
      PLANNER_TRY_ASSIGN(ExprPtr rhs, parse_unary());
      PLANNER_TRY_ASSIGN(lhs, bounded(make_binary(name, lhs, rhs, loc)));
    }
    return lhs;
  }

  Expected<ExprPtr> parse_unary() {
    // Bounded nesting keeps hostile input from overflowing the stack.
    DepthGuard guard(depth_);
    if (guard.too_deep()) return nested_too_deeply();
    PLANNER_TRY_ASSIGN(ExprPtr e, parse_unary_inner());
    return bounded(std::move(e));
  }

  Error nested_too_deeply() const {
    return error_here(
        fmt::format("expression is nested too deeply (more than {} levels)", kMaxDepth));
  }

  // The tree itself must stay shallow too: `X + X + ...` parses in a loop, yet each term adds a
  // level that later walks (checks, printing, instantiation, destruction) recurse through.
  Expected<ExprPtr> bounded(ExprPtr e) const {
    if (e->height <= kMaxExprHeight) return e;
    return error_at(e->loc, fmt::format("expression is nested too deeply (more than {} levels)",
                                        kMaxExprHeight));
  }

  Expected<ExprPtr> parse_unary_inner() {
    if (peek().is("-")) {
      SourceLoc loc = next().loc;
      PLANNER_TRY_ASSIGN(ExprPtr operand, parse_unary());
      if (operand->kind == ExprKind::kInt) return make_int(-operand->int_value, loc);
      if (operand->kind == ExprKind::kFloat) return make_float(-operand->float_value, loc);
      return make_unary("-", operand, loc);  // height checked by parse_unary
    }
    return parse_primary();
  }

  Expected<ExprPtr> parse_index() {
    SourceLoc loc = peek().loc;
    if (accept(":")) {
      auto e = std::make_shared<Expr>();
      e->kind = ExprKind::kWhole;
      e->loc = loc;
      return ExprPtr(e);
    }
    if (accept("...")) {
      auto e = std::make_shared<Expr>();
      e->kind = ExprKind::kGroup;
      e->loc = loc;
      return ExprPtr(e);
    }
    if (accept("..")) {
      PLANNER_TRY_ASSIGN(Token group, expect_ident("a group name after '..'"));
      auto e = std::make_shared<Expr>();
      e->kind = ExprKind::kGroup;
      e->name = group.text;
      e->loc = loc;
      return ExprPtr(e);
    }
    return parse_expr();
  }

  Expected<ExprPtr> parse_primary() {
    const Token& t = peek();
    SourceLoc loc = t.loc;
    switch (t.kind) {
      case TokenKind::kInt:
        next();
        return make_int(t.int_value, loc);
      case TokenKind::kFloat:
        next();
        return make_float(t.float_value, loc);
      case TokenKind::kString: {
        auto e = std::make_shared<Expr>();
        e->kind = ExprKind::kString;
        e->name = next().text;
        e->loc = loc;
        return ExprPtr(e);
      }
      case TokenKind::kEnd:
        return error_here("expected an expression, got end of input");
      case TokenKind::kPunct:
        break;
      case TokenKind::kIdent:
        return parse_identifier();
    }
    if (accept("(")) {
      PLANNER_TRY_ASSIGN(ExprPtr inner, parse_expr());
      PLANNER_TRY(expect(")", "to close '('"));
      return inner;
    }
    if (accept("[")) {
      auto e = std::make_shared<Expr>();
      e->kind = ExprKind::kList;
      e->loc = loc;
      if (!peek().is("]")) {
        do {
          PLANNER_TRY_ASSIGN(ExprPtr item, parse_expr());
          e->args.push_back(item);
        } while (accept(","));
      }
      PLANNER_TRY(expect("]", "after the list"));
      update_height(*e);
      return ExprPtr(e);
    }
    return error_here(fmt::format("expected an expression, got {}", describe(t)));
  }

  Expected<ExprPtr> parse_identifier() {
    const Token& t = next();
    std::string name = t.text;
    SourceLoc loc = t.loc;
    static const char* const kKeywords[] = {"op", "when", "as", "and", "or", "not"};
    for (const char* k : kKeywords)
      if (name == k)
        return error_at(loc, fmt::format("expected an expression, got keyword '{}'", name));
    if (peek().is("(") && is_reducer(name) && peek(1).kind == TokenKind::kIdent &&
        (peek(2).is(":") || peek(2).is(",") || peek(2).is("<"))) {
      next();  // '('
      auto e = std::make_shared<Expr>();
      e->kind = ExprKind::kReduce;
      e->name = name;
      e->loc = loc;
      do {
        PLANNER_TRY_ASSIGN(Token var, expect_ident("a reduction variable"));
        e->vars.push_back(var.text);
        e->var_locs.push_back(var.loc);
        ExprPtr extent;
        if (accept("<")) {
          PLANNER_TRY_ASSIGN(extent, parse_additive());
        }
        e->var_extents.push_back(extent);
      } while (accept(","));
      PLANNER_TRY(expect(":", "after the reduction variables"));
      PLANNER_TRY_ASSIGN(ExprPtr body, parse_expr());
      e->args.push_back(body);
      PLANNER_TRY(expect(")", "to close the reduction"));
      update_height(*e);
      return ExprPtr(e);
    }
    // In a `when` guard only rank(...) and len(...) are calls: a bare attribute name at the
    // end of a guard is followed by the '(' that opens the inputs.
    bool call_allowed = !in_guard_ || name == "rank" || name == "len";
    if (peek().is("(") && call_allowed) {
      next();
      std::vector<ExprPtr> args;
      if (!peek().is(")")) {
        do {
          PLANNER_TRY_ASSIGN(ExprPtr arg, parse_index());
          if (arg->kind == ExprKind::kName && peek().is("*")) next();  // variadic marker `X*`
          args.push_back(arg);
        } while (accept(","));
      }
      PLANNER_TRY(expect(")", fmt::format("to close the call to '{}'", name)));
      return make_call(name, std::move(args), loc);
    }
    if (peek().is("[")) {
      next();
      std::vector<ExprPtr> indices;
      if (!peek().is("]")) {
        do {
          PLANNER_TRY_ASSIGN(ExprPtr index, parse_index());
          indices.push_back(index);
        } while (accept(","));
      }
      PLANNER_TRY(expect("]", fmt::format("after the indices of '{}'", name)));
      return make_access(name, std::move(indices), loc);
    }
    return make_name(name, loc);
  }

  const Source& source_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool in_guard_ = false;
  int depth_ = 0;  ///< recursion depth of the descent, bounded by DepthGuard
  static constexpr int kMaxDepth = DepthGuard::kMaxDepth;
};

}  // namespace

Expected<File> parse_file_unchecked(std::string_view text, std::string source_name) {
  // The lexer holds every token at once: bounding the text bounds memory and time (a hostile
  // 50 MB line would otherwise take gigabytes). The whole operator library is under 100 KiB.
  if (text.size() > kMaxSourceBytes)
    return make_error("{}: error: file is {} bytes; TDL files are limited to {} bytes (1 MiB)",
                      source_name, text.size(), kMaxSourceBytes);
  auto source = std::make_shared<Source>();
  source->name = std::move(source_name);
  source->text = std::string(text);
  PLANNER_TRY_ASSIGN(std::vector<Token> tokens, tokenize(*source));
  Parser parser(*source, std::move(tokens));
  PLANNER_TRY_ASSIGN(std::vector<OpDef> ops, parser.parse_ops());
  File file;
  file.source = source;
  file.ops = std::move(ops);
  return file;
}

Expected<File> parse_file(std::string_view text, std::string source_name) {
  PLANNER_TRY_ASSIGN(File file, parse_file_unchecked(text, std::move(source_name)));
  PLANNER_TRY(check_file(file));
  return file;
}

}  // namespace planner::tdl
