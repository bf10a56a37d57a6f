#include "trainer/nn/cuda/linear.hpp"

#include <cmath>

#include "trainer/nn/cuda/cuda_check.hpp"
#include "trainer/nn/cuda/kernels.hpp"

namespace trellis::nn::cuda {

Linear::Linear(CudaContext& context, const std::string& name, int in_features, int out_features)
    : context_(context), in_features_(in_features), out_features_(out_features) {
    weight_ = {name + ".weight", tensor::Shape{out_features, in_features}, ParameterKind::weight};
    bias_ = {name + ".bias", tensor::Shape{out_features}, ParameterKind::bias};
}

void Linear::collect(ParameterStore& store) {
    store.add(weight_);
    store.add(bias_);
}

void Linear::initialize(std::mt19937_64& rng) {
    // As the CPU backend: uniform in +-1/sqrt(fan_in), PyTorch's default.
    float bound = 1.0f / std::sqrt(float(in_features_));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    for (std::int64_t i = 0; i < weight_.elements(); ++i) weight_.value[i] = uniform(rng);
    for (std::int64_t i = 0; i < bias_.elements(); ++i) bias_.value[i] = uniform(rng);
}

TensorSpec Linear::setup(const TensorSpec& input, bool input_grad) {
    if (input.shape.rank() != 2 || input.shape[1] != in_features_)
        throw std::invalid_argument(weight_.name + ": expects N x " + std::to_string(in_features_) + ", got " +
                                    input.shape.str());
    input_grad_ = input_grad;
    batch_ = int(input.shape[0]);
    return context_.spec(tensor::Shape{batch_, out_features_}, tensor::DType::f32);
}

// Row-major matrices are cuBLAS's column-major transposes: y (N x out) = x W^T + b is
// computed as y^T = W x^T, with W^T stored column-major being W row-major.
tensor::Tensor Linear::forward(const tensor::Tensor& input, Mode mode) {
    auto& params = context_.parameters();
    auto output = context_.allocate(tensor::Shape{batch_, out_features_}, tensor::DType::f32);
    float one = 1, zero = 0;
    check(cublasSgemm(context_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out_features_, batch_, in_features_, &one,
                      params.value(weight_), in_features_, input.f32(), in_features_, &zero, output.f32(),
                      out_features_),
          weight_.name + ": forward");
    kernels::add_bias(output.f32(), params.value(bias_), batch_, out_features_, context_.stream());
    if (mode == Mode::train) input_ = input;
    return output;
}

tensor::Tensor Linear::backward(const tensor::Tensor& output_grad) {
    auto& params = context_.parameters();
    auto cublas = context_.cublas();
    float one = 1, zero = 0;
    // dW (out x in) = dy^T x, as column-major dW^T (in x out) = x^T dy.
    check(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_T, in_features_, out_features_, batch_, &one, input_.f32(),
                      in_features_, output_grad.f32(), out_features_, &zero, params.grad(weight_), in_features_),
          weight_.name + ": weight gradient");
    kernels::bias_gradient(output_grad.f32(), params.grad(bias_), batch_, out_features_, context_.stream());
    tensor::Tensor input_grad;
    if (input_grad_) {
        // dx (N x in) = dy W, as column-major dx^T (in x N) = W^T dy^T.
        input_grad = context_.allocate(tensor::Shape{batch_, in_features_}, tensor::DType::f32);
        check(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, in_features_, batch_, out_features_, &one,
                          params.value(weight_), in_features_, output_grad.f32(), out_features_, &zero,
                          input_grad.f32(), in_features_),
              weight_.name + ": input gradient");
    }
    input_ = {};
    return input_grad;
}

}  // namespace trellis::nn::cuda
