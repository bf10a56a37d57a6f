// The module's entry point: opens the GPU, checks what the process can use, and gives the
// trainer the CUDA backend with its device parameters, optimizer and NCCL allreduce.
#include <unistd.h>

#include <cstdlib>

#include "common/error.hpp"
#include "trainer/gpu/accelerator.hpp"
#include "trainer/cuda/cuda_backend.hpp"
#include "trainer/cuda/cuda_check.hpp"
#include "trainer/cuda/device_optimizer.hpp"
#include "trainer/cuda/kernels.hpp"
#include "trainer/cuda/nccl_allreduce.hpp"
#include "trainer/cuda/nccl_library.hpp"

namespace trellis::nn::cuda {

namespace {

tensor::DType precision_type(gpu::Precision precision) {
    switch (precision) {
        case gpu::Precision::bf16: return tensor::DType::bf16;
        case gpu::Precision::fp16: return tensor::DType::f16;
        case gpu::Precision::fp32: break;
    }
    return tensor::DType::f32;
}

// fp16 loss scaling as in Micikevicius et al.: start high, halve on overflow, double after a
// run of finite steps.
constexpr float initial_loss_scale = 65536.0f;
constexpr int growth_interval = 2000;
constexpr float max_loss_scale = 16777216.0f;  // 2^24

class CudaAccelerator : public gpu::Accelerator {
public:
    explicit CudaAccelerator(const gpu::AcceleratorOptions& options)
        : options_(options),
          context_(precision_type(options.precision), options.workspace_bytes, options.deterministic,
                   options.speedups, options.profile),
          backend_(context_) {
        check(cudaGetDevice(&device_), "cudaGetDevice");
        check(cudaGetDeviceProperties(&properties_, device_), "cudaGetDeviceProperties");
        nonfinite_ = static_cast<int*>(device_allocate(sizeof(int), "the overflow flag"));
        if (context_.compute_type() == tensor::DType::f16) context_.loss_scale = initial_loss_scale;
    }
    ~CudaAccelerator() override { cudaFree(nonfinite_); }

    // The libraries are those loaded, with the versions they report at run time.
    std::string description() const override {
        const NcclLibrary* nccl = nccl_if_loaded();
        return "GPU " + std::to_string(device_) + ": " + properties_.name + " (sm_" + std::to_string(properties_.major) +
               std::to_string(properties_.minor) + ", " + std::to_string(properties_.totalGlobalMem >> 30) + " GiB), " +
               gpu::precisions().name(options_.precision) + "; " + options_.libraries + ", " +
               (nccl ? "NCCL " + nccl->version + " (" + nccl->path + ")" : "NCCL not loaded (no step uses it)");
    }

    Backend& backend() override { return backend_; }
    void bind(ParameterStore& store) override {
        context_.parameters().bind(store, context_.compute_type(), context_.stream());
    }
    void upload_values() override { context_.parameters().upload_values(); }
    void upload_learned_values() override { context_.parameters().upload_learned_values(); }
    // Nothing of the store's memory is held: copies go through the module's own staging buffer.
    void unbind() override {}
    void download_values() override { context_.parameters().download_values(); }
    void download_grads() override { context_.parameters().download_grads(); }
    void upload_grads() override { context_.parameters().upload_grads(); }

    bool finish_gradients() override {
        context_.profile().step_done();
        if (context_.compute_type() != tensor::DType::f16) return true;
        auto stream = context_.stream();
        check(cudaMemsetAsync(nonfinite_, 0, sizeof(int), stream), "cudaMemsetAsync");
        auto& params = context_.parameters();
        kernels::scale_and_check(params.grads(), params.learned_elements(), 1.0f / context_.loss_scale, nonfinite_,
                                 stream);
        int overflow = 0;
        check(cudaMemcpyAsync(&overflow, nonfinite_, sizeof overflow, cudaMemcpyDeviceToHost, stream),
              "reading the overflow flag");
        context_.synchronize("reading the overflow flag");
        if (overflow) {
            context_.loss_scale = std::max(context_.loss_scale / 2, 1.0f);
            finite_steps_ = 0;
            return false;
        }
        if (++finite_steps_ % growth_interval == 0) context_.loss_scale = std::min(context_.loss_scale * 2, max_loss_scale);
        return true;
    }
    gpu::LossScale loss_scale() const override {
        if (context_.compute_type() != tensor::DType::f16) return {};
        return {context_.loss_scale, finite_steps_};
    }
    void restore_loss_scale(gpu::LossScale state) override {
        if (context_.compute_type() != tensor::DType::f16 || state.scale <= 0) return;
        context_.loss_scale = std::clamp(state.scale, 1.0f, max_loss_scale);
        finite_steps_ = state.finite_steps;
    }

    std::unique_ptr<optim::Optimizer> device_optimizer(const optim::OptimizerConfig& config,
                                                       ParameterStore& store) override {
        return std::make_unique<DeviceOptimizer>(config, store, context_);  // every kind runs on the GPU
    }

    std::unique_ptr<gpu::DeviceAllreduce> nccl_allreduce(const comm::Identity& identity, const ShareFromRank0& from_rank0,
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
    gpu::AcceleratorOptions options_;
    int device_ = 0;
    cudaDeviceProp properties_{};
    CudaContext context_;
    CudaBackend backend_;
    int* nonfinite_ = nullptr;
    std::int64_t finite_steps_ = 0;
};

}  // namespace

}  // namespace trellis::nn::cuda

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
        trellis::nn::cuda::check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
        return new trellis::nn::cuda::CudaAccelerator(options);
    } catch (const std::exception& e) {
        failure.message = e.what();
        return nullptr;
    }
}
