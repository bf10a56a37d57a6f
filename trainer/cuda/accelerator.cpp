// SPDX-License-Identifier: Apache-2.0
// The module's entry point: opens the GPU, checks what the process can use, and gives the
// trainer the CUDA backend with its device parameters, optimizer and NCCL allreduce.
#include <unistd.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "trainer/gpu/accelerator.hpp"
#include "trainer/gpu/loss_scaler.hpp"
#include "trainer/cuda/backend.hpp"
#include "trainer/cuda/check.hpp"
#include "trainer/cuda/device_optimizer.hpp"
#include "trainer/cuda/kernels.hpp"
#include "trainer/cuda/nccl_allreduce.hpp"
#include "trainer/cuda/nccl_library.hpp"

namespace trellis::cuda {

namespace {

tensor::DType precision_type(gpu::Precision precision) {
    switch (precision) {
    case gpu::Precision::bf16: return tensor::DType::bf16;
    case gpu::Precision::fp16: return tensor::DType::f16;
    case gpu::Precision::fp32: break;
    }
    return tensor::DType::f32;
}

class CudaAccelerator : public gpu::Accelerator {
public:
    explicit CudaAccelerator(const gpu::AcceleratorOptions& options)
        : options_(options),
          context_(precision_type(options.precision), options.workspace_bytes, options.deterministic, options.speedups,
                   options.profile),
          backend_(context_) {
        check(cudaGetDevice(&device_), "cudaGetDevice");
        check(cudaGetDeviceProperties(&properties_, device_), "cudaGetDeviceProperties");
        nonfinite_ = static_cast<int*>(device_allocate(sizeof(int), "the overflow flag"));
        if (context_.compute_type() == tensor::DType::f16) context_.loss_scale = scaler_.scale();
    }
    ~CudaAccelerator() override {
        if (late_step_ >= 0) cudaEventSynchronize(late_ready_);  // the last copy into late_flag_
        cudaFree(nonfinite_);
        if (late_flag_) cudaFreeHost(late_flag_);
        if (late_ready_) cudaEventDestroy(late_ready_);
    }

    // The libraries are those loaded, with the versions they report at run time.
    std::string description() const override {
        const NcclLibrary* nccl = nccl_if_loaded();
        return "GPU " + std::to_string(device_) + ": " + properties_.name + " (sm_" +
               std::to_string(properties_.major) + std::to_string(properties_.minor) + ", " +
               std::to_string(properties_.totalGlobalMem >> 30) + " GiB), " +
               gpu::precisions().name(options_.precision) + "; " + options_.libraries + ", " +
               (nccl ? "NCCL " + nccl->version + " (" + nccl->path + ")" : "NCCL not loaded (no step uses it)");
    }

    nn::Backend& backend() override { return backend_; }
    void bind(nn::ParameterStore& store) override {
        context_.parameters().bind(store, context_.compute_type(), context_.stream());
    }
    void upload_values() override { context_.parameters().upload_values(); }
    void upload_learned_values() override { context_.parameters().upload_learned_values(); }
    // Nothing of the store's memory is held: copies go through the module's own staging buffer.
    void unbind() override {}
    void download_values() override { context_.parameters().download_values(); }
    void download_grads() override { context_.parameters().download_grads(); }
    void upload_grads() override { context_.parameters().upload_grads(); }

    bool finish_gradients(std::int64_t step) override {
        context_.profile().step_done();
        if (context_.compute_type() != tensor::DType::f16) return true;
        auto stream = context_.stream();
        // The scale this step's backward pass multiplied by: a late verdict below changes the
        // next step's, not this one's.
        float used = scaler_.scale();
        check(cudaMemsetAsync(nonfinite_, 0, sizeof(int), stream), "cudaMemsetAsync");
        auto& params = context_.parameters();
        kernels::scale_and_check(params.grads(), params.learned_elements(), 1.0f / used, nonfinite_, stream);
        if (device_skips_) {
            // The optimizer kernel skips an overflowed step by the flag itself; the host reads
            // it a step late, from a copy long finished by then, and nothing waits here.
            settle_late_verdict();
            check(cudaMemcpyAsync(late_flag_, nonfinite_, sizeof(int), cudaMemcpyDeviceToHost, stream),
                  "copying the overflow flag");
            check(cudaEventRecord(late_ready_, stream), "cudaEventRecord");
            late_step_ = step;
            late_used_ = used;
            return true;
        }
        int overflow = 0;
        check(cudaMemcpyAsync(&overflow, nonfinite_, sizeof overflow, cudaMemcpyDeviceToHost, stream),
              "reading the overflow flag");
        context_.synchronize("reading the overflow flag");
        record(overflow != 0, used);
        return !overflow;
    }
    std::vector<gpu::LateOverflow> late_overflows() override { return std::exchange(late_overflows_, {}); }
    gpu::LossScale loss_scale() override {
        if (context_.compute_type() != tensor::DType::f16) return {};
        settle_late_verdict();  // a checkpoint holds the scale after the last step's verdict
        return scaler_.state();
    }
    void restore_loss_scale(gpu::LossScale state) override {
        if (context_.compute_type() != tensor::DType::f16) return;
        scaler_.restore(state);
        context_.loss_scale = scaler_.scale();
    }

    std::unique_ptr<optim::Optimizer> device_optimizer(const optim::OptimizerConfig& config,
                                                       nn::ParameterStore& store) override {
        auto optimizer = std::make_unique<DeviceOptimizer>(config, store, context_);  // every kind runs on the GPU
        if (context_.compute_type() == tensor::DType::f16 && options_.speedups.overflow_on_device) {
            if (!late_flag_) {
                void* pinned = nullptr;
                check(cudaMallocHost(&pinned, sizeof(int)), "cudaMallocHost (the overflow flag's copy)");
                late_flag_ = static_cast<int*>(pinned);
                check(cudaEventCreateWithFlags(&late_ready_, cudaEventDisableTiming), "cudaEventCreate");
            }
            optimizer->skip_when_set(nonfinite_);
            device_skips_ = true;
        }
        return optimizer;
    }

    std::unique_ptr<gpu::DeviceAllreduce> nccl_allreduce(const comm::Identity& identity,
                                                         const ShareFromRank0& from_rank0,
                                                         std::size_t bucket_bytes) override {
        return std::make_unique<NcclAllreduce>(context_, identity, from_rank0, bucket_bytes, options_.library_folders);
    }

    const gpu::Speedups& speedups() const override { return options_.speedups; }
    std::string profile_report() override { return context_.profile().report(); }
    std::string pci_bus_id() const override {
        char id[32] = {};
        check(cudaDeviceGetPCIBusId(id, sizeof id, device_), "cudaDeviceGetPCIBusId");
        return id;
    }
    std::string nccl_unavailable() override {
        try {
            nccl(options_.library_folders);
            return {};
        } catch (const std::exception& e) {
            return e.what();
        }
    }

    void synchronize() override { context_.synchronize("waiting for the GPU"); }
    std::size_t peak_memory_bytes() const override {
        // The pool's peak (activations, workspace) plus the parameters, gradients and
        // optimizer state outside it; like PyTorch's max_memory_reserved, without the CUDA
        // context itself.
        return context_.pool().peak_bytes() + device_allocated_bytes();
    }

private:
    void record(bool overflowed, float used) {
        scaler_.record(overflowed, used);
        context_.loss_scale = scaler_.scale();
    }
    // The verdict of the step whose flag was copied last, taken in once.
    void settle_late_verdict() {
        if (late_step_ < 0) return;
        check(cudaEventSynchronize(late_ready_), "reading the overflow flag");
        record(*late_flag_ != 0, late_used_);
        if (*late_flag_) late_overflows_.push_back({late_step_, scaler_.scale()});
        late_step_ = -1;
    }

    gpu::AcceleratorOptions options_;
    int device_ = 0;
    cudaDeviceProp properties_{};
    CudaContext context_;
    CudaBackend backend_;
    int* nonfinite_ = nullptr;
    // fp16's loss scale; with the overflow-on-device speed item, the flag's pinned host copy,
    // the event after it, the step it belongs to (-1: taken in) and the overflows found late.
    gpu::LossScaler scaler_;
    bool device_skips_ = false;
    int* late_flag_ = nullptr;
    cudaEvent_t late_ready_ = nullptr;
    std::int64_t late_step_ = -1;
    float late_used_ = 0;  // the scale that step's backward pass used
    std::vector<gpu::LateOverflow> late_overflows_;
};

}  // namespace

}  // namespace trellis::cuda

extern "C" trellis::gpu::Accelerator* trellis_create_cuda_accelerator(const trellis::gpu::AcceleratorOptions& options,
                                                                      trellis::gpu::CreateFailure& failure) {
    // The program asked the driver first; the runtime may still disagree (a driver older than
    // the runtime linked in says cudaErrorInsufficientDriver): that is an error, not "no GPU".
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
        failure.no_device = status == cudaErrorNoDevice || (status == cudaSuccess && count == 0);
        failure.message = std::string(failure.no_device ? "" : "CUDA runtime: cudaGetDeviceCount: ") +
                          (status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device is visible") +
                          " (CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." +
                          std::to_string(CUDART_VERSION % 1000 / 10) + " in the module)" +
                          (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string());
        return nullptr;
    }
    try {
        // With the binding, CUDA_VISIBLE_DEVICES shows one GPU, the closest to this rank;
        // without it, ranks on a node share the visible GPUs by local rank.
        int device = options.local_rank % count;
        trellis::cuda::check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
        return new trellis::cuda::CudaAccelerator(options);
    } catch (const std::exception& e) {
        failure.message = e.what();
        return nullptr;
    }
}
