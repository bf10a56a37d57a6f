// SPDX-License-Identifier: Apache-2.0
// Convolution on cuDNN, NHWC with tensor cores in bf16/f16; where the spec has a bias, the
// module's own kernels add it and reduce its gradient in f32. A layer cuDNN refuses in
// bf16/f16 computes in f32 (converting its input and output) and says so once. The algorithm of each direction is
// chosen once per shape: cuDNN benchmarks its algorithms on the real buffers, and the fastest
// that fits the workspace bound is kept (deterministic ones only with --deterministic).
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/cuda/context.hpp"
#include "trainer/cuda/end_padding.hpp"

namespace trellis::cuda {

class Convolution : public nn::Layer {
public:
    Convolution(CudaContext& context, const nn::ConvolutionSpec& spec);
    ~Convolution() override;

    nn::TensorSpec setup(const nn::TensorSpec& input, bool input_grad) override;
    void collect(nn::ParameterStore& store) override;
    void initialize(std::mt19937_64& rng) override { parameters_.initialize(rng); }
    tensor::Tensor forward(const tensor::Tensor& input, nn::Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    double multiply_accumulates() const override { return parameters_.multiply_accumulates(output_shape_); }

private:
    // Descriptors and math for computing in `type`: the network's, or f32 where cuDNN refused it.
    void describe(tensor::DType type);
    bool fall_back_to_f32(const std::string& refused);
    tensor::Tensor convolve(const tensor::Tensor& input, nn::Mode mode);
    tensor::Tensor backward_in_conv_type(const tensor::Tensor& output_grad);
    tensor::Tensor in_conv_type(const tensor::Tensor& t);
    tensor::Tensor in_type(const tensor::Tensor& t, tensor::DType type);
    const void* weights() const;  // in the type the layer computes in
    std::string key(const char* direction) const;
    std::size_t output_rows() const { return std::size_t(output_shape_[0] * output_shape_[2] * output_shape_[3]); }
    // The algorithm of one direction: benchmarked once per shape with `find` (cuDNN's
    // Find*AlgorithmEx on the real buffers), then the math type it was timed with is set.
    template <typename Result, typename Find>
    int choose(const char* direction, const std::string& what, Find find);
    template <typename Query>
    std::size_t workspace(const char* direction, const char* what, Query query);

    CudaContext& context_;
    nn::ConvolutionWeight parameters_;
    const nn::ConvolutionSpec& spec_;
    bool input_grad_ = false;
    EndPadding end_padding_;
    nn::Window window_;  // what cuDNN runs: the spec's, its padding worked out for the input
    tensor::Shape input_shape_, output_shape_;
    tensor::DType type_ = tensor::DType::f32;       // of the activations in and out
    tensor::DType conv_type_ = tensor::DType::f32;  // what cuDNN computes in
    TensorDescriptor x_desc_, y_desc_;
    cudnnFilterDescriptor_t w_desc_ = nullptr;
    cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
    cudnnMathType_t math_ = CUDNN_DEFAULT_MATH;  // what the benchmarks may use
    tensor::Tensor input_;                       // kept for the weight gradient
};

}  // namespace trellis::cuda
