// SPDX-License-Identifier: Apache-2.0
// The GPU code that runs on the host, tested without a GPU: where the CUDA libraries are
// looked for, the ELF reader that finds what a module needs, and which cuDNN algorithm a
// layer keeps, and how the device lays out the parameters.
#include <stdlib.h>
#include <unistd.h>

#include "tests/catch.hpp"
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "tests/unit/fixtures.hpp"
#include "trainer/gpu/algorithm_choice.hpp"
#include "trainer/gpu/cuda_libraries.hpp"
#include "trainer/gpu/elf_dynamic.hpp"
#include "trainer/gpu/loss_scaler.hpp"
#include "trainer/gpu/padded_layout.hpp"
#include "trainer/gpu/speedups.hpp"

using namespace trellis;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for one scope, restoring what was there.
struct ScopedEnv {
    std::string name;
    std::string old;
    bool had;
    ScopedEnv(const char* n, const std::string& value) : name(n), had(std::getenv(n) != nullptr) {
        if (had) old = std::getenv(n);
        setenv(n, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (had)
            setenv(name.c_str(), old.c_str(), 1);
        else
            unsetenv(name.c_str());
    }
};

fs::path wheel_folder(const fs::path& prefix, const char* package) {
    auto folder = prefix / "lib/python3.12/site-packages/nvidia" / package / "lib";
    fs::create_directories(folder);
    return folder;
}

std::size_t position(const std::vector<std::string>& folders, const fs::path& folder) {
    for (std::size_t i = 0; i < folders.size(); ++i)
        if (folders[i] == folder.string()) return i;
    FAIL("not searched: " << folder.string());
    return 0;
}

}  // namespace

TEST_CASE("CUDA libraries are looked for in TRELLIS_CUDA_LIBS, the venv, python3's prefix, in that order") {
    test::Scratch scratch;
    auto given = scratch.path / "given";
    fs::create_directories(given);
    auto venv_cudnn = wheel_folder(scratch.path / "venv", "cudnn");
    auto venv_cu13 = wheel_folder(scratch.path / "venv", "cu13");
    // A python3 on PATH whose prefix has wheels of its own: found where it sits, not where
    // its link points.
    auto prefix = scratch.path / "python";
    fs::create_directories(prefix / "bin");
    fs::create_symlink("/bin/true", prefix / "bin/python3");
    auto python_nccl = wheel_folder(prefix, "nccl");

    ScopedEnv libs("TRELLIS_CUDA_LIBS", given.string() + ":" + (scratch.path / "second").string());
    ScopedEnv venv("VIRTUAL_ENV", (scratch.path / "venv").string());
    ScopedEnv path("PATH", (prefix / "bin").string() + ":/usr/bin:/bin");
    auto folders = gpu::cuda_library_folders((scratch.path / "no-module.so").string());
    CHECK(position(folders, given) == 0);
    CHECK(position(folders, scratch.path / "second") == 1);
    CHECK(position(folders, venv_cu13) < position(folders, venv_cudnn));  // the glob's order
    CHECK(position(folders, venv_cudnn) < position(folders, python_nccl));
}

TEST_CASE("the ELF reader gives a program's needed libraries and resolves $ORIGIN") {
    auto self = fs::read_symlink("/proc/self/exe").string();
    auto dynamic = gpu::read_elf_dynamic(self);
    bool libc = false;
    for (const auto& soname : dynamic.needed) libc = libc || soname == "libc.so.6";
    CHECK(libc);
    for (const auto& folder : dynamic.runpath) CHECK(folder.find("$ORIGIN") == std::string::npos);
}

TEST_CASE("a file that is not a shared object is an error naming it") {
    test::Scratch scratch;
    auto text = scratch.path / "not-elf.so";
    std::ofstream(text) << "not an ELF file\n";
    try {
        gpu::read_elf_dynamic(text.string());
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find(text.string()) != std::string::npos);
    }
    CHECK_THROWS_AS(gpu::read_elf_dynamic((scratch.path / "missing.so").string()), Error);
}

TEST_CASE("a layer keeps the fastest algorithm that ran and fits, deterministic when asked") {
    using gpu::BenchmarkedAlgorithm;
    std::vector<BenchmarkedAlgorithm> results{{false, 0, true},         // failed
                                              {true, 1u << 30, true},   // over the bound
                                              {true, 1u << 20, false},  // fastest that fits
                                              {true, 0, true}};
    auto fast = gpu::choose_algorithm(results, 256u << 20, false);
    CHECK(fast.index == 2);
    CHECK_FALSE(fast.nondeterministic_fallback);
    auto deterministic = gpu::choose_algorithm(results, 256u << 20, true);
    CHECK(deterministic.index == 3);
    CHECK_FALSE(deterministic.nondeterministic_fallback);
}

TEST_CASE("without a deterministic algorithm, a deterministic run takes the fastest and says so") {
    std::vector<gpu::BenchmarkedAlgorithm> results{{true, 0, false}, {true, 0, false}};
    auto choice = gpu::choose_algorithm(results, 0, true);
    CHECK(choice.index == 0);
    CHECK(choice.nondeterministic_fallback);
    std::vector<gpu::BenchmarkedAlgorithm> none_fit{{true, 1u << 20, true}};
    CHECK(gpu::choose_algorithm(none_fit, 1024, true).index == -1);
}

TEST_CASE("the device's parameters start on multiples of 64 elements, the gaps zero") {
    std::vector<std::size_t> sizes{3, 64, 65, 0, 1};
    gpu::PaddedLayout layout(sizes);
    CHECK(layout.host_size() == 133);
    CHECK(layout.device_size() == 64 + 64 + 128 + 0 + 64);
    for (std::size_t p = 0; p < sizes.size(); ++p) CHECK(layout.device_start(p) % 64 == 0);
    CHECK(layout.device_offset(0) == 0);
    CHECK(layout.device_offset(2) == 2);
    CHECK(layout.device_offset(3) == 64);    // the second parameter's first element
    CHECK(layout.device_offset(67) == 128);  // the third's
    CHECK(layout.device_offset(132) == 256);
    CHECK(layout.device_offset(133) == layout.device_size());

    std::vector<float> host(layout.host_size()), device(layout.device_size(), -1.0f), back(layout.host_size());
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i + 1);
    layout.scatter(host, device);
    CHECK(device[2] == 3.0f);
    CHECK(device[3] == 0.0f);  // a gap
    CHECK(device[64] == 4.0f);
    CHECK(device[256] == 133.0f);
    layout.gather(device, back);
    CHECK(back == host);
}

TEST_CASE("the GPU speed items are chosen by name, all or none, and an unknown one is refused naming them") {
    CHECK(gpu::describe(gpu::parse_speedups("")) == "none");
    CHECK(gpu::describe(gpu::parse_speedups("none")) == "none");
    CHECK(gpu::describe(gpu::parse_speedups("all")) ==
          "synthetic-on-device,workspace-cache,vector-kernels,fused-norm-join,overflow-on-device");
    auto one = gpu::parse_speedups("workspace-cache");
    CHECK(one.workspace_cache);
    CHECK_FALSE(one.synthetic_on_device);
    auto two = gpu::parse_speedups("overflow-on-device,fused-norm-join");
    CHECK(two.overflow_on_device);
    CHECK(two.fused_norm_join);
    CHECK_FALSE(two.vector_kernels);
    CHECK(gpu::describe(two) == "fused-norm-join,overflow-on-device");
    try {
        gpu::parse_speedups("workspace-cache,warp-drive");
        FAIL("no error");
    } catch (const UsageError& e) {
        std::string message = e.what();
        CHECK(message.find("TRELLIS_CUDA_SPEEDUPS") != std::string::npos);
        CHECK(message.find("'warp-drive'") != std::string::npos);
        CHECK(message.find("synthetic-on-device") != std::string::npos);
    }
}

TEST_CASE("fp16's loss scale halves on overflow, doubles after a run of finite steps, and stays in bounds") {
    gpu::LossScaler scaler;
    CHECK(scaler.scale() == 65536.0f);
    scaler.record(true, scaler.scale());
    CHECK(scaler.scale() == 32768.0f);
    for (int i = 0; i < gpu::LossScaler::growth_interval - 1; ++i) scaler.record(false, scaler.scale());
    CHECK(scaler.scale() == 32768.0f);
    CHECK(scaler.state().finite_steps == gpu::LossScaler::growth_interval - 1);
    scaler.record(false, scaler.scale());
    CHECK(scaler.scale() == 65536.0f);
    // An overflow starts the run again.
    for (int i = 0; i < 10; ++i) scaler.record(false, scaler.scale());
    scaler.record(true, scaler.scale());
    CHECK(scaler.state().finite_steps == 0);
    for (int i = 0; i < 40; ++i) scaler.record(true, scaler.scale());
    CHECK(scaler.scale() == 1.0f);
    // A checkpoint's scale is clamped; none saved (0) changes nothing.
    scaler.restore({1e9f, 7});
    CHECK(scaler.scale() == gpu::LossScaler::max_scale);
    CHECK(scaler.state().finite_steps == 7);
    scaler.restore({0, 3});
    CHECK(scaler.state().finite_steps == 7);
    // A verdict taken in a step late: the step after an overflow ran at the same scale and
    // overflowed too; the scale is halved once, not twice.
    scaler.restore({1024.0f, 0});
    scaler.record(true, 1024.0f);
    scaler.record(true, 1024.0f);
    CHECK(scaler.scale() == 512.0f);
    scaler.record(true, 512.0f);
    CHECK(scaler.scale() == 256.0f);
    scaler.restore({gpu::LossScaler::max_scale, gpu::LossScaler::growth_interval - 1});
    scaler.record(false, scaler.scale());
    CHECK(scaler.scale() == gpu::LossScaler::max_scale);
}
