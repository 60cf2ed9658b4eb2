// A write that the disk refuses inside HDF5 (here ulimit -f, as a full disk would): the
// dataset is given up with h5::drop_dataset and the file still closes. A failed H5Fclose
// leaves HDF5 1.10 with a file that crashes the process at exit (zrt-ckpt export onto a full
// disk did), so this test would also crash its binary without the fix.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "optim/checkpoint/h5.hpp"

using namespace zrt;

namespace {

void write_dataset(hid_t file, const char *name, size_t count, bool expect_ok) {
  const hsize_t dims[1] = {count};
  h5::Id space(h5::check(H5Screate_simple(1, dims, nullptr), "H5Screate_simple"), H5Sclose);
  h5::Id lcpl(h5::check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  h5::Id d(h5::check(H5Dcreate2(file, name, H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT),
                     name),
           H5Dclose);
  const std::vector<float> values(count, 1.5f);
  const herr_t status = H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  EXPECT_EQ(status >= 0, expect_ok) << name;
  if (status < 0) {
    d.reset();
    h5::drop_dataset(file, name);
  }
}

}  // namespace

TEST(H5, ADatasetWhoseWriteFailedIsDroppedAndTheFileStillCloses) {
  const std::string path = ::testing::TempDir() + "zrt_h5_full_" + std::to_string(getpid()) + ".h5";
  h5::Quiet quiet;
  {
    h5::Id file = h5::create_file(path, MPI_COMM_NULL);
    write_dataset(file, "params/small", 1000, true);
    ASSERT_GE(H5Fflush(file, H5F_SCOPE_LOCAL), 0);
    // 64 KiB past what is written: the 8 MiB dataset fails part-way with EFBIG.
    rlimit before{};
    getrlimit(RLIMIT_FSIZE, &before);
    auto handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = before;
    small.rlim_cur = 64 << 10;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    write_dataset(file, "params/big", 2 << 20, false);
    // Closed while the disk is still "full", as a failed export closes its file.
    const herr_t closed = file.close();
    setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, handler);
    EXPECT_GE(closed, 0) << "HDF5 could not close the file: " << h5::last_message();
  }
  // What was written before is whole.
  h5::Id file = h5::open_file(path, false, MPI_COMM_NULL);
  EXPECT_EQ(h5::list_datasets(file), std::vector<std::string>{"params/small"});
  file.reset();
  std::remove(path.c_str());
}
