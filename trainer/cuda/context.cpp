// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/context.hpp"

#include <chrono>
#include <thread>

#include "trainer/cuda/check.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

std::string DeviceLayout::name() const {
    return std::string(nhwc() ? "nhwc " : "plain ") + std::string(tensor::name(type_));
}

cudnnDataType_t cudnn_type(tensor::DType type) {
    switch (type) {
    case tensor::DType::bf16: return CUDNN_DATA_BFLOAT16;
    case tensor::DType::f16: return CUDNN_DATA_HALF;
    default: return CUDNN_DATA_FLOAT;
    }
}

TensorDescriptor::TensorDescriptor(const tensor::Shape& s, tensor::DType type) {
    check(cudnnCreateTensorDescriptor(&desc_), "cudnnCreateTensorDescriptor");
    int n = int(s[0]), c = int(s[1]), h = s.rank() == 4 ? int(s[2]) : 1, w = s.rank() == 4 ? int(s[3]) : 1;
    check(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NHWC, cudnn_type(type), n, c, h, w),
          "tensor descriptor " + s.str());
}

TensorDescriptor& TensorDescriptor::operator=(TensorDescriptor&& other) noexcept {
    std::swap(desc_, other.desc_);
    return *this;
}

TensorDescriptor::~TensorDescriptor() {
    if (desc_) cudnnDestroyTensorDescriptor(desc_);
}

CudaContext::CudaContext(tensor::DType compute, std::size_t workspace_limit, bool deterministic, gpu::Speedups speedups,
                         bool profile)
    : compute_(compute),
      workspace_limit_(workspace_limit),
      deterministic_(deterministic),
      speedups_(speedups),
      profile_(profile) {
    try {
        make_handles();
    } catch (...) {
        release();  // a constructor that throws runs no destructor
        throw;
    }
    kernels::use_vector_kernels(speedups.vector_kernels);
}

void CudaContext::make_handles() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudnnCreate(&cudnn_), "cudnnCreate");
    check(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
    check(cublasCreate(&cublas_), "cublasCreate");
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    // The f32 head may use TF32 tensor cores, as the issue allows and PyTorch does with
    // allow_tf32; deterministic runs keep plain f32.
    if (!deterministic_) check(cublasSetMathMode(cublas_, CUBLAS_TF32_TENSOR_OP_MATH), "cublasSetMathMode");
    check(cudaEventCreateWithFlags(&synchronized_, cudaEventDisableTiming), "cudaEventCreate");
}

void CudaContext::wait(cudaEvent_t event, const std::string& what) {
    if (!nccl_check_) {
        check(cudaEventSynchronize(event), what);
        return;
    }
    for (;;) {
        cudaError_t status = cudaEventQuery(event);
        if (status == cudaSuccess) return;
        if (status != cudaErrorNotReady) check(status, what);
        nccl_check_();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

void CudaContext::synchronize(const std::string& what) {
    check(cudaEventRecord(synchronized_, stream_), what);
    wait(synchronized_, what);
}

CudaContext::~CudaContext() { release(); }

void CudaContext::release() {
    if (stream_) cudaStreamSynchronize(stream_);
    if (synchronized_) cudaEventDestroy(synchronized_);
    workspace_.reset();
    pool_.release_free();
    if (cublas_) cublasDestroy(cublas_);
    if (cudnn_) cudnnDestroy(cudnn_);
    if (stream_) cudaStreamDestroy(stream_);
    synchronized_ = nullptr, cublas_ = nullptr, cudnn_ = nullptr, stream_ = nullptr;
}

tensor::Tensor CudaContext::allocate(const tensor::Shape& shape, tensor::DType type) {
    auto layout = std::make_shared<DeviceLayout>(shape, type);
    auto memory = pool_.acquire(layout->bytes());
    return tensor::Tensor(shape, type, layout, memory, tensor::Device::cuda);
}

nn::TensorSpec CudaContext::spec(const tensor::Shape& shape, tensor::DType type) const {
    return {shape, std::make_shared<DeviceLayout>(shape, type)};
}

void* CudaContext::workspace(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    if (bytes > workspace_bytes_) {
        workspace_ = pool_.acquire(bytes);
        workspace_bytes_ = bytes;
    }
    return workspace_.get();
}

tensor::DType type_of(const nn::TensorSpec& spec) {
    auto device = std::dynamic_pointer_cast<const DeviceLayout>(spec.layout);
    return device ? device->type() : tensor::DType::f32;
}

}  // namespace trellis::cuda
