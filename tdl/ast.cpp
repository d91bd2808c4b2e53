// Builders and printing for the TDL syntax tree.
#include "tdl/ast.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace planner::tdl {
namespace {

std::string format_double(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// Binding strength of binary operators: larger binds tighter.
int precedence(const Expr& e) {
  if (e.kind == ExprKind::kBinary) {
    const std::string& op = e.name;
    if (op == "or") return 1;
    if (op == "and") return 2;
    if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") return 4;
    if (op == "+" || op == "-") return 5;
    return 6;  // * / %
  }
  if (e.kind == ExprKind::kUnary) return e.name == "not" ? 3 : 7;
  return 8;
}

void print(const Expr& e, std::string& out);

void print_operand(const Expr& e, int min_prec, std::string& out) {
  if (precedence(e) < min_prec) {
    out += "(";
    print(e, out);
    out += ")";
  } else {
    print(e, out);
  }
}

void print_list(const std::vector<ExprPtr>& args, std::string& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out += ", ";
    print(*args[i], out);
  }
}

void print(const Expr& e, std::string& out) {
  switch (e.kind) {
    case ExprKind::kInt:
      out += std::to_string(e.int_value);
      return;
    case ExprKind::kFloat:
      out += format_double(e.float_value);
      return;
    case ExprKind::kString:
      out += "\"" + e.name + "\"";
      return;
    case ExprKind::kName:
      out += e.name;
      return;
    case ExprKind::kWhole:
      out += ":";
      return;
    case ExprKind::kGroup:
      out += e.name.empty() ? "..." : ".." + e.name;
      return;
    case ExprKind::kAccess:
      out += e.name + "[";
      print_list(e.args, out);
      out += "]";
      return;
    case ExprKind::kCall:
      out += e.name + "(";
      print_list(e.args, out);
      out += ")";
      return;
    case ExprKind::kList:
      out += "[";
      print_list(e.args, out);
      out += "]";
      return;
    case ExprKind::kReduce:
      out += e.name + "(";
      for (size_t i = 0; i < e.vars.size(); ++i) {
        out += (i ? ", " : "") + e.vars[i];
        if (i < e.var_extents.size() && e.var_extents[i])
          out += " < " + to_string(*e.var_extents[i]);
      }
      out += ": ";
      print(*e.args[0], out);
      out += ")";
      return;
    case ExprKind::kUnary:
      out += e.name == "not" ? "not " : e.name;
      print_operand(*e.args[0], precedence(e), out);
      return;
    case ExprKind::kBinary: {
      int p = precedence(e);
      // Left-associative: the right operand needs parentheses at equal precedence.
      print_operand(*e.args[0], p, out);
      out += " " + e.name + " ";
      print_operand(*e.args[1], p + 1, out);
      return;
    }
  }
}

}  // namespace

std::string attr_to_string(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_double(v); }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(const std::vector<int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ", "));
    }
    std::string operator()(const std::vector<double>& v) const {
      std::vector<std::string> parts;
      for (double d : v) parts.push_back(format_double(d));
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    std::string operator()(const std::vector<std::string>& v) const {
      std::vector<std::string> parts;
      for (const auto& s : v) parts.push_back("\"" + s + "\"");
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
  };
  return std::visit(Visitor{}, value);
}

void update_height(Expr& e) {
  int h = 0;
  for (const ExprPtr& a : e.args)
    if (a) h = std::max(h, a->height);
  for (const ExprPtr& a : e.var_extents)
    if (a) h = std::max(h, a->height);
  e.height = h + 1;
}

ExprPtr make_int(int64_t value, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::kInt;
  e->int_value = value;
  e->loc = loc;
  return e;
}

ExprPtr make_float(double value, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::kFloat;
  e->float_value = value;
  e->loc = loc;
  return e;
}

ExprPtr make_name(std::string name, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::kName;
  e->name = std::move(name);
  e->loc = loc;
  return e;
}

ExprPtr make_unary(std::string op, ExprPtr operand, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::kUnary;
  e->name = std::move(op);
  e->args = {std::move(operand)};
  e->loc = loc;
  update_height(*e);
  return e;
}

ExprPtr make_binary(std::string op, ExprPtr lhs, ExprPtr rhs, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::kBinary;
  e->name = std::move(op);
  e->args = {std::move(lhs), std::move(rhs)};
  e->loc = loc;
  update_height(*e);
  return e;
}

ExprPtr make_access(std::string tensor, std::vector<ExprPtr> indices, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::kAccess;
  e->name = std::move(tensor);
  e->args = std::move(indices);
  e->loc = loc;
  update_height(*e);
  return e;
}

ExprPtr make_call(std::string function, std::vector<ExprPtr> args, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::kCall;
  e->name = std::move(function);
  e->args = std::move(args);
  e->loc = loc;
  update_height(*e);
  return e;
}

std::string to_string(const Expr& expr) {
  std::string out;
  print(expr, out);
  return out;
}

bool is_size_name(std::string_view name) {
  return !name.empty() && std::isupper(static_cast<unsigned char>(name[0]));
}

const InputDecl* OpDef::find_input(std::string_view input) const {
  for (const auto& in : inputs)
    if (in.name == input) return &in;
  return nullptr;
}

const OutputDecl* OpDef::find_output(std::string_view output) const {
  for (const auto& out : outputs)
    if (out.name == output) return &out;
  return nullptr;
}

const AttrDecl* OpDef::find_attr(std::string_view attr) const {
  for (const auto& a : attrs)
    if (a.name == attr) return &a;
  return nullptr;
}

}  // namespace planner::tdl
