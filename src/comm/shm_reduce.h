// reduce_rows: the reduction Backend::Shm runs over the ranks' pieces in
// shared memory, as plain loops over raw memory (no ATen op per piece:
// their dispatch cost more than a small message's whole reduction). Rows
// are combined in row (rank) order, so every rank that reduces the same rows
// gets the same bits. fp16 and bf16 accumulate in fp32 and round once; AVG
// divides in the accumulator, before rounding (an fp16 sum that would
// overflow 65504 still averages correctly). Also copy_to_shared, the copy
// into a slot that streams past this core's caches.
#pragma once

#include <c10/core/ScalarType.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstdint>

namespace paisoar::comm::detail {

// out[i] = rows[0][i] op rows[1][i] op ... op rows[n-1][i] for i < count
// (divided by n for AVG). `out` may be one of the rows. REQUIRES: n >= 1,
// the op suits the dtype (backend_shm.cpp checks it when a call is issued).
void reduce_rows(void* out, const void* const* rows, int n, int64_t count, at::ScalarType dtype,
                 ::c10d::ReduceOp::RedOpType op);

}  // namespace paisoar::comm::detail

namespace paisoar::comm::detail {

// memcpy into shared memory that another core reads next: stores that
// bypass this core's caches (non-temporal), so the reader takes the bytes
// from memory instead of from this core's cache.
void copy_to_shared(void* dst, const void* src, size_t bytes);

}  // namespace paisoar::comm::detail
