// Who owns MPI. zrt_init initializes MPI when the caller has not and remembers it; the
// last context zerort created that way finalizes it. MPI the caller initialized is never
// finalized by zerort.
#pragma once

namespace zrt {

// Initializes MPI if needed; returns true if this call initialized it. Throws
// Error(ZRT_ERR_INVALID_STATE) when MPI has already been finalized.
bool mpi_acquire(int *thread_level);
// Drops one reference taken by mpi_acquire; finalizes MPI when zerort initialized it and
// no context is left.
void mpi_release(bool owned) noexcept;
// Drops a reference taken by mpi_acquire that returned true, and makes sure zerort never
// finalizes MPI: for a context whose ranks are out of step (MPI_Finalize would wait for a
// stopped or hung peer for ever).
void mpi_abandon() noexcept;

}  // namespace zrt
