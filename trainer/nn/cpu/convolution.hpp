// SPDX-License-Identifier: Apache-2.0
// Convolution, with a bias where the spec asks (the models without batch norm), any kernel
// shape and per-side padding, on oneDNN's direct convolution with the memory formats it picks;
// never on one of its reference kernels (reference_kernels.hpp).
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

class Convolution : public Layer {
public:
    explicit Convolution(const ConvolutionSpec& spec);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override { parameters_.collect(store); }
    void initialize(std::mt19937_64& rng) override { parameters_.initialize(rng); }
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    double multiply_accumulates() const override { return parameters_.multiply_accumulates(output_shape_); }
    // The oneDNN implementation of each pass, as impl_info_str names them (after setup).
    std::string implementations() const;

private:
    ConvolutionWeight parameters_;
    const ConvolutionSpec& spec_;
    bool input_grad_ = false;
    tensor::Shape input_shape_;
    tensor::Shape output_shape_;

    dnnl::convolution_forward::primitive_desc forward_pd_;
    dnnl::convolution_backward_data::primitive_desc backward_data_pd_;
    dnnl::convolution_backward_weights::primitive_desc backward_weights_pd_;
    dnnl::convolution_forward forward_;
    dnnl::convolution_backward_data backward_data_;
    dnnl::convolution_backward_weights backward_weights_;

    tensor::Tensor input_;            // in the forward primitive's source layout, kept for backward
    tensor::Tensor forward_weights_;  // the plain weights reordered for the forward primitive
};

}  // namespace trellis::nn::cpu
