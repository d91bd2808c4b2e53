// Element types, shapes, the counting allocator and owning tensors.
#include "planner_rt/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "backend.h"

namespace planner::rt {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kUndefined:
      return 0;
    case DType::kFloat32:
      return 4;
    case DType::kUInt8:
      return 1;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kUndefined:
      return "none";
    case DType::kFloat32:
      return "f32";
    case DType::kUInt8:
      return "u8";
    case DType::kInt32:
      return "i32";
    case DType::kInt64:
      return "i64";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "f16";
    case DType::kBFloat16:
      return "bf16";
  }
  return "?";
}

DType dtype_from_name(std::string_view name) {
  for (DType d : {DType::kFloat32, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kBool,
                  DType::kFloat16, DType::kBFloat16})
    if (dtype_name(d) == name) return d;
  throw Error("unknown element type '" + std::string(name) + "'");
}

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

namespace detail {
void throw_dtype_mismatch(DType have, DType want) {
  throw Error("tensor of type " + std::string(dtype_name(have)) + " used as " +
              std::string(dtype_name(want)));
}
}  // namespace detail

void* Allocator::allocate(size_t bytes) {
  void* p = backend::allocate(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  current_ += static_cast<int64_t>(bytes);
  if (current_ > peak_) peak_ = current_;
  ++allocations_;
  return p;
}

void Allocator::deallocate(void* data, size_t bytes) {
  if (!data) return;
  backend::deallocate(data, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  current_ -= static_cast<int64_t>(bytes);
}

int64_t Allocator::current_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

int64_t Allocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

int64_t Allocator::allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = current_;
}

TensorBuffer::TensorBuffer(Allocator& allocator, DType dtype, Shape shape)
    : allocator_(&allocator) {
  if (dtype == DType::kUndefined) throw Error("cannot allocate a tensor of undefined type");
  for (int64_t d : shape)
    if (d < 0) throw Error("cannot allocate a tensor of shape " + shape_to_string(shape));
  view_.dtype = dtype;
  view_.shape = std::move(shape);
  view_.data = allocator.allocate(view_.bytes());
}

TensorBuffer::TensorBuffer(TensorBuffer&& other) noexcept
    : allocator_(other.allocator_), view_(std::move(other.view_)) {
  other.allocator_ = nullptr;
  other.view_ = Tensor();
}

TensorBuffer& TensorBuffer::operator=(TensorBuffer&& other) noexcept {
  if (this != &other) {
    release();
    allocator_ = other.allocator_;
    view_ = std::move(other.view_);
    other.allocator_ = nullptr;
    other.view_ = Tensor();
  }
  return *this;
}

TensorBuffer::~TensorBuffer() {
  release();
}

void TensorBuffer::release() {
  if (allocator_ && view_.data) allocator_->deallocate(view_.data, view_.bytes());
  allocator_ = nullptr;
  view_ = Tensor();
}

}  // namespace planner::rt
