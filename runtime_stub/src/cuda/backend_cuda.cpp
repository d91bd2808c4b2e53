// The cuda backend's memory, copies, kernel timing and per-thread device context.
#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "../backend.h"
#include "cuda_util.h"
#include "device_kernels.h"
#include "planner_rt/counters.h"
#include "planner_rt/profiler.h"

namespace planner::rt {

namespace cuda {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw Error(std::string(call) + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(call) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw Error(std::string(call) + ": " + cudnnGetErrorString(status));
}

void check_launch(const char* name) {
  check(cudaGetLastError(), (std::string("launching kernel ") + name).c_str());
}

DeviceScratch::~DeviceScratch() {
  if (data_) cudaFree(data_);  // no throwing from a destructor; a failure here is moot
}

void* DeviceScratch::get(size_t bytes) {
  int dev = 0;
  PLANNER_CUDA_CHECK(cudaGetDevice(&dev));
  if (data_ && size_ >= bytes && device_ == dev) return data_;
  if (data_) {
    // The old block may still be read by queued work: cudaFree waits for the device.
    PLANNER_CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    size_ = 0;
  }
  const size_t want = std::max<size_t>(bytes, 256);
  PLANNER_CUDA_CHECK(cudaMalloc(&data_, want));
  size_ = want;
  device_ = dev;
  return data_;
}

Context::~Context() {
  // Best effort at thread exit; errors cannot be reported from here.
  if (error) cudaFree(error);
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  if (join) cudaEventDestroy(join);
  if (cudnn) cudnnDestroy(cudnn);
  if (cublas) cublasDestroy(cublas);
  for (cudaStream_t s : streams)
    if (s) cudaStreamDestroy(s);
}

namespace {

std::unique_ptr<Context> make_context(int device) {
  auto c = std::make_unique<Context>();
  c->device = device;
  // A blocking stream: it orders with the legacy default stream (cudaMemcpy, cudaMemset).
  PLANNER_CUDA_CHECK(cudaStreamCreate(&c->streams[0]));
  PLANNER_CUDA_CHECK(cudaStreamCreate(&c->streams[1]));
  PLANNER_CUDA_CHECK(cudaEventCreateWithFlags(&c->join, cudaEventDisableTiming));
  c->stream = c->streams[0];
  PLANNER_CUDA_CHECK(cublasCreate(&c->cublas));
  PLANNER_CUDA_CHECK(cublasSetStream(c->cublas, c->stream));
  // Full fp32 (no TF32 tensor cores): results stay comparable with the cpu backend.
  PLANNER_CUDA_CHECK(cublasSetMathMode(c->cublas, CUBLAS_PEDANTIC_MATH));
  PLANNER_CUDA_CHECK(cudnnCreate(&c->cudnn));
  PLANNER_CUDA_CHECK(cudnnSetStream(c->cudnn, c->stream));
  PLANNER_CUDA_CHECK(cudaMalloc(&c->error, sizeof(int)));
  PLANNER_CUDA_CHECK(cudaMemsetAsync(c->error, 0, sizeof(int), c->stream));
  return c;
}

thread_local std::unique_ptr<Context> tls_context;

}  // namespace

Context& context() {
  int dev = 0;
  PLANNER_CUDA_CHECK(cudaGetDevice(&dev));
  if (!tls_context || tls_context->device != dev) {
    tls_context.reset();
    tls_context = make_context(dev);
  }
  return *tls_context;
}

void bind_device(int device) {
  PLANNER_CUDA_CHECK(cudaSetDevice(device));
  context();
}

namespace {
thread_local SyncWatch tls_watch;
}  // namespace

void set_sync_watch(SyncWatch watch) {
  tls_watch = std::move(watch);
}

void sync() {
  detail::count_host_sync();
  Context& ctx = context();
  int error = 0;
  PLANNER_CUDA_CHECK(
      cudaMemcpyAsync(&error, ctx.error, sizeof(int), cudaMemcpyDeviceToHost, ctx.stream));
  if (!tls_watch.poll) {
    PLANNER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  } else {
    // Poll, backing off to 1 ms, so an NCCL error or a silent peer ends the wait.
    const auto start = std::chrono::steady_clock::now();
    auto pause = std::chrono::microseconds(20);
    while (true) {
      const cudaError_t status = cudaStreamQuery(ctx.stream);
      if (status == cudaSuccess) break;
      if (status != cudaErrorNotReady) PLANNER_CUDA_CHECK(status);
      tls_watch.poll();
      if (std::chrono::steady_clock::now() - start > tls_watch.deadline) {
        if (tls_watch.abort) tls_watch.abort();
        throw Error("the device did not finish the queued work within " +
                    std::to_string(tls_watch.deadline.count()) +
                    " ms (a peer in a collective may have failed); communicators aborted");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
  if (error) {
    PLANNER_CUDA_CHECK(cudaMemsetAsync(ctx.error, 0, sizeof(int), ctx.stream));
    throw Error("a Gather or GatherGrad index was out of range on the device");
  }
}

std::vector<uint8_t> to_host_bytes(const Tensor& t) {
  std::vector<uint8_t> bytes(t.bytes());
  copy_to_host(t, bytes.data());
  return bytes;
}

Tensor host_view(const Tensor& t, std::vector<uint8_t>& storage) {
  // A program constant: its host copy, without waiting for the device.
  if (const void* host = detail::host_mirror(t.data))
    return Tensor(t.dtype, t.shape, const_cast<void*>(host));
  storage = to_host_bytes(t);
  return Tensor(t.dtype, t.shape, storage.data());
}

}  // namespace cuda

namespace backend {

void* allocate(size_t bytes) {
  cuda::Context& ctx = cuda::context();
  const size_t rounded = std::max<size_t>((bytes + 255) / 256 * 256, 256);
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, rounded);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error
    throw Error("cudaMalloc: out of device memory allocating " + std::to_string(bytes) +
                " bytes on GPU " + std::to_string(ctx.device) + " (" + cudaGetErrorString(status) +
                ")");
  }
  PLANNER_CUDA_CHECK(cudaMemsetAsync(p, 0, rounded, ctx.stream));
  detail::count_host_sync();
  PLANNER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  return p;
}

void deallocate(void* data, size_t) {
  // cudaFree waits for work still using the block.
  PLANNER_CUDA_CHECK(cudaFree(data));
}

void prepare_events(size_t n) {
  cuda::Context& ctx = cuda::context();
  while (ctx.events.size() < n) {
    cudaEvent_t e = nullptr;
    PLANNER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ctx.events.push_back(e);
  }
}

void use_stream(int stream) {
  cuda::Context& ctx = cuda::context();
  ctx.stream = ctx.streams[stream == 1 ? 1 : 0];
}

void record_event(size_t k) {
  cuda::Context& ctx = cuda::context();
  PLANNER_CUDA_CHECK(cudaEventRecord(ctx.events.at(k), ctx.stream));
}

void wait_event(size_t k) {
  cuda::Context& ctx = cuda::context();
  PLANNER_CUDA_CHECK(cudaStreamWaitEvent(ctx.stream, ctx.events.at(k), 0));
}

void stream_wait(int waiter, int signaler) {
  cuda::Context& ctx = cuda::context();
  PLANNER_CUDA_CHECK(cudaEventRecord(ctx.join, ctx.streams[signaler == 1 ? 1 : 0]));
  PLANNER_CUDA_CHECK(cudaStreamWaitEvent(ctx.streams[waiter == 1 ? 1 : 0], ctx.join, 0));
}

void fill_bytes(void* data, int value, size_t bytes) {
  PLANNER_CUDA_CHECK(cudaMemsetAsync(data, value, bytes, cuda::context().stream));
}

void synchronize() {
  cuda::sync();
}

double time_kernel(const std::function<void()>& kernel) {
  cuda::Context& ctx = cuda::context();
  cudaEvent_t begin = nullptr, end = nullptr;
  PLANNER_CUDA_CHECK(cudaEventCreate(&begin));
  PLANNER_CUDA_CHECK(cudaEventCreate(&end));
  float ms = 0;
  try {
    PLANNER_CUDA_CHECK(cudaEventRecord(begin, ctx.stream));
    kernel();
    PLANNER_CUDA_CHECK(cudaEventRecord(end, cuda::context().stream));
    detail::count_host_sync();
    PLANNER_CUDA_CHECK(cudaEventSynchronize(end));
    PLANNER_CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
  } catch (...) {
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    throw;
  }
  PLANNER_CUDA_CHECK(cudaEventDestroy(begin));
  PLANNER_CUDA_CHECK(cudaEventDestroy(end));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace backend

std::string_view backend_name() {
  return "cuda";
}

std::string device_name() {
  int dev = 0;
  PLANNER_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  PLANNER_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return prop.name;
}

void copy_from_host(const Tensor& dst, const void* src) {
  if (dst.bytes() == 0) return;
  cuda::Context& ctx = cuda::context();
  PLANNER_CUDA_CHECK(
      cudaMemcpyAsync(dst.data, src, dst.bytes(), cudaMemcpyHostToDevice, ctx.stream));
  detail::count_host_sync();
  PLANNER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
}

void copy_to_host(const Tensor& src, void* dst) {
  if (src.bytes() == 0) return;
  cuda::Context& ctx = cuda::context();
  PLANNER_CUDA_CHECK(
      cudaMemcpyAsync(dst, src.data, src.bytes(), cudaMemcpyDeviceToHost, ctx.stream));
  detail::count_host_sync();
  PLANNER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
}

}  // namespace planner::rt
