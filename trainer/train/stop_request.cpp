// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/stop_request.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace trellis::train {

namespace {
// Set by the handler on the signal thread, read by the training loop: a lock-free atomic is
// both async-signal-safe and visible across threads.
std::atomic<int> requested{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void remember_signal(int signal) {
    if (signal == SIGINT && requested.load() == SIGINT) {
        // Only async-signal-safe calls here: write and _exit.
        static const char said[] =
            "trellis-train: second SIGINT: exiting at once (status 130), the checkpoint being saved is "
            "dropped; the previous one is intact\n";
        [[maybe_unused]] auto written = ::write(STDERR_FILENO, said, sizeof said - 1);
        ::_exit(130);
    }
    requested.store(signal);
}

// The one thread that takes the stop signals: it only waits, so a handler never runs on a
// thread in the middle of a oneDNN kernel (see the header).
extern "C" void* take_signals(void*) {
    for (;;) ::pause();
}

sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : {SIGTERM, SIGUSR1, SIGINT}) sigaddset(&set, signal);
    return set;
}
}  // namespace

void install_stop_handlers() {
    static bool installed = false;
    if (installed) return;
    struct sigaction action {};
    action.sa_handler = remember_signal;
    action.sa_mask = stop_signals();  // one handler at a time: a second SIGINT sees the first
    action.sa_flags = SA_RESTART;
    for (int signal : {SIGTERM, SIGUSR1, SIGINT}) sigaction(signal, &action, nullptr);
    // The signal thread is made first, so that it inherits the signals open; then the caller
    // blocks them, and so does every thread it starts from now on (OpenMP's and oneDNN's
    // workers, the data pipeline's, CUDA's). Threads started before (a transport's) keep them
    // open: they run no oneDNN kernel, and the handler is the same wherever it runs.
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    pthread_t thread;
    int error = pthread_create(&thread, &attributes, take_signals, nullptr);
    pthread_attr_destroy(&attributes);
    if (error)
        throw std::runtime_error(std::string("cannot start the thread that takes signals: ") + std::strerror(error));
    pthread_setname_np(thread, "trellis-signals");
    auto blocked = stop_signals();
    pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
    installed = true;
}

int stop_requested() { return requested.load(); }

std::string signal_name(int signal) {
    switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(signal);
    }
}

}  // namespace trellis::train
