// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/open_device.hpp"

#include <unistd.h>

#include <cstdlib>

#include "common/environment.hpp"
#include "trainer/gpu/cuda_libraries.hpp"

namespace trellis::train {

OpenedDevice open_device(const TrainOptions& options, int local_rank) {
    if (options.device == Device::cpu) return {};
    std::string needs_gpu = options.device == Device::cuda ? " (--device cuda)"
                            : options.precision != gpu::Precision::fp32
                                ? " (--precision " + gpu::precisions().name(options.precision) + " needs a GPU)"
                                : "";
    bool kernel_driver = gpu::nvidia_driver_loaded();
    // A sandbox (gVisor) may show the GPU's device nodes without /proc/driver/nvidia; so may a
    // node whose device files were made for Slurm's gres alone (the test cluster).
    bool device_nodes = access("/dev/nvidiactl", F_OK) == 0;
    if (needs_gpu.empty()) {
        // --device auto does not load CUDA's libraries where no GPU can be given: no driver,
        // or an empty CUDA_VISIBLE_DEVICES (a CPU-only rank, such as a parameter server, on a
        // GPU node).
        const char* visible = std::getenv(env::cuda_visible_devices.name);
        if (visible && !*visible) return {nullptr, "no GPU: CUDA_VISIBLE_DEVICES is empty"};
        if (!kernel_driver && !device_nodes) return {nullptr, "no GPU: the NVIDIA driver is not loaded"};
        // Device nodes alone: the driver answers before CUDA's libraries are loaded for nothing.
        if (!kernel_driver) try {
                gpu::check_cuda_driver();
            } catch (const gpu::GpuUnavailable&) {
                return {nullptr,
                        "no GPU: /dev/nvidiactl is there, but no NVIDIA driver (no /proc/driver/nvidia, "
                        "no libcuda.so.1)"};
            } catch (const Error& error) {
                return {nullptr, std::string("no GPU: /dev/nvidiactl is there, but no /proc/driver/nvidia, and ") +
                                     error.what()};
            }
    }
    gpu::AcceleratorOptions device;
    device.precision = options.precision;
    device.workspace_bytes = std::size_t(options.cudnn_workspace_mb) << 20;
    device.deterministic = options.deterministic;
    device.local_rank = local_rank;
    device.speedups = gpu::speedups_from_environment();
    const char* profile = std::getenv(env::cuda_profile.name);
    device.profile = profile && *profile && std::string(profile) != "0";
    try {
        return {gpu::open_cuda(device), {}};
    } catch (const gpu::GpuUnavailable& error) {
        if (!needs_gpu.empty()) throw gpu::GpuUnavailable(error.what() + needs_gpu);
        return {nullptr, std::string("no GPU: ") + error.what()};
    } catch (const gpu::NoCudaBackend& error) {
        if (!needs_gpu.empty()) throw gpu::NoCudaBackend(error.what() + needs_gpu);
        return {nullptr, std::string("no CUDA backend: ") + error.what()};
    } catch (const gpu::GpuLibraryError& error) {
        if (!needs_gpu.empty() || kernel_driver) throw;
        return {nullptr,
                std::string("no GPU: /dev/nvidiactl is there, but no /proc/driver/nvidia, and ") + error.what()};
    }
}

}  // namespace trellis::train
