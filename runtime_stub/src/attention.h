// What the Attention kernels take from a call, shared by the cpu kernels (attention.cpp) and the
// cuda ones (cuda/attention_cuda.cpp): the checks of every input, output and attribute, and the
// geometry and tensor pointers attention_math.h's bodies read.
#pragma once

#include "attention_math.h"
#include "kernel_util.h"

namespace planner::rt::kernels {

/// A checked call: its geometry and its tensors (delta unset).
struct AttentionCall {
  AttentionDims dims;
  AttentionTensors tensors;
};

/// ai.planner.Attention (Q, K, V, Mask?) -> (Y, LSE): Q [..., S, D], K [..., T, D],
/// V [..., T, E] with the same leading dimensions, Mask [S, T], all f32; Y [..., S, E] and
/// LSE [..., S] (each may be absent); attributes scale, causal, query_offset, key_offset.
AttentionCall attention_call(const KernelContext& ctx);

/// ai.planner.AttentionGrad (dY, Q, K, V, Y, LSE, Mask?) -> (dQ, dK, dV): Attention's checks
/// of Q, K, V and Mask, dY and Y [..., S, E], LSE [..., S]; dQ, dK, dV shaped like Q, K, V
/// (each may be absent).
AttentionCall attention_grad_call(const KernelContext& ctx);

}  // namespace planner::rt::kernels
