// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/convolution.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/error.hpp"
#include "trainer/cuda/check.hpp"
#include "trainer/cuda/kernels.hpp"
#include "trainer/gpu/algorithm_choice.hpp"

namespace trellis::cuda {

namespace {

constexpr int candidates = 8;

// cuDNN has no kernel for this layer's shape, type or layout: the layer then computes in f32.
// A CudaError, so that a refusal in f32 too reaches the program's handler like any other.
struct Refused : CudaError {
    using CudaError::CudaError;
};

// The NOT_SUPPORTED codes that are about the layer. The others (an incompatible driver or
// runtime, a missing sub-library or prerequisite) would refuse f32 alike: they are errors.
bool refuses_the_layer(cudnnStatus_t status) {
    switch (status) {
    case CUDNN_STATUS_NOT_SUPPORTED:
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN:
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE:
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT:
    case CUDNN_STATUS_NOT_SUPPORTED_PADDING: return true;
    default: return false;
    }
}

void check_supported(cudnnStatus_t status, const std::string& what) {
    if (refuses_the_layer(status)) throw Refused("cuDNN: " + what + ": " + cudnnGetErrorString(status));
    check(status, what);
}

// The algorithm kept (gpu/algorithm_choice.hpp's rule) from cuDNN's results, sorted by time.
template <typename Result>
CudaContext::Algorithm fastest(const Result* results, int count, std::size_t limit, bool deterministic,
                               const std::string& what, const std::string& layer) {
    std::vector<gpu::BenchmarkedAlgorithm> benchmarked;
    for (int i = 0; i < count; ++i)
        benchmarked.push_back({results[i].status == CUDNN_STATUS_SUCCESS, results[i].memory,
                               results[i].determinism == CUDNN_DETERMINISTIC});
    auto choice = gpu::choose_algorithm(benchmarked, limit, deterministic);
    // None ran: refused when every one was refused for the layer's sake, else the first
    // reason (none fitting the workspace falls through to its own message).
    bool any_ran = std::any_of(benchmarked.begin(), benchmarked.end(), [](const auto& b) { return b.ran; });
    bool all_refused =
        std::all_of(results, results + count, [](const Result& r) { return refuses_the_layer(r.status); });
    if (!any_ran && all_refused) throw Refused("cuDNN: " + layer + ": no " + what + " algorithm for this layer");
    if (!any_ran && count > 0 && results[0].status != CUDNN_STATUS_ALLOC_FAILED)
        check(results[0].status, layer + ": benchmarking " + what + " algorithms");
    if (choice.index < 0)
        throw CudaError("cuDNN: " + layer + ": no " + what + " algorithm fits " + std::to_string(limit >> 20) +
                        " MiB of workspace (raise --cudnn-workspace-mb)");
    if (choice.nondeterministic_fallback)
        std::fprintf(stderr,
                     "%s: cuDNN has no deterministic %s algorithm for this shape and type; using the "
                     "fastest, which is not deterministic\n",
                     layer.c_str(), what.c_str());
    const auto& r = results[choice.index];
    return {int(r.algo), r.mathType, r.memory};
}

}  // namespace

template <typename Result, typename Find>
int Convolution::choose(const char* direction, const std::string& what, Find find) {
    auto& chosen = context_.algorithms()[key(direction)];
    if (chosen.algo < 0) {
        std::size_t limit = context_.workspace_limit();
        check(cudnnSetConvolutionMathType(conv_desc_, math_), spec_.name + ": math type");
        Result results[candidates];
        int count = 0;
        check_supported(find(results, &count, context_.workspace(limit), limit),
                        spec_.name + ": benchmarking " + what + " algorithms");
        chosen = fastest(results, count, limit, context_.deterministic(), what, spec_.name);
    }
    check(cudnnSetConvolutionMathType(conv_desc_, chosen.math), spec_.name + ": math type");
    return chosen.algo;
}

// The chosen algorithm's workspace: as cuDNN's benchmark measured it (the workspace-cache
// speed item), or asked of cuDNN at every call (its legacy calls cost host time).
template <typename Query>
std::size_t Convolution::workspace(const char* direction, const char* what, Query query) {
    if (context_.speedups().workspace_cache) return context_.algorithms()[key(direction)].workspace;
    std::size_t bytes = 0;
    check(query(&bytes), spec_.name + ": " + what + " workspace");
    return bytes;
}

Convolution::Convolution(CudaContext& context, const nn::ConvolutionSpec& spec)
    : context_(context), parameters_(spec), spec_(parameters_.spec) {
    check(cudnnCreateFilterDescriptor(&w_desc_), "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv_desc_), "cudnnCreateConvolutionDescriptor");
}

Convolution::~Convolution() {
    cudnnDestroyFilterDescriptor(w_desc_);
    cudnnDestroyConvolutionDescriptor(conv_desc_);
}

void Convolution::collect(nn::ParameterStore& store) {
    parameters_.collect(store);
    context_.parameters().hold_as_ohwi(parameters_.weight);
}

nn::TensorSpec Convolution::setup(const nn::TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    output_shape_ = parameters_.output_shape(input.shape);
    input_shape_ = input.shape;
    type_ = context_.compute_type();
    window_ = end_padding_.setup(spec_.window.resolved(input_shape_[2], input_shape_[3]), input_shape_, spec_.name);
    describe(type_);
    return context_.spec(output_shape_, type_);
}

void Convolution::describe(tensor::DType type) {
    conv_type_ = type;
    x_desc_ = TensorDescriptor(end_padding_.shape(), type);
    y_desc_ = TensorDescriptor(output_shape_, type);
    check(cudnnSetFilter4dDescriptor(w_desc_, cudnn_type(type), CUDNN_TENSOR_NHWC, spec_.out_channels,
                                     spec_.in_channels, window_.kernel_h, window_.kernel_w),
          spec_.name + ": filter descriptor");
    check(cudnnSetConvolution2dDescriptor(conv_desc_, window_.padding.top, window_.padding.left, window_.stride,
                                          window_.stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          spec_.name + ": convolution descriptor");
    // Tensor cores for bf16/f16; f32 may use TF32 unless runs must be deterministic.
    math_ = type == tensor::DType::f32 ? (context_.deterministic() ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH)
                                       : CUDNN_TENSOR_OP_MATH;
    check(cudnnSetConvolutionMathType(conv_desc_, math_), spec_.name + ": math type");
}

// cuDNN refused the layer in bf16/f16 (channel counts that are not multiples of 8 in NHWC can
// be): from now on it converts its input and output and computes in f32 from the master
// weights, its weight gradient written in f32 directly.
bool Convolution::fall_back_to_f32(const std::string& refused) {
    if (conv_type_ == tensor::DType::f32) return false;
    std::fprintf(stderr, "%s: this layer computes in f32, not %s (%d -> %d channels): %s\n", spec_.name.c_str(),
                 std::string(tensor::name(conv_type_)).c_str(), spec_.in_channels, spec_.out_channels, refused.c_str());
    describe(tensor::DType::f32);
    return true;
}

tensor::Tensor Convolution::in_conv_type(const tensor::Tensor& t) {
    if (t.dtype() == conv_type_) return t;
    auto converted = context_.allocate(t.shape(), conv_type_);
    kernels::convert(t.data(), t.dtype(), converted.data(), conv_type_, std::size_t(t.shape().elements()), 1.0f,
                     context_.stream());
    return converted;
}

tensor::Tensor Convolution::in_type(const tensor::Tensor& t, tensor::DType type) {
    if (t.dtype() == type) return t;
    auto converted = context_.allocate(t.shape(), type);
    kernels::convert(t.data(), t.dtype(), converted.data(), type, std::size_t(t.shape().elements()), 1.0f,
                     context_.stream());
    return converted;
}

std::string Convolution::key(const char* direction) const {
    return std::string(direction) + " " + std::string(tensor::name(conv_type_)) + " " + input_shape_.str() + " " +
           window_.str() + " o" + std::to_string(spec_.out_channels);
}

const void* Convolution::weights() const {
    auto& params = context_.parameters();
    return conv_type_ == type_ ? params.low_value(parameters_.weight) : params.value(parameters_.weight);
}

tensor::Tensor Convolution::forward(const tensor::Tensor& given, nn::Mode mode) {
    auto timed = context_.profile().time("convolution forward", context_.stream());
    try {
        return convolve(given, mode);
    } catch (const Refused& refused) {
        if (!fall_back_to_f32(refused.what())) throw;
    }
    return convolve(given, mode);
}

tensor::Tensor Convolution::convolve(const tensor::Tensor& given, nn::Mode mode) {
    auto& params = context_.parameters();
    auto padded = end_padding_.needed() ? end_padding_.pad(context_, given, type_, 0.0f) : given;
    auto input = in_conv_type(padded);
    const void* w = weights();
    auto output = context_.allocate(output_shape_, conv_type_);
    auto algo = cudnnConvolutionFwdAlgo_t(choose<cudnnConvolutionFwdAlgoPerf_t>(
        "forward", "forward convolution", [&](auto* results, int* count, void* workspace, std::size_t bytes) {
            return cudnnFindConvolutionForwardAlgorithmEx(context_.cudnn(), x_desc_, input.data(), w_desc_, w,
                                                          conv_desc_, y_desc_, output.data(), candidates, count,
                                                          results, workspace, bytes);
        }));
    std::size_t bytes = workspace("forward", "forward", [&](std::size_t* size) {
        return cudnnGetConvolutionForwardWorkspaceSize(context_.cudnn(), x_desc_, w_desc_, conv_desc_, y_desc_, algo,
                                                       size);
    });
    float one = 1, zero = 0;
    check_supported(cudnnConvolutionForward(context_.cudnn(), &one, x_desc_, input.data(), w_desc_, w, conv_desc_, algo,
                                            context_.workspace(bytes), bytes, &zero, y_desc_, output.data()),
                    spec_.name + ": forward");
    if (spec_.bias)
        kernels::add_channel_bias(output.data(), conv_type_, params.value(parameters_.bias), output_rows(),
                                  spec_.out_channels, context_.stream());
    if (mode == nn::Mode::train) input_ = input;
    return in_type(output, type_);
}

tensor::Tensor Convolution::backward(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("convolution backward", context_.stream());
    try {
        return backward_in_conv_type(output_grad);
    } catch (const Refused& refused) {
        if (!fall_back_to_f32(refused.what())) throw;
    }
    return backward_in_conv_type(output_grad);
}

tensor::Tensor Convolution::backward_in_conv_type(const tensor::Tensor& given_grad) {
    auto& params = context_.parameters();
    auto cudnn = context_.cudnn();
    float one = 1, zero = 0;
    auto output_grad = in_conv_type(given_grad);
    auto input = in_conv_type(input_);

    // The weight gradient: in f32 directly where the layer computes in f32; under mixed
    // precision into the low-precision gradients, then widened into the f32 gradients the
    // optimizer and the allreduce read.
    bool widen = conv_type_ != tensor::DType::f32;
    void* dw = widen ? params.low_grad(parameters_.weight) : params.grad(parameters_.weight);
    auto falgo = cudnnConvolutionBwdFilterAlgo_t(choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
        "filter", "weight-gradient", [&](auto* results, int* count, void* workspace, std::size_t bytes) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn, x_desc_, input.data(), y_desc_,
                                                                 output_grad.data(), conv_desc_, w_desc_, dw,
                                                                 candidates, count, results, workspace, bytes);
        }));
    std::size_t bytes = workspace("filter", "weight-gradient", [&](std::size_t* size) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn, x_desc_, y_desc_, conv_desc_, w_desc_, falgo,
                                                              size);
    });
    check_supported(
        cudnnConvolutionBackwardFilter(cudnn, &one, x_desc_, input.data(), y_desc_, output_grad.data(), conv_desc_,
                                       falgo, context_.workspace(bytes), bytes, &zero, w_desc_, dw),
        spec_.name + ": weight gradient");
    if (widen)
        kernels::convert(dw, conv_type_, params.grad(parameters_.weight), tensor::DType::f32,
                         std::size_t(parameters_.weight.elements()), 1.0f, context_.stream());
    if (spec_.bias) {
        auto partial = context_.allocate(
            tensor::Shape{std::int64_t(kernels::channel_gradient_blocks(output_rows())) * spec_.out_channels},
            tensor::DType::f32);
        kernels::channel_bias_gradient(output_grad.data(), conv_type_, params.grad(parameters_.bias), output_rows(),
                                       spec_.out_channels, partial.f32(), context_.stream());
    }

    tensor::Tensor input_grad;
    if (input_grad_) {
        input_grad = context_.allocate(end_padding_.shape(), conv_type_);
        const void* w = weights();
        auto dalgo = cudnnConvolutionBwdDataAlgo_t(choose<cudnnConvolutionBwdDataAlgoPerf_t>(
            "data", "input-gradient", [&](auto* results, int* count, void* workspace, std::size_t bytes) {
                return cudnnFindConvolutionBackwardDataAlgorithmEx(cudnn, w_desc_, w, y_desc_, output_grad.data(),
                                                                   conv_desc_, x_desc_, input_grad.data(), candidates,
                                                                   count, results, workspace, bytes);
            }));
        bytes = workspace("data", "input-gradient", [&](std::size_t* size) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn, w_desc_, y_desc_, conv_desc_, x_desc_, dalgo,
                                                                size);
        });
        check_supported(
            cudnnConvolutionBackwardData(cudnn, &one, w_desc_, w, y_desc_, output_grad.data(), conv_desc_, dalgo,
                                         context_.workspace(bytes), bytes, &zero, x_desc_, input_grad.data()),
            spec_.name + ": input gradient");
        input_grad = in_type(input_grad, type_);
        if (end_padding_.needed()) input_grad = end_padding_.crop(context_, input_grad, type_);
    }
    input_ = {};
    return input_grad;
}

}  // namespace trellis::cuda
