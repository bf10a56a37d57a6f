// SPDX-License-Identifier: Apache-2.0
// What a GPU gives the trainer besides its layers: the parameters' device copies, the
// optimizer on the device, mixed precision's loss scale, and the NCCL gradient allreduce.
// The CUDA implementation is a module (trellis-cuda.so) loaded at run time, so that
// trellis-train starts on machines without CUDA, cuDNN or NCCL installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "trainer/comm/comm_stats.hpp"
#include "trainer/comm/wireup.hpp"
#include "trainer/gpu/precision.hpp"
#include "trainer/gpu/speedups.hpp"
#include "trainer/nn/backend.hpp"
#include "trainer/optim/optimizer.hpp"

namespace trellis::gpu {

// No GPU here: the CUDA libraries and the module loaded, and the driver is absent or reports
// no device. Reported as "no GPU: ...", a prefix scripts and the GPU tests rely on (the only
// thing they skip on). A library that cannot be loaded, or a driver that is present but
// broken, is a GpuLibraryError (cuda_libraries.hpp) instead, and a failing cuDNN or cuBLAS
// call an error naming the call: neither may pass for a machine without a GPU.
struct GpuUnavailable : UsageError {
    using UsageError::UsageError;
    const char* topic() const override { return "no GPU"; }
};

// This trellis was built without the CUDA module (configure found no CUDA), or it is not
// where the program looks: a build without a GPU backend, for which GPU tests skip.
struct NoCudaBackend : UsageError {
    using UsageError::UsageError;
    const char* topic() const override { return "no CUDA backend"; }
};

struct AcceleratorOptions {
    Precision precision = Precision::fp32;
    std::size_t workspace_bytes = 256u << 20;  // cuDNN's convolution workspace bound
    bool deterministic = false;                // deterministic cuDNN algorithms only
    int local_rank = 0;                        // picks the GPU when several are visible
    Speedups speedups;
    bool profile = false;  // GPU time by kind of work (TRELLIS_CUDA_PROFILE)
    // Filled by open_cuda: where the module looks for NCCL when a step needs it, and the speed
    // items, the driver and the libraries that were loaded, for the Device line.
    std::vector<std::string> library_folders;
    std::string libraries;
};

// The gradient allreduce on the device (NCCL), bucket by bucket during the backward pass.
class DeviceAllreduce {
public:
    virtual ~DeviceAllreduce() = default;
    // The gradients from `offset` to the end are final on the compute stream.
    virtual void ready_from(std::size_t offset) = 0;
    // Waits for every bucket (the average over ranks) and returns the step's figures.
    virtual comm::CommStats finish() = 0;
};

// fp16's dynamic loss scale.
struct LossScale {
    float scale = 0;                // 0: no loss scaling (fp32, bf16)
    std::int64_t finite_steps = 0;  // since the scale last changed
};

// An fp16 step the GPU skipped, as the host learnt of it a step later.
struct LateOverflow {
    std::int64_t step = 0;
    float scale_after = 0;
};

class Accelerator {
public:
    virtual ~Accelerator() = default;
    // "GPU 0: NVIDIA H200 (sm_90, 139 GiB), bf16; driver CUDA 13.0, cuDNN 9.19.0 (PATH), ..."
    virtual std::string description() const = 0;
    virtual nn::Backend& backend() = 0;

    // After the model's parameters are allocated and initialised in host memory: the device
    // copies. The host store stays the reference for checkpoints and host collectives.
    virtual void bind(nn::ParameterStore& store) = 0;
    virtual void upload_values() = 0;  // host values and statistics -> device
    // Host learned values -> device, the device's batch-norm statistics kept (after a
    // parameter-server pull or a host optimizer step).
    virtual void upload_learned_values() = 0;
    virtual void download_values() = 0;  // device values and statistics -> host
    virtual void download_grads() = 0;   // device gradients -> host (host allreduce, PS push)
    virtual void upload_grads() = 0;     // host gradients -> device
    // Before the store's memory goes: lets go of anything it holds of it.
    virtual void unbind() = 0;

    // Mixed precision: after the gradients of `step` are complete (and reduced), divides them
    // by the loss scale and says whether the host may apply them. A step with overflowed fp16
    // gradients is skipped and the scale halved; the scale grows again after a run of finite
    // steps. With the overflow-on-device speed item the GPU's optimizer skips such a step
    // itself, this returns true, and late_overflows() names the step a step later.
    virtual bool finish_gradients(std::int64_t step) = 0;
    // The steps skipped on the GPU that the host has learnt of since the last call (it waits
    // for nothing), each with the loss scale it left.
    virtual std::vector<LateOverflow> late_overflows() { return {}; }
    // The scale and the finite steps since it last changed: checkpoints hold them, so that a
    // resumed fp16 run continues as the uninterrupted one would (scale 0 without fp16). It
    // takes in the last step's verdict first.
    virtual LossScale loss_scale() = 0;
    virtual void restore_loss_scale(LossScale state) = 0;

    // An optimizer stepping the device copies; its state() reads and writes host mirrors.
    // Null when `kind` has no device implementation (the trainer then steps on the host).
    virtual std::unique_ptr<optim::Optimizer> device_optimizer(const optim::OptimizerConfig& config,
                                                               nn::ParameterStore& store) = 0;
    // NCCL over every rank; `from_rank0` overwrites the given words with rank 0's on every
    // rank (the control transport's broadcast), which carries NCCL's unique id.
    using ShareFromRank0 = std::function<void(std::span<std::byte>)>;
    virtual std::unique_ptr<DeviceAllreduce> nccl_allreduce(const comm::Identity& identity,
                                                            const ShareFromRank0& from_rank0,
                                                            std::size_t bucket_bytes) = 0;

    // The device's PCI address ("0000:3B:00.0"), and why NCCL cannot be loaded (empty when
    // it can): --transport auto takes NCCL only when every rank has a GPU of its own and NCCL.
    virtual std::string pci_bus_id() const = 0;
    virtual std::string nccl_unavailable() = 0;

    // The speed items it was opened with.
    virtual const Speedups& speedups() const = 0;
    // The profile's table at the end of a run; "" when not profiled.
    virtual std::string profile_report() = 0;

    virtual void synchronize() = 0;
    virtual std::size_t peak_memory_bytes() const = 0;
};

// Whether the NVIDIA kernel driver is loaded: without it no GPU can be used, and --device
// auto does not pay for loading CUDA's libraries.
bool nvidia_driver_loaded();

// Loads the CUDA libraries and the module first, then asks the driver for a device, and opens
// the GPU this process may use: the only one visible (the plugin's binding sets
// CUDA_VISIBLE_DEVICES to the closest), else the local rank's among the visible ones. Throws
// GpuLibraryError naming a library that is missing or broken, GpuUnavailable when there is
// no device, and the module's error naming the call that failed otherwise.
std::unique_ptr<Accelerator> open_cuda(const AcceleratorOptions& options);

// Why the module could not open the GPU.
struct CreateFailure {
    std::string message;
    bool no_device = false;  // the runtime found no device: GpuUnavailable
};

// The module's entry point, resolved with dlsym.
using CreateAccelerator = Accelerator* (*)(const AcceleratorOptions& options, CreateFailure& failure);
inline constexpr const char* create_accelerator_symbol = "trellis_create_cuda_accelerator";

}  // namespace trellis::gpu
