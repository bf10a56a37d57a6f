#include "trainer/nn/cpu/relu.hpp"

namespace trellis::nn::cpu {

TensorSpec Relu::setup(const TensorSpec& input, bool) {
    shape_ = input.shape;
    data_ = desc_of(input);
    auto algorithm = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    forward_pd_ = {{dnnl::prop_kind::forward_training, algorithm, data_, 0.0f, 0.0f}, attributes(), engine()};
    forward_ = dnnl::eltwise_forward(forward_pd_);
    backward_pd_ = {{algorithm, data_, data_, 0.0f, 0.0f}, attributes(), engine(), forward_pd_};
    backward_ = dnnl::eltwise_backward(backward_pd_);
    return input;
}

tensor::Tensor Relu::forward(const tensor::Tensor& input, Mode mode) {
    auto src = reordered(input, data_);
    auto output = allocate(data_, shape_);
    forward_.execute(stream(), {{DNNL_ARG_SRC, memory_of(src)},
                                {DNNL_ARG_DST, memory_of(output)},
                                {DNNL_ARG_SCRATCHPAD, scratchpad(forward_pd_.scratchpad_desc())}});
    if (mode == Mode::train) output_ = output;
    return output;
}

tensor::Tensor Relu::backward(const tensor::Tensor& output_grad) {
    auto diff_dst = reordered(output_grad, data_);
    auto grad = allocate(data_, shape_);
    backward_.execute(stream(), {{DNNL_ARG_DST, memory_of(output_)},
                                 {DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                                 {DNNL_ARG_DIFF_SRC, memory_of(grad)},
                                 {DNNL_ARG_SCRATCHPAD, scratchpad(backward_pd_.scratchpad_desc())}});
    output_ = {};
    return grad;
}

}  // namespace trellis::nn::cpu
