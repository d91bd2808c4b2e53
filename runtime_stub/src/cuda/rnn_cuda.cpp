// LSTM, GRU, RNN and their gradients on the device: the calls checked as the cpu backend checks
// them (rnn.h), then rnn_program.h with cuBLAS products and rnn.cu's element kernels, all on
// the rank's compute stream. The workspace is the context's scratch, grown on the first step
// and reused after; sequence lengths stay on the device (clamped to [0, T] there).
#include "../rnn.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"

namespace planner::rt::kernels {

namespace {

class CudaRnnDevice {
 public:
  explicit CudaRnnDevice(const KernelContext& ctx) : ctx_(ctx), stream_(cuda::context().stream) {}
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    gemm_f32(ctx_, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void run(RnnKernel k, const RnnStep& p, int64_t n) { cuda::launch_rnn(k, p, n, stream_); }
  void copy(float* dst, const float* src, int64_t n) {
    if (n > 0)
      PLANNER_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * 4, cudaMemcpyDeviceToDevice, stream_));
  }
  void zero(void* dst, int64_t bytes) {
    if (bytes > 0) PLANNER_CUDA_CHECK(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), stream_));
  }

 private:
  const KernelContext& ctx_;
  cudaStream_t stream_;
};

void run_device(const KernelContext& ctx, RnnCell cell, RnnOp op) {
  RnnCall call = parse_rnn_call(ctx, cell, op, false);
  const int64_t floats = rnn_workspace_floats(call.r, rnn_backward(op));
  call.ws = static_cast<float*>(cuda::context().temp[0].get(static_cast<size_t>(floats) * 4));
  CudaRnnDevice dev(ctx);
  if (rnn_backward(op))
    rnn_backward_program(dev, call);
  else
    rnn_forward_program(dev, call);
}

}  // namespace

void c_lstm(const KernelContext& ctx) {
  run_device(ctx, RnnCell::kLstm, RnnOp::kForward);
}
void c_gru(const KernelContext& ctx) {
  run_device(ctx, RnnCell::kGru, RnnOp::kForward);
}
void c_rnn(const KernelContext& ctx) {
  run_device(ctx, RnnCell::kRnn, RnnOp::kForward);
}
void c_lstm_grad_data(const KernelContext& ctx) {
  run_device(ctx, RnnCell::kLstm, RnnOp::kLstmGradData);
}
void c_gru_grad(const KernelContext& ctx) {
  run_device(ctx, RnnCell::kGru, RnnOp::kFusedGrad);
}
void c_rnn_grad(const KernelContext& ctx) {
  run_device(ctx, RnnCell::kRnn, RnnOp::kFusedGrad);
}

void c_lstm_grad_weights(const KernelContext& ctx) {
  const LstmWeightsCall c = parse_lstm_grad_weights(ctx);
  CudaRnnDevice dev(ctx);
  lstm_grad_weights_program(dev, c.r, c.X, c.Hs, c.h0, c.dG, c.dw, c.dr, c.db);
}

}  // namespace planner::rt::kernels
