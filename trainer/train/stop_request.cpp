#include "trainer/train/stop_request.hpp"

#include <unistd.h>

#include <csignal>

namespace trellis::train {

namespace {
volatile std::sig_atomic_t requested = 0;

extern "C" void remember_signal(int signal) {
    if (signal == SIGINT && requested == SIGINT) {
        // Only async-signal-safe calls here: write and _exit.
        static const char said[] =
            "trellis-train: second SIGINT: exiting at once (status 130), the checkpoint being saved is "
            "dropped; the previous one is intact\n";
        [[maybe_unused]] auto written = ::write(STDERR_FILENO, said, sizeof said - 1);
        ::_exit(130);
    }
    requested = signal;
}
}  // namespace

void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGUSR1, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
}

int stop_requested() { return requested; }

std::string signal_name(int signal) {
    switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(signal);
    }
}

}  // namespace trellis::train
