// Batch normalisation over channels, optionally with the ReLU that follows it fused in (oneDNN
// then keeps a bit mask instead of a second activation), and without a learnt scale where the
// spec says (gamma is then 1: oneDNN normalises without one). Training uses the batch's
// statistics and updates running ones; evaluation uses the running ones.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

class BatchNorm : public Layer {
public:
    explicit BatchNorm(const BatchNormSpec& spec);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override { parameters_.collect(store); }
    void initialize(std::mt19937_64&) override { parameters_.initialize(); }
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    void update_running_statistics();

    BatchNormParameters parameters_;
    const BatchNormSpec& spec_;
    tensor::Shape shape_;
    std::int64_t reduced_count_ = 0;  // elements per channel in a batch

    dnnl::batch_normalization_forward::primitive_desc training_pd_, inference_pd_;
    dnnl::batch_normalization_backward::primitive_desc backward_pd_;
    dnnl::batch_normalization_forward training_, inference_;
    dnnl::batch_normalization_backward backward_;

    tensor::Tensor input_, workspace_;
    std::vector<float> batch_mean_, batch_variance_;
};

}  // namespace trellis::nn::cpu
