// The cpu backend's memory, copies, kernel timing and World: host memory, steady_clock, ranks
// as threads of one process over a CpuWorld.
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "backend.h"
#include "collectives_internal.h"
#include "planner_rt/collectives.h"
#include "planner_rt/counters.h"
#include "planner_rt/profiler.h"
#include "planner_rt/tensor.h"

namespace planner::rt {

namespace backend {

void* allocate(size_t bytes) {
  // Round up so aligned_alloc's size rule holds and 0-byte tensors still get a unique block.
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);
  return p;
}

void deallocate(void* data, size_t) {
  std::free(data);
}

void fill_bytes(void* data, int value, size_t bytes) {
  std::memset(data, value, bytes);
}

void synchronize() {
  // Kernels ran as they were issued; the step's end is still the one point the host waits.
  detail::count_host_sync();
}

void prepare_events(size_t) {}
void use_stream(int) {}
void record_event(size_t) {}
void wait_event(size_t) {}
void stream_wait(int, int) {}

double time_kernel(const std::function<void()>& kernel) {
  const auto begin = std::chrono::steady_clock::now();
  kernel();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace backend

std::string device_name() {
  return cpu_device_name();
}

std::string_view backend_name() {
  return "cpu";
}

void copy_from_host(const Tensor& dst, const void* src) {
  if (dst.bytes()) std::memcpy(dst.data, src, dst.bytes());
}

void copy_to_host(const Tensor& src, void* dst) {
  if (src.bytes()) std::memcpy(dst, src.data, src.bytes());
}

namespace detail {

std::shared_ptr<DeviceComm> device_comm_for_cpu_world(int) {
  return nullptr;  // host memory: the rendezvous copies with memcpy
}

}  // namespace detail

struct World::Impl {
  std::unique_ptr<CpuWorld> world;
  std::vector<int> local;
  std::string description;
};

World::World(const WorldOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->world = std::make_unique<CpuWorld>(options.size, options.timeout);
  for (int r = 0; r < options.size; ++r) impl_->local.push_back(r);
  impl_->description = "cpu: " + std::to_string(options.size) +
                       " rank(s) as threads of one process, shared-memory collectives";
}

World::~World() = default;

int World::size() const {
  return impl_->world->size();
}

const std::vector<int>& World::local_ranks() const {
  return impl_->local;
}

int World::device_of(int) const {
  return -1;
}

const std::string& World::description() const {
  return impl_->description;
}

Communicator::Communicator(World& world, int rank) : Communicator(*world.impl_->world, rank) {}

}  // namespace planner::rt
