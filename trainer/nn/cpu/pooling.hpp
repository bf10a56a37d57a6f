// SPDX-License-Identifier: Apache-2.0
// Max and average pooling over a window (average leaving padding out of the count), and global
// average pooling (the head), on oneDNN pooling.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

class Pooling : public Layer {
public:
    // `flatten`: the output is handed on as a plain N x C matrix (global pooling before the
    // fully connected layer).
    // A global pooling's window is the whole image.
    Pooling(std::string name, dnnl::algorithm algorithm, Window window, bool global, bool flatten);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    std::string name_;
    dnnl::algorithm algorithm_;
    Window window_;
    bool global_, flatten_, input_grad_ = false;
    tensor::Shape input_shape_, output_shape_;

    dnnl::pooling_forward::primitive_desc forward_pd_;
    dnnl::pooling_backward::primitive_desc backward_pd_;
    dnnl::pooling_forward forward_;
    dnnl::pooling_backward backward_;

    tensor::Tensor workspace_;
};

}  // namespace trellis::nn::cpu
