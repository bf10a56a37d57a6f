// SPDX-License-Identifier: Apache-2.0
// Fully connected layer on plain N x in matrices (oneDNN's inner product; its GEMM path is as
// fast on plain formats as on blocked ones for this size); an image input is flattened in
// N x C x H x W order first (PyTorch's flatten).
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

class Linear : public Layer {
public:
    explicit Linear(const LinearSpec& spec);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override { parameters_.collect(store); }
    void initialize(std::mt19937_64& rng) override { parameters_.initialize(rng); }
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    double multiply_accumulates() const override { return parameters_.multiply_accumulates(input_shape_[0]); }

private:
    LinearParameters parameters_;
    bool input_grad_ = false;
    tensor::Shape image_shape_;  // an image input's shape; empty for a matrix input
    tensor::Shape input_shape_, output_shape_;

    dnnl::inner_product_forward::primitive_desc forward_pd_;
    dnnl::inner_product_backward_data::primitive_desc backward_data_pd_;
    dnnl::inner_product_backward_weights::primitive_desc backward_weights_pd_;
    dnnl::inner_product_forward forward_;
    dnnl::inner_product_backward_data backward_data_;
    dnnl::inner_product_backward_weights backward_weights_;

    tensor::Tensor input_;
};

}  // namespace trellis::nn::cpu
