// SPDX-License-Identifier: Apache-2.0
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/environment.hpp"
#include "trainer/gpu/accelerator.hpp"
#include "trainer/gpu/cuda_libraries.hpp"

namespace trellis::gpu {

namespace {

std::string executable_folder() {
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0) return {};
    std::string exe(path, std::size_t(length));
    return exe.substr(0, exe.rfind('/'));
}

// Where the module may be: TRELLIS_CUDA_MODULE; the one beside this program, which was built
// with it (a bundle's or an installed prefix's lib/trellis, the build tree's .libs); the
// installed one.
std::vector<std::string> module_candidates() {
    if (const char* chosen = std::getenv(env::cuda_module.name); chosen && *chosen) return {chosen};
    std::filesystem::path exe = executable_folder();
    return {(exe / "../lib/trellis/trellis-cuda.so").lexically_normal().string(), exe / ".libs/trellis-cuda.so",
            std::string(TRELLIS_PKGLIBDIR) + "/trellis-cuda.so"};
}

std::string find_module() {
    std::string tried;
    for (const auto& path : module_candidates()) {
        if (access(path.c_str(), F_OK) == 0) return path;
        tried += (tried.empty() ? "" : ", ") + path;
    }
    throw NoCudaBackend(
        "this trellis was built without it (no trellis-cuda.so in " + tried +
        "; configure --with-cuda needs nvcc, cuDNN and NCCL's header; TRELLIS_CUDA_MODULE names another)");
}

}  // namespace

bool nvidia_driver_loaded() { return access("/proc/driver/nvidia/version", F_OK) == 0; }

std::unique_ptr<Accelerator> open_cuda(const AcceleratorOptions& requested) {
    AcceleratorOptions options = requested;
    auto module_path = find_module();
    options.library_folders = cuda_library_folders(module_path);
    auto libraries = preload_cuda_libraries(module_path, options.library_folders);
    // The module stays loaded for the life of the process: its kernels and the CUDA runtime's
    // state must not go away under live device memory.
    void* module = dlopen(module_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module)
        throw GpuLibraryError(std::string("cannot load the CUDA backend: ") + dlerror() +
                              "; NVIDIA driver: " + nvidia_driver_state());
    auto create = reinterpret_cast<CreateAccelerator>(dlsym(module, create_accelerator_symbol));
    if (!create)
        throw GpuLibraryError(module_path + " is not a trellis CUDA module (no " + create_accelerator_symbol + ")");
    // Only now that everything loaded does the driver decide between a GPU and none; the
    // answer names the libraries, which a machine without a GPU has shown to be in order.
    std::string driver;
    try {
        driver = check_cuda_driver();
    } catch (const GpuUnavailable& e) {
        throw GpuUnavailable(std::string(e.what()) + "; loaded: " + describe(libraries));
    }
    // The module takes the words from here: a program links only the host functions it calls.
    options.libraries =
        "speed items: " + describe(options.speedups) + "; driver CUDA " + driver + ", " + describe(libraries);
    CreateFailure failure;
    std::unique_ptr<Accelerator> accelerator(create(options, failure));
    if (accelerator) return accelerator;
    if (failure.no_device) throw GpuUnavailable(failure.message);
    throw Error(failure.message);
}

}  // namespace trellis::gpu
