// The few things each backend does its own way: where tensor memory comes from, how a kernel is
// timed. backend_cpu.cpp and cuda/backend_cuda.cpp each define them (CMake picks one).
#pragma once

#include <cstddef>
#include <functional>

namespace planner::rt::backend {

/// A zero-filled block of at least `bytes` bytes (a unique pointer even for 0); host memory on
/// cpu, the current device's memory on cuda. Throws Error when out of memory.
void* allocate(size_t bytes);
/// Returns a block from allocate().
void deallocate(void* data, size_t bytes);
/// Sets `bytes` bytes at `data` (memory from allocate()) to `value`, queued on the rank's stream.
void fill_bytes(void* data, int value, size_t bytes);
/// Waits until the calling thread's queued work is done (one host sync; counted).
void synchronize();
/// A rank's two streams (0 compute, 1 communication) and events between them. cuda: separate
/// CUDA streams, so collectives overlap kernels; cpu: steps run as they are issued, which
/// already satisfies every ordering, so these do nothing.
/// Creates `n` events for the steps to come (before the first step: no creation in a step).
void prepare_events(size_t n);
/// Makes `stream` the calling thread's current stream (kernels, copies and collectives go there).
void use_stream(int stream);
/// Records event k on the current stream.
void record_event(size_t k);
/// Makes the current stream wait for event k.
void wait_event(size_t k);
/// Makes stream `waiter` wait for everything queued so far on stream `signaler`.
void stream_wait(int waiter, int signaler);
/// Runs `kernel` and returns the seconds it took, measured as the backend's device sees it
/// (steady_clock on cpu, cudaEvents on the rank's stream on cuda).
double time_kernel(const std::function<void()>& kernel);

}  // namespace planner::rt::backend

namespace planner::rt::detail {

/// Host copies of device tensors that never change (a program's constants), per thread: kernels
/// that read small parameter inputs on the host (cuda::host_view) use them instead of waiting
/// for a copy. The executor registers its constants; clear_host_mirrors forgets them.
void register_host_mirror(const void* device, const void* host);
/// The host copy of the tensor at `device`, or nullptr.
const void* host_mirror(const void* device);
void clear_host_mirrors();

}  // namespace planner::rt::detail
