// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/convolution_probe.hpp"

#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "common/environment.hpp"
#include "common/error.hpp"
#include "trainer/nn/cpu/convolution.hpp"
#include "trainer/nn/cpu/dnnl_version.hpp"

namespace trellis::nn::cpu {

namespace {

// The hook's values: the signal the child dies of before it asks oneDNN anything.
int hooked_signal() {
    const char* hook = std::getenv(env::test_convolution_probe.name);
    if (!hook || !*hook) return 0;
    std::string value = hook;
    if (value == "sigfpe") return SIGFPE;
    if (value == "sigsegv") return SIGSEGV;
    throw UsageError(std::string(env::test_convolution_probe.name) + "=" + value +
                     ": not a test hook (accepted: sigfpe, sigsegv)");
}

// The convolution oneDNN 3.7.2 was seen dying on (ResNet-50's 1x1 convolution of 256 to 1024
// channels on 14x14 maps, batch 16), made by the CPU backend's own layer: the layouts oneDNN
// chooses (format any), past its reference kernels, each way of a training step, as a run's
// model asks. Its primitives are made (their kernels generated); nothing is run.
void make_the_convolution() {
    ConvolutionSpec spec;
    spec.name = "oneDNN probe";
    spec.in_channels = 256;
    spec.out_channels = 1024;
    spec.window = Window::square(1);
    Convolution layer(spec);
    layer.setup({tensor::Shape{16, 256, 14, 14}, nullptr}, true);
}

[[noreturn]] void probe_in_child(int hook) {
    // The death looked for leaves no core file in the run's folder.
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::signal(SIGFPE, SIG_DFL);
    std::signal(SIGSEGV, SIG_DFL);
    if (hook) raise(hook);
    try {
        make_the_convolution();
    } catch (const std::exception&) {
        // A convolution oneDNN declines is not the fault looked for: the run's own layers say
        // what they cannot make.
    }
    _exit(0);
}

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            auto value = colon == std::string::npos ? colon : line.find_first_not_of(" \t", colon + 1);
            if (value != std::string::npos) return line.substr(value);
        }
    return "a CPU that /proc/cpuinfo does not name";
}

std::string signal_name(int signal) {
    const char* abbreviation = sigabbrev_np(signal);
    return abbreviation ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal);
}

// What a user can do about it, by the library's version. oneDNN 3.7 divides by zero while it
// sizes the blocks of its brgemm convolutions, which need AVX2: capped below, it never gets there.
std::string way_out(const dnnl_version_t& version) {
    std::string elsewhere = "train on a GPU (--device cuda) or on nodes with another version of oneDNN";
    if (version.major == 3 && version.minor == 7)
        return "ONEDNN_MAX_CPU_ISA=SSE41 keeps oneDNN 3.7 off the kernels that do, at a large cost in speed (AVX2 "
               "does not); or " +
               elsewhere;
    return elsewhere;
}

// The library as loaded: its version and file, e.g. "oneDNN 3.7.2 (/usr/lib/.../libdnnl.so.3.6)".
std::string onednn_library() {
    const auto* version = dnnl_version();
    std::string text = "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
                       std::to_string(version->patch);
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&dnnl_version), &info) && info.dli_fname)
        text += std::string(" (") + info.dli_fname + ")";
    return text;
}

}  // namespace

void require_working_convolutions() {
    static bool probed = false;
    if (probed) return;
    int hook = hooked_signal();
    // Nothing buffered is written twice: the child leaves by _exit, which flushes nothing.
    std::fflush(nullptr);
    pid_t child = fork();
    if (child < 0)
        throw Error("cannot start the oneDNN convolution probe (fork): " + std::string(std::strerror(errno)));
    if (child == 0) probe_in_child(hook);
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR)
            throw Error("cannot wait for the oneDNN convolution probe: " + std::string(std::strerror(errno)));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        probed = true;
        return;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGFPE)
        throw Refused(onednn_library() +
                      " dies of SIGFPE (an integer division by zero) when it makes a convolution on this CPU (" +
                      cpu_model() + "), so the CPU backend cannot run here; " + way_out(*dnnl_version()));
    throw Error(onednn_library() + ": the convolution probe (a child process making one convolution) " +
                (WIFSIGNALED(status) ? "died of " + signal_name(WTERMSIG(status))
                                     : "exited with status " + std::to_string(WEXITSTATUS(status))) +
                " on this CPU (" + cpu_model() + "), so the CPU backend cannot be trusted here");
}

}  // namespace trellis::nn::cpu
