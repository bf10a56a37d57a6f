#include "trainer/nn/cpu/dropout.hpp"

#include "common/error.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

Dropout::Dropout(std::string name, float keep, const DropoutDraw& draw)
    : name_(std::move(name)), keep_(keep), draw_(draw) {
    if (!(keep > 0.0f && keep <= 1.0f)) throw UsageError(name_ + ": the keep probability must be in (0, 1]");
}

TensorSpec Dropout::setup(const TensorSpec& input, bool) {
    shape_ = input.shape;
    if (shape_.rank() != 2) throw UsageError(name_ + ": dropout takes an N x F matrix, got " + shape_.str());
    return {shape_, nullptr};
}

tensor::Tensor Dropout::masked(const tensor::Tensor& in) const {
    auto plain = reordered(in, plain_desc(shape_));
    tensor::Tensor out(shape_);
    const float* x = plain.f32();
    float* y = out.f32();
    auto threshold = keep_threshold(keep_);
    float scale = 1.0f / keep_;
    for (std::int64_t i = 0; i < shape_.elements(); ++i) y[i] = keeps(key_, std::uint64_t(i), threshold) ? x[i] * scale : 0.0f;
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

}  // namespace trellis::nn::cpu
