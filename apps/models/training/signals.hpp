// SIGUSR1 and SIGTERM ask the trainer to stop at the end of the current step (Slurm sends
// SIGUSR1 ahead of preemption with --signal=USR1@SECONDS, and SIGTERM at the time limit),
// so it can save a checkpoint and exit cleanly instead of dying mid-step.
#pragma once

namespace training {

/// Installs the handlers. A second signal of the same kind while stopping is ignored.
void install_stop_signals();
/// The signal that asked to stop (SIGUSR1 or SIGTERM), or 0. Async-signal-safe to set,
/// read from the training loop at step boundaries.
int stop_signal();
/// Forget a received signal (tests).
void clear_stop_signal();

}  // namespace training
