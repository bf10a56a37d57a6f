// SPDX-License-Identifier: Apache-2.0
// What every CUDA layer shares: the cuDNN and cuBLAS handles on one compute stream, the
// device memory pool, the compute precision, the convolution workspace and the algorithm
// choices made once per shape, and the parameters' device copies.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "trainer/cuda/device_parameters.hpp"
#include "trainer/cuda/device_pool.hpp"
#include "trainer/cuda/layer_profile.hpp"
#include "trainer/gpu/speedups.hpp"
#include "trainer/nn/layer.hpp"

namespace trellis::cuda {

// Activations on the GPU: N x H x W x C (or plain N x C), of one element type.
class DeviceLayout : public tensor::Layout {
public:
    DeviceLayout(tensor::Shape shape, tensor::DType type) : shape_(std::move(shape)), type_(type) {}
    std::size_t bytes() const override { return std::size_t(shape_.elements()) * tensor::element_size(type_); }
    std::string name() const override;
    tensor::DType type() const { return type_; }
    bool nhwc() const { return shape_.rank() == 4; }

private:
    tensor::Shape shape_;
    tensor::DType type_;
};

// cuDNN's NHWC descriptor of an N x C x H x W shape (a 2-D N x C shape as N x C x 1 x 1).
class TensorDescriptor {
public:
    TensorDescriptor() = default;
    TensorDescriptor(const tensor::Shape& nchw, tensor::DType type);
    TensorDescriptor(const TensorDescriptor&) = delete;
    TensorDescriptor& operator=(TensorDescriptor&& other) noexcept;
    ~TensorDescriptor();
    operator cudnnTensorDescriptor_t() const { return desc_; }

private:
    cudnnTensorDescriptor_t desc_ = nullptr;
};

cudnnDataType_t cudnn_type(tensor::DType type);

class CudaContext {
public:
    CudaContext(tensor::DType compute, std::size_t workspace_limit, bool deterministic, gpu::Speedups speedups,
                bool profile);
    CudaContext(const CudaContext&) = delete;
    ~CudaContext();

    cudnnHandle_t cudnn() const { return cudnn_; }
    cublasHandle_t cublas() const { return cublas_; }
    cudaStream_t stream() const { return stream_; }
    tensor::DType compute_type() const { return compute_; }
    bool deterministic() const { return deterministic_; }
    const gpu::Speedups& speedups() const { return speedups_; }
    LayerProfile& profile() { return profile_; }
    std::size_t workspace_limit() const { return workspace_limit_; }
    DevicePool& pool() { return pool_; }
    const DevicePool& pool() const { return pool_; }
    DeviceParameters& parameters() { return parameters_; }

    // A device tensor of the given logical (NCHW) shape.
    tensor::Tensor allocate(const tensor::Shape& shape, tensor::DType type);
    nn::TensorSpec spec(const tensor::Shape& shape, tensor::DType type) const;
    // Scratch memory for cuDNN, valid until the next call.
    void* workspace(std::size_t bytes);

    // Convolution algorithms chosen by benchmarking, by shape and direction, with the math
    // type cuDNN timed them with.
    struct Algorithm {
        int algo = -1;  // -1: not chosen yet
        cudnnMathType_t math = CUDNN_DEFAULT_MATH;
        std::size_t workspace = 0;  // bytes, as the benchmark reported
    };
    std::map<std::string, Algorithm>& algorithms() { return algorithms_; }

    // The host's waits for the GPU. While NCCL runs, the compute stream waits on its
    // allreduce, and a dead peer shows only as NCCL's asynchronous error, never as the event:
    // every wait polls both, so that the rank stops with NCCL's reason instead of hanging.
    void wait(cudaEvent_t event, const std::string& what);
    void synchronize(const std::string& what);  // everything queued on the compute stream
    // Throws when NCCL has failed; empty when no communicator is up.
    void watch_nccl(std::function<void()> check) { nccl_check_ = std::move(check); }

    float loss_scale = 1.0f;

private:
    void make_handles();
    void release();  // what make_handles made, whatever of it there is

    tensor::DType compute_;
    std::size_t workspace_limit_;
    bool deterministic_;
    gpu::Speedups speedups_;
    LayerProfile profile_;
    cudnnHandle_t cudnn_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    cudaStream_t stream_ = nullptr;
    DevicePool pool_;
    DeviceParameters parameters_;
    std::shared_ptr<std::byte> workspace_;
    std::size_t workspace_bytes_ = 0;
    std::map<std::string, Algorithm> algorithms_;
    std::function<void()> nccl_check_;
    cudaEvent_t synchronized_ = nullptr;
};

// The element type of a device tensor or spec (f32 when it has no device layout).
tensor::DType type_of(const nn::TensorSpec& spec);

}  // namespace trellis::cuda
