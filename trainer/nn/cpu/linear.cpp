#include "trainer/nn/cpu/linear.hpp"

#include <cmath>

namespace trellis::nn::cpu {

Linear::Linear(const std::string& name, int in_features, int out_features)
    : name_(name), in_features_(in_features), out_features_(out_features) {
    weight_ = {name + ".weight", tensor::Shape{out_features, in_features}, ParameterKind::weight};
    bias_ = {name + ".bias", tensor::Shape{out_features}, ParameterKind::bias};
}

void Linear::collect(ParameterStore& store) {
    store.add(weight_);
    store.add(bias_);
}

void Linear::initialize(std::mt19937_64& rng) {
    // PyTorch's default for nn.Linear: uniform in +-1/sqrt(fan_in).
    float bound = 1.0f / std::sqrt(float(in_features_));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    for (std::int64_t i = 0; i < weight_.elements(); ++i) weight_.value[i] = uniform(rng);
    for (std::int64_t i = 0; i < bias_.elements(); ++i) bias_.value[i] = uniform(rng);
}

TensorSpec Linear::setup(const TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    input_shape_ = input.shape;
    if (input_shape_.rank() != 2 || input_shape_[1] != in_features_)
        throw std::invalid_argument(name_ + ": expects N x " + std::to_string(in_features_) + " input, got " +
                                    input_shape_.str());
    output_shape_ = tensor::Shape{input_shape_[0], out_features_};
    auto src = plain_desc(input_shape_), weights = plain_desc(weight_.shape), bias = plain_desc(bias_.shape),
         dst = plain_desc(output_shape_);
    auto attr = attributes();
    forward_pd_ = {{dnnl::prop_kind::forward_training, src, weights, bias, dst}, attr, engine()};
    forward_ = dnnl::inner_product_forward(forward_pd_);
    backward_weights_pd_ = {{src, weights, bias, dst}, attr, engine(), forward_pd_};
    backward_weights_ = dnnl::inner_product_backward_weights(backward_weights_pd_);
    if (input_grad_) {
        backward_data_pd_ = {{src, weights, dst}, attr, engine(), forward_pd_};
        backward_data_ = dnnl::inner_product_backward_data(backward_data_pd_);
    }
    return {output_shape_, nullptr};
}

tensor::Tensor Linear::forward(const tensor::Tensor& input, Mode) {
    input_ = reordered(input, forward_pd_.src_desc());
    auto output = allocate(forward_pd_.dst_desc(), output_shape_);
    forward_.execute(stream(), {{DNNL_ARG_SRC, memory_of(input_)},
                                {DNNL_ARG_WEIGHTS, memory_of(forward_pd_.weights_desc(), weight_.value)},
                                {DNNL_ARG_BIAS, memory_of(forward_pd_.bias_desc(), bias_.value)},
                                {DNNL_ARG_DST, memory_of(output)},
                                {DNNL_ARG_SCRATCHPAD, scratchpad(forward_pd_.scratchpad_desc())}});
    return output;
}

tensor::Tensor Linear::backward(const tensor::Tensor& output_grad) {
    auto diff_dst = reordered(output_grad, forward_pd_.dst_desc());
    backward_weights_.execute(
        stream(), {{DNNL_ARG_SRC, memory_of(input_)},
                   {DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                   {DNNL_ARG_DIFF_WEIGHTS, memory_of(backward_weights_pd_.diff_weights_desc(), weight_.grad)},
                   {DNNL_ARG_DIFF_BIAS, memory_of(backward_weights_pd_.diff_bias_desc(), bias_.grad)},
                   {DNNL_ARG_SCRATCHPAD, scratchpad(backward_weights_pd_.scratchpad_desc())}});
    tensor::Tensor input_grad;
    if (input_grad_) {
        input_grad = allocate(backward_data_pd_.diff_src_desc(), input_shape_);
        backward_data_.execute(stream(),
                               {{DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                                {DNNL_ARG_WEIGHTS, memory_of(backward_data_pd_.weights_desc(), weight_.value)},
                                {DNNL_ARG_DIFF_SRC, memory_of(input_grad)},
                                {DNNL_ARG_SCRATCHPAD, scratchpad(backward_data_pd_.scratchpad_desc())}});
    }
    input_ = {};
    return input_grad;
}

}  // namespace trellis::nn::cpu
