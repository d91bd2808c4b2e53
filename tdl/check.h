// Semantic checks of parsed TDL: names, scopes, ranks and affine indices, each with a location.
//
// API: `check_file(file)` returns the first problem as a located diagnostic (see
// tdl/source.h): unknown tensor, size, attribute or function; unbound index variable; an
// index variable bound twice; a wrong number of indices; a non-affine index (`A[i*j]`,
// `A[exp(i)]`, `A[B[i]]`); an unused reduction variable; bad input or output declarations.
// parse_file runs it; tools that build Files by hand may call it directly.
#pragma once

#include <string_view>

#include "support/expected.h"
#include "tdl/ast.h"

namespace planner::tdl {

/// Checks every definition of `file` (see the file comment for what is checked).
Expected<void> check_file(const File& file);

/// Unary value functions TDL knows (exp, tanh, ...): one argument each.
bool is_unary_function(std::string_view name);
/// Built-in remaps that instantiation expands from concrete shapes (reshape, concat, ...).
bool is_remap_function(std::string_view name);

/// The leftmost source position of an expression (where a reader sees it start).
SourceLoc start_loc(const Expr& expr);

}  // namespace planner::tdl
