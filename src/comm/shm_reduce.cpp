// reduce_rows (shm_reduce.h): a block of elements at a time in an
// accumulator array, so the loops vectorise (this file is compiled with -O3).
#include "src/comm/shm_reduce.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <algorithm>

namespace paisoar::comm::detail {
namespace {

using Op = ::c10d::ReduceOp::RedOpType;

constexpr int64_t kBlock = 512;

template <typename T> struct AccOf { using type = T; };
template <> struct AccOf<c10::Half> { using type = float; };
template <> struct AccOf<c10::BFloat16> { using type = float; };
template <> struct AccOf<bool> { using type = uint8_t; };

// The smaller (kMin) or larger of a and b; NaN wins, as at::minimum and
// at::maximum.
template <bool kMin, typename A>
inline A extreme_of(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return (kMin ? b < a : a < b) ? b : a;
}

template <typename T, Op kOp>
void reduce_typed(T* out, const void* const* rows, int n, int64_t count) {
  using A = typename AccOf<T>::type;
  A acc[kBlock];
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t len = std::min(kBlock, count - begin);
    const T* first = static_cast<const T*>(rows[0]) + begin;
    for (int64_t j = 0; j < len; ++j) acc[j] = static_cast<A>(first[j]);
    for (int k = 1; k < n; ++k) {
      const T* row = static_cast<const T*>(rows[k]) + begin;
      for (int64_t j = 0; j < len; ++j) {
        const A v = static_cast<A>(row[j]);
        if constexpr (kOp == Op::SUM || kOp == Op::AVG) acc[j] += v;
        else if constexpr (kOp == Op::PRODUCT) acc[j] *= v;
        else if constexpr (kOp == Op::MIN) acc[j] = extreme_of<true>(acc[j], v);
        else if constexpr (kOp == Op::MAX) acc[j] = extreme_of<false>(acc[j], v);
        else if constexpr (kOp == Op::BAND) acc[j] &= v;
        else if constexpr (kOp == Op::BOR) acc[j] |= v;
        else if constexpr (kOp == Op::BXOR) acc[j] ^= v;
      }
    }
    if constexpr (kOp == Op::AVG) {
      // By a power of two, a product by its reciprocal is the same number
      // as the quotient, and several times cheaper.
      if ((n & (n - 1)) == 0) {
        const A scale = static_cast<A>(1) / static_cast<A>(n);
        for (int64_t j = 0; j < len; ++j) acc[j] *= scale;
      } else {
        const A divisor = static_cast<A>(n);
        for (int64_t j = 0; j < len; ++j) acc[j] /= divisor;
      }
    }
    T* dst = out + begin;
    for (int64_t j = 0; j < len; ++j) dst[j] = static_cast<T>(acc[j]);
  }
}

template <typename T>
void reduce_by(void* out, const void* const* rows, int n, int64_t count, Op op) {
  T* o = static_cast<T*>(out);
  switch (op) {
    case Op::SUM: return reduce_typed<T, Op::SUM>(o, rows, n, count);
    case Op::PRODUCT: return reduce_typed<T, Op::PRODUCT>(o, rows, n, count);
    case Op::MIN: return reduce_typed<T, Op::MIN>(o, rows, n, count);
    case Op::MAX: return reduce_typed<T, Op::MAX>(o, rows, n, count);
    default: break;
  }
  if constexpr (std::is_floating_point_v<typename AccOf<T>::type>) {
    if (op == Op::AVG) return reduce_typed<T, Op::AVG>(o, rows, n, count);
  } else {
    if (op == Op::BAND) return reduce_typed<T, Op::BAND>(o, rows, n, count);
    if (op == Op::BOR) return reduce_typed<T, Op::BOR>(o, rows, n, count);
    if (op == Op::BXOR) return reduce_typed<T, Op::BXOR>(o, rows, n, count);
  }
  TORCH_CHECK(false, "shm backend: reduce op ", static_cast<int>(op), " does not apply to ",
              c10::CppTypeToScalarType<T>::value);
}

}  // namespace

void reduce_rows(void* out, const void* const* rows, int n, int64_t count, at::ScalarType dtype, Op op) {
  switch (dtype) {
    case at::kFloat: return reduce_by<float>(out, rows, n, count, op);
    case at::kDouble: return reduce_by<double>(out, rows, n, count, op);
    case at::kHalf: return reduce_by<c10::Half>(out, rows, n, count, op);
    case at::kBFloat16: return reduce_by<c10::BFloat16>(out, rows, n, count, op);
    case at::kChar: return reduce_by<int8_t>(out, rows, n, count, op);
    case at::kByte: return reduce_by<uint8_t>(out, rows, n, count, op);
    case at::kShort: return reduce_by<int16_t>(out, rows, n, count, op);
    case at::kInt: return reduce_by<int32_t>(out, rows, n, count, op);
    case at::kLong: return reduce_by<int64_t>(out, rows, n, count, op);
    case at::kBool: return reduce_by<bool>(out, rows, n, count, op);
    default: TORCH_CHECK(false, "shm backend: cannot reduce ", dtype, " tensors");
  }
}

}  // namespace paisoar::comm::detail

#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <cstring>

namespace paisoar::comm::detail {

void copy_to_shared(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const size_t head = (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16;
  if (bytes < 4096 || head > bytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  const size_t blocks = bytes / 64;
  for (size_t i = 0; i < blocks; ++i) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 64 * i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 64 * i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 64 * i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 64 * i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 64 * i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 64 * i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 64 * i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 64 * i + 48), e);
  }
  _mm_sfence();  // the streamed bytes are visible before the phase that posts them
  std::memcpy(d + 64 * blocks, s + 64 * blocks, bytes - 64 * blocks);
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace paisoar::comm::detail
