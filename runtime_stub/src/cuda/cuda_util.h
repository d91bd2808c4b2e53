// Host-side helpers of the cuda backend: return-code checks that throw Error naming the call,
// the per-thread device context (stream, cuBLAS and cuDNN handles, workspace), and small
// device buffers.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "planner_rt/tensor.h"

namespace planner::rt::cuda {

/// Throws Error "<call>: <CUDA error string>" unless `status` is cudaSuccess.
void check(cudaError_t status, const char* call);
/// Throws Error "<call>: cuBLAS status N" unless `status` is CUBLAS_STATUS_SUCCESS.
void check(cublasStatus_t status, const char* call);
/// Throws Error "<call>: <cuDNN error string>" unless `status` is CUDNN_STATUS_SUCCESS.
void check(cudnnStatus_t status, const char* call);

/// Checks a CUDA, cuBLAS or cuDNN call; the message names the call as written.
#define PLANNER_CUDA_CHECK(call) ::planner::rt::cuda::check((call), #call)
/// Checks the launch of the kernel just queued.
#define PLANNER_CUDA_CHECK_LAUNCH(name) \
  ::planner::rt::cuda::check(cudaGetLastError(), "launching kernel " name)

/// A device buffer owned by one thread's context, grown on demand (workspaces, scratch).
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch();
  /// At least `bytes` bytes on the current device (contents undefined); waits for the
  /// thread's stream before replacing a smaller block.
  void* get(size_t bytes);

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  int device_ = -1;
};

/// What one thread (one rank) uses to run kernels: created on first use on the thread's current
/// device. Every kernel, copy and library call of the thread goes to `stream`, so one rank's
/// work runs in order and ranks sharing a GPU run concurrently.
struct Context {
  int device = 0;
  cudaStream_t stream = nullptr;    ///< the current stream: one of `streams`
  cudaStream_t streams[2] = {};     ///< compute (cuBLAS and cuDNN are bound to it), communication
  std::vector<cudaEvent_t> events;  ///< the executor's step events (backend::prepare_events)
  cudaEvent_t join = nullptr;       ///< backend::stream_wait's event
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  DeviceScratch workspace;  ///< cuDNN workspaces
  DeviceScratch temp[2];    ///< kernels' temporaries (reduction statistics, packed pieces)
  /// A device word kernels set when they meet bad data they cannot report themselves (a
  /// Gather index out of range); sync() reads it, throws, and clears it.
  int* error = nullptr;
  ~Context();
};

/// The calling thread's context; re-created when the thread's current device changed.
Context& context();

/// Makes `device` current in the calling thread (and its context that device's).
void bind_device(int device);

/// Waits for the calling thread's queued work. Where a watch is set (a rank with NCCL
/// communicators), it waits by polling: every poll runs the watch (which throws on an NCCL
/// asynchronous error, after aborting the rank's communicators), and past the deadline it aborts
/// them and throws, so one failed rank ends every rank with a message instead of a hang.
void sync();

/// What sync() polls while it waits, and how long it waits at most (per thread).
struct SyncWatch {
  std::function<void()> poll;   ///< throws Error on a failure it detects
  std::function<void()> abort;  ///< called once before sync() throws on the deadline
  std::chrono::milliseconds deadline{120000};
};
/// Sets (or, with an empty poll, clears) the calling thread's watch.
void set_sync_watch(SyncWatch watch);

/// Copies n values of a small device tensor (axes, scalars) to the host, waiting for it (no
/// wait where the tensor is a program constant with a host copy, planner_rt's host mirror).
std::vector<uint8_t> to_host_bytes(const Tensor& t);
/// A host view (data in `storage`) of device tensor `t`, for cpu helpers that read values.
Tensor host_view(const Tensor& t, std::vector<uint8_t>& storage);

}  // namespace planner::rt::cuda
