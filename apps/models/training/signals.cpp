#include "signals.hpp"

#include <csignal>

namespace training {
namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int signo) {
  g_stop = signo;
}

}  // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a signal during a blocking call must not fail the call
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() {
  return g_stop;
}

void clear_stop_signal() {
  g_stop = 0;
}

}  // namespace training
