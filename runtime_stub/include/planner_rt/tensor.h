// Tensors for the runtime: element types, shapes, non-owning views, and the per-rank allocator.
//
// The launcher owns every buffer through a rank's Allocator (so current and peak bytes are
// known) and hands kernels and collectives Tensor views: a dtype, a static shape and a pointer.
// Where the data lives depends on the backend: host memory (cpu) or the rank's GPU (cuda);
// copy_from_host/copy_to_host move data between a host array and a tensor on either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace planner::rt {

/// The error every runtime failure caused by its inputs raises (shape mismatch, unknown op,
/// collective mismatch or timeout). what() is one line, lowercase, no trailing period; the
/// launcher prints it as "error: <what>" and exits non-zero.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Element type. Values match ONNX's TensorProto.DataType, like the planner's ir::DType, so a
/// generated launcher passes the codes through unchanged. kUndefined marks an absent tensor.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kBFloat16 = 16,
};

/// Bytes per element (0 for kUndefined).
size_t dtype_size(DType dtype);
/// Short name as in plan and costs files: f32, u8, i32, i64, bool, f16, bf16 ("none" for
/// kUndefined).
std::string_view dtype_name(DType dtype);
/// Parses a short name; throws Error for an unknown one.
DType dtype_from_name(std::string_view name);

/// A static shape; {} is a scalar.
using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for a scalar).
int64_t num_elements(const Shape& shape);
/// Text form "[2,3,4]" used in every message.
std::string shape_to_string(const Shape& shape);

/// A non-owning view of a dense, row-major tensor. Copying a view copies the pointer, never
/// the data. A default-constructed view is absent (an omitted optional input or output).
struct Tensor {
  DType dtype = DType::kUndefined;
  Shape shape;
  void* data = nullptr;

  Tensor() = default;
  /// A view of `data` holding num_elements(shape) elements of `dtype`.
  Tensor(DType dtype, Shape shape, void* data)
      : dtype(dtype), shape(std::move(shape)), data(data) {}

  /// False for an omitted optional tensor.
  bool present() const { return dtype != DType::kUndefined; }
  /// Whether the elements are 16-bit floats (f16 or bf16), stored as raw bits.
  bool is_half() const { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }
  /// Number of dimensions.
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// Number of elements.
  int64_t numel() const { return num_elements(shape); }
  /// Size of the data in bytes.
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }

  /// Typed element pointer. Precondition (checked): T matches dtype.
  template <typename T>
  T* as() const;
};

/// A per-rank allocator: zero-filled blocks, counting the bytes in use now and at peak so the
/// launcher can print peak memory per rank. cpu backend: 64-byte aligned blocks from the heap;
/// cuda backend: device memory from cudaMalloc on the calling thread's current device (the
/// rank's GPU once its Communicator exists), zero-filled with cudaMemset. Thread-safe, though
/// each rank normally has its own.
class Allocator {
 public:
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  /// A zero-filled block of `bytes` bytes (a valid unique pointer even for 0 bytes).
  void* allocate(size_t bytes);
  /// Returns a block; `bytes` must be the size it was allocated with.
  void deallocate(void* data, size_t bytes);
  /// Bytes allocated and not yet returned.
  int64_t current_bytes() const;
  /// The most bytes ever allocated at once since construction or reset_peak().
  int64_t peak_bytes() const;
  /// Sets the peak to the current value (to measure one step).
  void reset_peak();
  /// Blocks allocated since construction (the launcher reports those of each step).
  int64_t allocations() const;

 private:
  mutable std::mutex mutex_;
  int64_t current_ = 0;
  int64_t peak_ = 0;
  int64_t allocations_ = 0;
};

/// An owning tensor: its block comes from (and returns to) an Allocator. Move-only.
class TensorBuffer {
 public:
  TensorBuffer() = default;
  /// Allocates a zero-filled tensor of `dtype` and `shape` from `allocator`.
  TensorBuffer(Allocator& allocator, DType dtype, Shape shape);
  TensorBuffer(TensorBuffer&& other) noexcept;
  TensorBuffer& operator=(TensorBuffer&& other) noexcept;
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;
  ~TensorBuffer();

  /// The view kernels and collectives take.
  const Tensor& view() const { return view_; }
  /// Typed element pointer (see Tensor::as).
  template <typename T>
  T* as() const {
    return view_.as<T>();
  }

 private:
  void release();
  Allocator* allocator_ = nullptr;
  Tensor view_;
};

/// Copies dst.bytes() bytes from the host array `src` into tensor `dst` (a memcpy on the cpu
/// backend; a host-to-device copy on cuda, finished before returning). Launchers initialise on
/// the host (fill_uniform into a host vector) and copy. Precondition: src holds dst.bytes().
void copy_from_host(const Tensor& dst, const void* src);
/// Copies tensor `src` into the host array `dst` (src.bytes() bytes), finished before
/// returning; on cuda it first waits for the kernels the calling thread queued.
void copy_to_host(const Tensor& src, void* dst);

/// The backend this library was built with: "cpu" or "cuda".
std::string_view backend_name();

namespace detail {
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::kUInt8;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::kBool;
}
template <>
constexpr DType dtype_of<uint16_t>() {
  return DType::kFloat16;
}
[[noreturn]] void throw_dtype_mismatch(DType have, DType want);
}  // namespace detail

template <typename T>
T* Tensor::as() const {
  constexpr DType want = detail::dtype_of<T>();
  if (dtype != want) detail::throw_dtype_mismatch(dtype, want);
  return static_cast<T*>(data);
}

}  // namespace planner::rt
