// The view types every layer uses, and the math functions that work inside kernels on any
// Kokkos backend (Kokkos 3.4 keeps them in Kokkos::Experimental, Kokkos 4 in Kokkos).
//
// Activations are 2-D, row-major (LayoutRight) matrices: a (B,T,C) tensor is a (B*T, C)
// matrix, because every layer except attention treats the B*T positions alike. All views
// here are unmanaged: memory belongs to the ParameterStore or to Activations, which carve
// it out of a few large allocations (so the engine can own parameters and gradients).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace zrt::nn {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;

/// A vector in the execution space's memory.
template <class T>
using Vec = Kokkos::View<T *, Kokkos::LayoutRight, MemSpace, Unmanaged>;
/// A row-major matrix (rows, cols) in the execution space's memory.
template <class T>
using Mat = Kokkos::View<T **, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <class T>
using CVec = Vec<const T>;
template <class T>
using CMat = Mat<const T>;
/// Token ids, (B*T).
using Tokens = Kokkos::View<const int *, MemSpace>;

using TeamPolicy = Kokkos::TeamPolicy<ExecSpace>;
using TeamMember = TeamPolicy::member_type;
using RangePolicy = Kokkos::RangePolicy<ExecSpace>;

/// A (rows, cols) matrix over @p data.
template <class T>
Mat<T> as_mat(T *data, std::ptrdiff_t rows, std::ptrdiff_t cols) {
  return Mat<T>(data, rows, cols);
}

#if KOKKOS_VERSION >= 40000
namespace kmath = Kokkos;
#else
namespace kmath = Kokkos::Experimental;
#endif

/// dst = beta*dst + value, where beta == 0 overwrites, so that memory handed out
/// uninitialized (an engine's gradient bucket) never leaks NaN into the result.
template <class T>
KOKKOS_INLINE_FUNCTION void store_or_add(T &dst, T beta, T value) {
  dst = beta == T(0) ? value : beta * dst + value;
}

}  // namespace zrt::nn
