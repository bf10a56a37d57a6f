#include "trainer/nn/cuda/convolution.hpp"

#include <algorithm>
#include <cmath>

#include "trainer/nn/cuda/cuda_check.hpp"
#include "trainer/nn/cuda/kernels.hpp"

namespace trellis::nn::cuda {

namespace {

constexpr int candidates = 8;

// The fastest of cuDNN's benchmarked results that succeeded, fits, and is deterministic
// when asked; results come sorted by time.
template <typename Result>
CudaContext::Algorithm fastest(const Result* results, int count, std::size_t limit, bool deterministic,
                               const std::string& what) {
    for (int i = 0; i < count; ++i) {
        const auto& r = results[i];
        if (r.status != CUDNN_STATUS_SUCCESS || r.memory > limit) continue;
        if (deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
        return {int(r.algo), r.mathType};
    }
    throw CudaError("cuDNN: no " + what + " algorithm fits " + std::to_string(limit >> 20) +
                    " MiB of workspace" + (deterministic ? " deterministically" : "") +
                    " (raise --cudnn-workspace-mb)");
}

}  // namespace

Convolution::Convolution(CudaContext& context, ConvolutionSpec spec) : context_(context), spec_(std::move(spec)) {
    weight_.name = spec_.name + ".weight";
    weight_.shape = tensor::Shape{spec_.out_channels, spec_.in_channels, spec_.kernel, spec_.kernel};
    weight_.kind = ParameterKind::weight;
    check(cudnnCreateFilterDescriptor(&w_desc_), "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv_desc_), "cudnnCreateConvolutionDescriptor");
}

Convolution::~Convolution() {
    cudnnDestroyFilterDescriptor(w_desc_);
    cudnnDestroyConvolutionDescriptor(conv_desc_);
}

void Convolution::collect(ParameterStore& store) {
    store.add(weight_);
    context_.parameters().hold_as_ohwi(weight_);
}

void Convolution::initialize(std::mt19937_64& rng) {
    // He normal, fan-out mode, as the CPU backend (and torchvision) initialise.
    double fan_out = double(spec_.out_channels) * spec_.kernel * spec_.kernel;
    std::normal_distribution<float> normal(0.0f, float(std::sqrt(2.0 / fan_out)));
    for (std::int64_t i = 0; i < weight_.elements(); ++i) weight_.value[i] = normal(rng);
}

TensorSpec Convolution::setup(const TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    const auto& in = input.shape;
    if (in.rank() != 4 || in[1] != spec_.in_channels)
        throw std::invalid_argument(spec_.name + ": expects N x " + std::to_string(spec_.in_channels) +
                                    " x H x W input, got " + in.str());
    auto out_size = [&](std::int64_t size) { return (size + 2 * spec_.padding - spec_.kernel) / spec_.stride + 1; };
    input_shape_ = in;
    output_shape_ = tensor::Shape{in[0], spec_.out_channels, out_size(in[2]), out_size(in[3])};
    type_ = context_.compute_type();
    x_desc_ = TensorDescriptor(input_shape_, type_);
    y_desc_ = TensorDescriptor(output_shape_, type_);
    check(cudnnSetFilter4dDescriptor(w_desc_, cudnn_type(type_), CUDNN_TENSOR_NHWC, spec_.out_channels,
                                      spec_.in_channels, spec_.kernel, spec_.kernel),
          spec_.name + ": filter descriptor");
    check(cudnnSetConvolution2dDescriptor(conv_desc_, spec_.padding, spec_.padding, spec_.stride, spec_.stride, 1, 1,
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          spec_.name + ": convolution descriptor");
    // Tensor cores for bf16/f16; f32 may use TF32 unless runs must be deterministic.
    math_ = type_ == tensor::DType::f32 ? (context_.deterministic() ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH)
                                       : CUDNN_TENSOR_OP_MATH;
    check(cudnnSetConvolutionMathType(conv_desc_, math_), spec_.name + ": math type");
    return context_.spec(output_shape_, type_);
}

std::string Convolution::key(const char* direction) const {
    return std::string(direction) + " " + input_shape_.str() + " k" + std::to_string(spec_.kernel) + " s" +
           std::to_string(spec_.stride) + " p" + std::to_string(spec_.padding) + " o" +
           std::to_string(spec_.out_channels);
}

tensor::Tensor Convolution::forward(const tensor::Tensor& input, Mode mode) {
    auto& params = context_.parameters();
    const void* w = params.low_value(weight_);
    auto output = context_.allocate(output_shape_, type_);
    auto& chosen = context_.algorithms()[key("forward")];
    std::size_t limit = context_.workspace_limit();
    if (chosen.algo < 0) {
        check(cudnnSetConvolutionMathType(conv_desc_, math_), spec_.name + ": math type");
        cudnnConvolutionFwdAlgoPerf_t results[candidates];
        int count = 0;
        check(cudnnFindConvolutionForwardAlgorithmEx(context_.cudnn(), x_desc_, input.data(), w_desc_, w, conv_desc_,
                                                     y_desc_, output.data(), candidates, &count, results,
                                                     context_.workspace(limit), limit),
              spec_.name + ": benchmarking forward algorithms");
        chosen = fastest(results, count, limit, context_.deterministic(), "forward convolution");
    }
    auto algo = cudnnConvolutionFwdAlgo_t(chosen.algo);
    check(cudnnSetConvolutionMathType(conv_desc_, chosen.math), spec_.name + ": math type");
    std::size_t bytes = 0;
    check(cudnnGetConvolutionForwardWorkspaceSize(context_.cudnn(), x_desc_, w_desc_, conv_desc_, y_desc_, algo, &bytes),
          spec_.name + ": forward workspace");
    float one = 1, zero = 0;
    check(cudnnConvolutionForward(context_.cudnn(), &one, x_desc_, input.data(), w_desc_, w, conv_desc_, algo,
                                  context_.workspace(bytes), bytes, &zero, y_desc_, output.data()),
          spec_.name + ": forward");
    if (mode == Mode::train) input_ = input;
    return output;
}

tensor::Tensor Convolution::backward(const tensor::Tensor& output_grad) {
    auto& params = context_.parameters();
    auto cudnn = context_.cudnn();
    std::size_t limit = context_.workspace_limit();
    float one = 1, zero = 0;

    // The weight gradient, into the low-precision gradients under mixed precision and then
    // widened into the f32 gradients the optimizer and the allreduce read.
    void* dw = params.low_grad(weight_);
    auto& filter_algo = context_.algorithms()[key("filter")];
    if (filter_algo.algo < 0) {
        check(cudnnSetConvolutionMathType(conv_desc_, math_), spec_.name + ": math type");
        cudnnConvolutionBwdFilterAlgoPerf_t results[candidates];
        int count = 0;
        check(cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn, x_desc_, input_.data(), y_desc_, output_grad.data(),
                                                            conv_desc_, w_desc_, dw, candidates, &count, results,
                                                            context_.workspace(limit), limit),
              spec_.name + ": benchmarking weight-gradient algorithms");
        filter_algo = fastest(results, count, limit, context_.deterministic(), "weight-gradient");
    }
    auto falgo = cudnnConvolutionBwdFilterAlgo_t(filter_algo.algo);
    check(cudnnSetConvolutionMathType(conv_desc_, filter_algo.math), spec_.name + ": math type");
    std::size_t bytes = 0;
    check(cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn, x_desc_, y_desc_, conv_desc_, w_desc_, falgo, &bytes),
          spec_.name + ": weight-gradient workspace");
    check(cudnnConvolutionBackwardFilter(cudnn, &one, x_desc_, input_.data(), y_desc_, output_grad.data(), conv_desc_,
                                         falgo, context_.workspace(bytes), bytes, &zero, w_desc_, dw),
          spec_.name + ": weight gradient");
    if (params.mixed())
        kernels::convert(dw, type_, params.grad(weight_), tensor::DType::f32, std::size_t(weight_.elements()), 1.0f,
                         context_.stream());

    tensor::Tensor input_grad;
    if (input_grad_) {
        input_grad = context_.allocate(input_shape_, type_);
        auto& data_algo = context_.algorithms()[key("data")];
        if (data_algo.algo < 0) {
            check(cudnnSetConvolutionMathType(conv_desc_, math_), spec_.name + ": math type");
            cudnnConvolutionBwdDataAlgoPerf_t results[candidates];
            int count = 0;
            check(cudnnFindConvolutionBackwardDataAlgorithmEx(cudnn, w_desc_, params.low_value(weight_), y_desc_,
                                                              output_grad.data(), conv_desc_, x_desc_,
                                                              input_grad.data(), candidates, &count, results,
                                                              context_.workspace(limit), limit),
                  spec_.name + ": benchmarking input-gradient algorithms");
            data_algo = fastest(results, count, limit, context_.deterministic(), "input-gradient");
        }
        auto dalgo = cudnnConvolutionBwdDataAlgo_t(data_algo.algo);
        check(cudnnSetConvolutionMathType(conv_desc_, data_algo.math), spec_.name + ": math type");
        check(cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn, w_desc_, y_desc_, conv_desc_, x_desc_, dalgo, &bytes),
              spec_.name + ": input-gradient workspace");
        check(cudnnConvolutionBackwardData(cudnn, &one, w_desc_, params.low_value(weight_), y_desc_, output_grad.data(),
                                           conv_desc_, dalgo, context_.workspace(bytes), bytes, &zero, x_desc_,
                                           input_grad.data()),
              spec_.name + ": input gradient");
    }
    input_ = {};
    return input_grad;
}

}  // namespace trellis::nn::cuda
