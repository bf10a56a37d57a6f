#include "trainer/train/stop_request.hpp"

#include <csignal>

namespace trellis::train {

namespace {
volatile std::sig_atomic_t requested = 0;
extern "C" void remember_signal(int signal) { requested = signal; }
}  // namespace

void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGUSR1, &action, nullptr);
}

int stop_requested() { return requested; }

}  // namespace trellis::train
