// Batch normalisation over channels, optionally with the ReLU that follows it fused in (oneDNN
// then keeps a bit mask instead of a second activation). Training uses the batch's
// statistics and updates running ones; evaluation uses the running ones.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

class BatchNorm : public Layer {
public:
    BatchNorm(const std::string& name, int channels, bool relu, float scale_init);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override;
    void initialize(std::mt19937_64& rng) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

    static constexpr float epsilon = 1e-5f;
    static constexpr float momentum = 0.1f;  // running = (1 - momentum) running + momentum batch

private:
    void update_running_statistics();

    std::string name_;
    int channels_;
    bool relu_;
    float scale_init_;
    Parameter scale_, shift_, running_mean_, running_variance_;
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
