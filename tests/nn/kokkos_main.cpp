// main() for the Kokkos tests of the apps (nn, GPT-2, BERT): Kokkos lives for the whole test
// program.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  Kokkos::initialize(argc, argv);
  int rc = RUN_ALL_TESTS();
  Kokkos::finalize();
  return rc;
}
