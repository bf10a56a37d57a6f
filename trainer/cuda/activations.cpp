#include "trainer/cuda/activations.hpp"

#include "common/error.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::nn::cuda {

TensorSpec Relu::setup(const TensorSpec& input, bool) {
    shape_ = input.shape;
    type_ = type_of(input);
    return input;
}

tensor::Tensor Relu::forward(const tensor::Tensor& input, Mode mode) {
    auto output = context_.allocate(shape_, type_);
    kernels::relu(input.data(), output.data(), type_, std::size_t(shape_.elements()), context_.stream());
    if (mode == Mode::train) output_ = output;
    return output;
}

tensor::Tensor Relu::backward(const tensor::Tensor& output_grad) {
    auto grad = context_.allocate(shape_, type_);
    kernels::relu_backward(output_.data(), output_grad.data(), grad.data(), type_, std::size_t(shape_.elements()),
                           context_.stream());
    output_ = {};
    return grad;
}

Dropout::Dropout(CudaContext& context, std::string name, float keep, const DropoutDraw& draw)
    : context_(context), name_(std::move(name)), keep_(keep), draw_(draw) {
    if (!(keep > 0.0f && keep <= 1.0f)) throw UsageError(name_ + ": the keep probability must be in (0, 1]");
}

TensorSpec Dropout::setup(const TensorSpec& input, bool) {
    shape_ = input.shape;
    if (shape_.rank() != 2 || type_of(input) != tensor::DType::f32)
        throw UsageError(name_ + ": dropout takes the f32 N x F matrix of the head, got " + shape_.str());
    return input;
}

tensor::Tensor Dropout::masked(const tensor::Tensor& in) const {
    auto out = context_.allocate(shape_, tensor::DType::f32);
    kernels::dropout(in.f32(), out.f32(), std::size_t(shape_.elements()), key_, keep_threshold(keep_), 1.0f / keep_,
                     context_.stream());
    return out;
}

tensor::Tensor Dropout::forward(const tensor::Tensor& input, Mode mode) {
    if (mode == Mode::eval || keep_ == 1.0f) return input;
    key_ = dropout_key(draw_, name_);
    return masked(input);
}

tensor::Tensor Dropout::backward(const tensor::Tensor& output_grad) {
    return keep_ == 1.0f ? output_grad : masked(output_grad);
}

}  // namespace trellis::nn::cuda
