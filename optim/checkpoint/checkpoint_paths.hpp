// The files around a checkpoint: path patterns ("{step}"), the room a save needs, what a
// killed save left behind, keep_last, syncing and agreeing on the path.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zrt::checkpoint {

void fsync_path(const std::string &path, bool directory);
std::string directory_of(const std::string &path);
// The files that pattern names, "{step}" standing for a run of digits, as (step, path) in
// no particular order; a pattern without "{step}" names one file (step 0).
std::vector<std::pair<long long, std::string>> files_of(const std::string &pattern);
// Fails on every rank, naming both, when some rank passed another path than rank 0.
void same_path_on_every_rank(MPI_Comm comm, const std::string &path, const char *what);
// Why writing path may have failed, as the file system tells it: free space and the file
// size limit (ulimit -f), which a failed write reports only as its errno. Empty when
// neither is short.
std::string storage_diagnosis(const std::string &path);
// Why a file at path of size_now bytes cannot grow by `bytes` (plus a margin for HDF5's
// metadata), as the file system's free space or ulimit -f says: "it needs about N bytes
// and DIR has M free (No space left on device)"; empty when it can.
std::string room_shortfall(const std::string &path, uint64_t size_now, uint64_t bytes);
// Refuses (Error ZRT_ERR_IO) a save of `bytes` that the file system or ulimit -f cannot
// hold, before anything is written.
void check_room(const std::string &tmp, uint64_t bytes);
// A save killed before its rename leaves PATH.tmp behind (as large as a checkpoint), and
// one killed while an older file was being removed leaves PATH.removing: the next save of
// the same pattern removes every such file, and says so.
void remove_unfinished_saves(const std::string &pattern);

// Freeing a large file's blocks takes the call that drops its last name a while (0.36-0.47
// s for 1.5 GB on ext4 here), which an asynchronous save's publish would spend inside the
// program's training step. In the background, a file to remove gets a second name first
// (PATH.removing: a link, which frees nothing) and a detached thread removes that name.
enum class Removal { Now, InBackground };
// Deletes checkpoints matching pattern ("{step}" a run of digits) except the newest keep.
void prune(const std::string &pattern, int keep, Removal removal);
// Renames tmp to path; a previous file at path is removed as `removal` says, path naming a
// complete file throughout. Throws Error(ZRT_ERR_IO) naming both when the rename fails.
void replace_file(const std::string &tmp, const std::string &path, Removal removal);

}  // namespace zrt::checkpoint
