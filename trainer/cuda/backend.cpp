// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/backend.hpp"

#include <cstring>

#include "common/error.hpp"
#include "trainer/cuda/activations.hpp"
#include "trainer/cuda/batch_norm.hpp"
#include "trainer/cuda/channel_concat.hpp"
#include "trainer/cuda/convolution.hpp"
#include "trainer/cuda/check.hpp"
#include "trainer/cuda/fused_norm_join.hpp"
#include "trainer/cuda/kernels.hpp"
#include "trainer/cuda/linear.hpp"
#include "trainer/cuda/pooling.hpp"
#include "trainer/cuda/residual_join.hpp"

namespace trellis::cuda {

namespace {

// N x C x H x W <-> N x H x W x C on the host; 2-D and 1-D shapes are the same either way.
std::vector<float> reorder(const std::vector<float>& from, const tensor::Shape& s, bool to_nhwc) {
    if (s.rank() != 4) return from;
    std::int64_t n = s[0], c = s[1], hw = s[2] * s[3];
    std::vector<float> to(from.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < c; ++j)
            for (std::int64_t p = 0; p < hw; ++p) {
                std::size_t nchw = std::size_t((i * c + j) * hw + p), nhwc = std::size_t((i * hw + p) * c + j);
                if (to_nhwc)
                    to[nhwc] = from[nchw];
                else
                    to[nchw] = from[nhwc];
            }
    return to;
}

}  // namespace

CudaBackend::CudaBackend(CudaContext& context) : context_(context), loss_(context) {
    check(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "cudaStreamCreate (input copies)");
    for (int i = 0; i < 2; ++i) {
        check(cudaEventCreateWithFlags(&copied_[i], cudaEventDisableTiming), "cudaEventCreate");
        check(cudaEventCreateWithFlags(&consumed_[i], cudaEventDisableTiming), "cudaEventCreate");
    }
}

CudaBackend::~CudaBackend() {
    cudaStreamSynchronize(copy_stream_);
    cudaStreamSynchronize(context_.stream());
    for (int i = 0; i < 2; ++i) {
        cudaEventDestroy(copied_[i]);
        cudaEventDestroy(consumed_[i]);
        if (pinned_[i]) cudaFreeHost(pinned_[i]);
    }
    cudaStreamDestroy(copy_stream_);
}

nn::LayerPtr CudaBackend::convolution(const nn::ConvolutionSpec& spec) {
    return std::make_unique<Convolution>(context_, spec);
}

nn::LayerPtr CudaBackend::batch_norm(const nn::BatchNormSpec& spec) {
    return std::make_unique<BatchNorm>(context_, spec);
}

nn::LayerPtr CudaBackend::pooling(const nn::PoolingSpec& spec) { return std::make_unique<Pooling>(context_, spec); }

nn::LayerPtr CudaBackend::global_average_pool(const std::string& name) {
    return std::make_unique<GlobalAveragePool>(context_, name);
}

nn::LayerPtr CudaBackend::linear(const nn::LinearSpec& spec) { return std::make_unique<Linear>(context_, spec); }

std::unique_ptr<nn::ResidualJoin> CudaBackend::residual_join(const std::string& name) {
    return std::make_unique<ResidualJoin>(context_, name);
}

std::unique_ptr<nn::NormalizedJoin> CudaBackend::normalized_join(const nn::BatchNormSpec& norm,
                                                                 const std::string& name) {
    if (!context_.speedups().fused_norm_join) return nn::Backend::normalized_join(norm, name);
    return std::make_unique<FusedNormJoin>(context_, norm, name);
}

nn::LayerPtr CudaBackend::relu(const std::string& name) { return std::make_unique<Relu>(context_, name); }

nn::LayerPtr CudaBackend::dropout(const std::string& name, float keep, const nn::DropoutDraw& draw) {
    return std::make_unique<Dropout>(context_, name, keep, draw);
}

std::unique_ptr<nn::ChannelConcat> CudaBackend::channel_concat(const std::string& name) {
    return std::make_unique<ChannelConcat>(context_, name);
}

nn::TensorSpec CudaBackend::nhwc_spec(const tensor::Shape& nchw_shape) {
    return context_.spec(nchw_shape, context_.compute_type());
}

std::vector<float> CudaBackend::to_plain(const tensor::Tensor& t) {
    std::vector<float> values(std::size_t(t.shape().elements()));
    if (t.device() == tensor::Device::cpu) {
        std::memcpy(values.data(), t.data(), values.size() * 4);
        return values;
    }
    auto stream = context_.stream();
    tensor::Tensor wide = t;
    if (t.dtype() != tensor::DType::f32) {
        wide = context_.allocate(t.shape(), tensor::DType::f32);
        kernels::convert(t.data(), t.dtype(), wide.data(), tensor::DType::f32, values.size(), 1.0f, stream);
    }
    check(cudaMemcpyAsync(values.data(), wide.data(), values.size() * 4, cudaMemcpyDeviceToHost, stream),
          "copying a tensor to the host");
    check(cudaStreamSynchronize(stream), "copying a tensor to the host");
    return reorder(values, t.shape(), false);
}

tensor::Tensor CudaBackend::from_plain(const std::vector<float>& values, const nn::TensorSpec& spec) {
    auto type = type_of(spec);
    auto stream = context_.stream();
    auto ordered = reorder(values, spec.shape, true);
    auto wide = context_.allocate(spec.shape, tensor::DType::f32);
    check(cudaMemcpyAsync(wide.data(), ordered.data(), ordered.size() * 4, cudaMemcpyHostToDevice, stream),
          "copying a tensor to the device");
    // `ordered` is pageable host memory: the copy has finished reading it when this returns.
    check(cudaStreamSynchronize(stream), "copying a tensor to the device");
    if (type == tensor::DType::f32) return wide;
    auto narrow = context_.allocate(spec.shape, type);
    kernels::convert(wide.data(), tensor::DType::f32, narrow.data(), type, ordered.size(), 1.0f, stream);
    return narrow;
}

// Copies `bytes` of a host batch to the device through the next pinned buffer, on the copy
// stream, and makes the compute stream wait for it; returns the buffer's index. The caller
// converts staged_[i] on the compute stream, then records consumed_[i].
int CudaBackend::stage_copy(const void* host, std::size_t bytes) {
    if (bytes > staged_bytes_) {
        // The old buffers may still be read by a copy or a conversion: both streams drain first.
        check(cudaStreamSynchronize(copy_stream_), "waiting for the input copies");
        check(cudaStreamSynchronize(context_.stream()), "waiting for the GPU before larger input buffers");
        for (int i = 0; i < 2; ++i) {
            if (pinned_[i]) cudaFreeHost(pinned_[i]);
            pinned_[i] = nullptr;
            check(cudaMallocHost(&pinned_[i], bytes), "cudaMallocHost (input batches)");
            staged_[i] = context_.pool().acquire(bytes);
        }
        staged_bytes_ = bytes;
    }
    int i = next_;
    next_ ^= 1;
    // The copy of two batches ago has left this pinned buffer, and the compute stream has
    // converted what it brought; then this batch takes its place.
    check(cudaEventSynchronize(copied_[i]), "waiting for an input copy");
    std::memcpy(pinned_[i], host, bytes);
    check(cudaStreamWaitEvent(copy_stream_, consumed_[i], 0), "ordering input copies");
    check(cudaMemcpyAsync(staged_[i].get(), pinned_[i], bytes, cudaMemcpyHostToDevice, copy_stream_),
          "copying an input batch");
    check(cudaEventRecord(copied_[i], copy_stream_), "cudaEventRecord");
    check(cudaStreamWaitEvent(context_.stream(), copied_[i], 0), "waiting for an input batch");
    return i;
}

tensor::Tensor CudaBackend::stage_input(const tensor::Tensor& host_batch) {
    auto timed = context_.profile().time("input batch", context_.stream());
    if (host_batch.device() == tensor::Device::cuda) return host_batch;
    // The pipeline's batches are f32 N x H x W x C, whatever layout the spec names.
    auto elements = std::size_t(host_batch.shape().elements());
    int i = stage_copy(host_batch.data(), elements * 4);
    auto stream = context_.stream();
    auto input = context_.allocate(host_batch.shape(), context_.compute_type());
    kernels::convert(staged_[i].get(), tensor::DType::f32, input.data(), context_.compute_type(), elements, 1.0f,
                     stream);
    check(cudaEventRecord(consumed_[i], stream), "cudaEventRecord");
    return input;
}

tensor::Tensor CudaBackend::stage_pixels(const nn::PixelBytes& batch, const nn::TensorSpec& spec) {
    auto timed = context_.profile().time("input batch", context_.stream());
    auto elements = batch.values.size();
    if (static_cast<std::int64_t>(elements) != spec.shape.elements())
        throw UsageError("stage_pixels: " + std::to_string(elements) + " bytes for shape " + spec.shape.str());
    // A quarter of the bytes of a float batch crosses the bus; the normalisation runs here.
    int i = stage_copy(batch.values.data(), elements);
    auto stream = context_.stream();
    auto input = context_.allocate(spec.shape, context_.compute_type());
    kernels::normalise_pixels(reinterpret_cast<const std::uint8_t*>(staged_[i].get()), input.data(),
                              context_.compute_type(), elements, batch.gain.data(), batch.bias.data(), stream);
    check(cudaEventRecord(consumed_[i], stream), "cudaEventRecord");
    return input;
}

}  // namespace trellis::cuda
