#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/environment.hpp"
#include "trainer/gpu/accelerator.hpp"

namespace trellis::gpu {

namespace {

std::string executable_folder() {
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0) return {};
    std::string exe(path, std::size_t(length));
    return exe.substr(0, exe.rfind('/'));
}

// Where the module may be: TRELLIS_CUDA_MODULE, the installed one, and the build tree's
// (libtool leaves it in .libs beside the programs).
std::vector<std::string> module_candidates() {
    if (const char* chosen = std::getenv(env::cuda_module.name); chosen && *chosen) return {chosen};
    return {std::string(TRELLIS_PKGLIBDIR) + "/trellis-cuda.so", executable_folder() + "/.libs/trellis-cuda.so"};
}

}  // namespace

bool nvidia_driver_loaded() { return access("/proc/driver/nvidia/version", F_OK) == 0; }

std::unique_ptr<Accelerator> open_cuda(const AcceleratorOptions& options) {
    std::string tried;
    for (const auto& path : module_candidates()) {
        if (access(path.c_str(), F_OK) != 0) {
            tried += (tried.empty() ? "" : ", ") + path;
            continue;
        }
        // The module stays loaded for the life of the process: its kernels and the CUDA
        // runtime's state must not go away under live device memory.
        void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!module) throw GpuUnavailable(std::string("cannot load the CUDA backend: ") + dlerror());
        auto create = reinterpret_cast<CreateAccelerator>(dlsym(module, create_accelerator_symbol));
        if (!create) throw GpuUnavailable(path + " is not a trellis CUDA module (no " + create_accelerator_symbol + ")");
        std::string error;
        std::unique_ptr<Accelerator> accelerator(create(options, error));
        if (!accelerator) throw GpuUnavailable(error);
        return accelerator;
    }
    throw GpuUnavailable("this trellis was built without the CUDA backend (no trellis-cuda.so in " + tried +
                         "; configure --with-cuda needs nvcc, cuDNN and NCCL)");
}

}  // namespace trellis::gpu
