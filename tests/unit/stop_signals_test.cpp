// SPDX-License-Identifier: Apache-2.0
// The stop signals (SIGTERM, SIGUSR1, SIGINT) never interrupt a thread that computes
// (trainer/train/stop_request.hpp). oneDNN 2.6's generated GEMM kernels point the stack
// pointer into the heap while they run: a signal handled on such a thread wrote its frame over
// heap memory, and trellis-train aborted ("corrupted size vs. prev_size") about once in eight
// runs stopped by SIGTERM at AlexNet's fully connected layers.
// Its own binary: the signal dispositions and masks are the process's.
#include "tests/catch.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/nn/parameter_store.hpp"
#include "trainer/train/stop_request.hpp"

using namespace trellis;

namespace {

struct ThreadMask {
    std::string name;
    unsigned long long blocked = 0;  // SigBlk: bit N-1 for signal N
};

std::vector<ThreadMask> thread_masks() {
    std::vector<ThreadMask> threads;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        ThreadMask thread;
        std::ifstream(task.path() / "comm") >> thread.name;
        std::ifstream status(task.path() / "status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("SigBlk:", 0) == 0) thread.blocked = std::stoull(line.substr(7), nullptr, 16);
        threads.push_back(thread);
    }
    return threads;
}

bool blocks_stops(const ThreadMask& thread) {
    for (int signal : {SIGTERM, SIGUSR1, SIGINT})
        if (!(thread.blocked >> (signal - 1) & 1)) return false;
    return true;
}

// AlexNet's first fully connected layer (9216 -> 4096) at batch 4: oneDNN runs it with its
// generated GEMM kernels.
struct FullyConnected {
    nn::cpu::CpuBackend backend;
    nn::LayerPtr layer = backend.linear({"fc6", 9216, 4096});
    nn::ParameterStore store;
    nn::TensorSpec input{tensor::Shape{4, 9216}, nullptr};
    std::vector<float> x = std::vector<float>(4 * 9216, 0.5f), dy = std::vector<float>(4 * 4096, 0.25f);

    FullyConnected() {
        auto output = layer->setup(input, true);
        layer->collect(store);
        store.allocate();
        std::mt19937_64 rng(1);
        layer->initialize(rng);
        grad_spec = output;
    }
    void step() {
        layer->forward(backend.from_plain(x, input), nn::Mode::train);
        layer->backward(backend.from_plain(dy, grad_spec));
    }
    nn::TensorSpec grad_spec;
};

}  // namespace

TEST_CASE("after install_stop_handlers, only trellis's signal thread can take a stop signal") {
    train::install_stop_handlers();
    FullyConnected fc;  // starts oneDNN's worker threads
    fc.step();
    int open = 0;
    for (const auto& thread : thread_masks()) {
        INFO("thread " << thread.name << " SigBlk " << std::hex << thread.blocked);
        if (thread.name == "trellis-signals")
            CHECK(!blocks_stops(thread));
        else
            CHECK(blocks_stops(thread));
        open += !blocks_stops(thread);
    }
    CHECK(open == 1);
}

TEST_CASE("a storm of SIGUSR1 during GEMM kernels is a stop request and leaves the heap whole") {
    train::install_stop_handlers();
    FullyConnected fc;
    pid_t parent = getpid();
    pid_t storm = fork();
    REQUIRE(storm >= 0);
    if (storm == 0) {
        // Async-signal-safe calls only, in a child of a threaded process; it ends with its
        // parent, even one that aborted.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        while (getppid() == parent && kill(parent, SIGUSR1) == 0) usleep(100);
        _exit(0);
    }
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    int steps = 0;
    while (std::chrono::steady_clock::now() < until) {
        // Small allocations beside the kernels' heap workspace, freed at once: glibc checks
        // its chunk headers on every free.
        std::vector<std::unique_ptr<char[]>> churn;
        for (int i = 0; i < 64; ++i) churn.emplace_back(new char[48 + 16 * i]());
        fc.step();
        ++steps;
    }
    kill(storm, SIGKILL);
    waitpid(storm, nullptr, 0);
    INFO(steps << " steps under the storm");
    CHECK(steps > 0);
    CHECK(train::stop_requested() == SIGUSR1);
    for (int i = 0; i < 1000; ++i) std::free(std::malloc(std::size_t(16 + i)));
}
