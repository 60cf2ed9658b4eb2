// Kokkos and KokkosKernels as the build finds them (Debian's Trilinos 3.4 or a Kokkos 4):
// KokkosBlas::gemm must run, through OpenBLAS, and agree with a plain triple loop.
#include <gtest/gtest.h>

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <cmath>

TEST(KokkosBlas, GemmMatchesALoop) {
  const int m = 96, k = 64, n = 80;
  Kokkos::View<float **, Kokkos::LayoutLeft> A("A", m, k), B("B", k, n), C("C", m, n);
  auto a = Kokkos::create_mirror_view(A);
  auto b = Kokkos::create_mirror_view(B);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j)
      a(i, j) = static_cast<float>((i * 7 + j * 3) % 11) - 5.0f;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < n; ++j)
      b(i, j) = static_cast<float>((i * 5 + j) % 13) - 6.0f;
  Kokkos::deep_copy(A, a);
  Kokkos::deep_copy(B, b);
  KokkosBlas::gemm("N", "N", 1.0f, A, B, 0.0f, C);
  Kokkos::fence();
  auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), C);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float want = 0;
      for (int p = 0; p < k; ++p)
        want += a(i, p) * b(p, j);
      ASSERT_EQ(c(i, j), want) << i << "," << j;  // small integers: exact
    }
}

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  Kokkos::initialize(argc, argv);
  int rc = RUN_ALL_TESTS();
  Kokkos::finalize();
  return rc;
}
