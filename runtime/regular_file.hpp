// Opening a file that zerort reads (a configuration file, a checkpoint) without blocking.
// open(2) of a FIFO for reading waits for ever for a writer, and a device or a directory
// opens fine and fails (or blocks) only when read, so every path is opened with O_NONBLOCK,
// checked to be a regular file with fstat, and only then made blocking again. What is not
// a regular file is named: "it is a FIFO (named pipe), not a regular file".
#pragma once

#include <string>

#include "zerort/status.h"

namespace zrt {

// Opens path for reading (O_RDONLY | O_CLOEXEC) without blocking; returns the descriptor,
// in blocking mode, which the caller closes. Throws Error(status, "cannot open WHAT PATH:
// REASON"), REASON the system's words ("No such file or directory", "Permission denied")
// or what the path is instead of a regular file (a directory, a FIFO, a character or
// block device, a socket).
int open_regular_file(const std::string &path, const char *what, zrt_status_t status = ZRT_ERR_IO);

// The same check for libraries that open a path themselves (HDF5's H5Fopen): the path is
// opened as above and closed again. Throws as open_regular_file.
void check_regular_file(const std::string &path, const char *what,
                        zrt_status_t status = ZRT_ERR_IO);

// The whole file, opened as above; a failed read throws "cannot read WHAT PATH: REASON".
std::string read_regular_file(const std::string &path, const char *what,
                              zrt_status_t status = ZRT_ERR_IO);

}  // namespace zrt
