// The parameters of each kind of layer, their names, kinds, order and initial values, and the
// input checks, shared by the backends: a model has the same parameters on the CPU and on the
// GPU, so that checkpoints and parameter-server shards move between them.
#pragma once

#include <random>
#include <string>

#include "trainer/nn/backend.hpp"

namespace trellis::nn {

// A convolution's weight, O x I x K x K (no bias: batch norm follows every convolution).
struct ConvolutionWeight {
    explicit ConvolutionWeight(const ConvolutionSpec& spec);
    void initialize(std::mt19937_64& rng);  // He normal, fan-out mode, as torchvision
    // N x O x H' x W' for an N x I x H x W input; throws naming the layer otherwise.
    tensor::Shape output_shape(const tensor::Shape& input) const;

    ConvolutionSpec spec;
    Parameter weight;
};

struct BatchNormParameters {
    BatchNormParameters(const std::string& name, int channels, float scale_init);
    void collect(ParameterStore& store);
    void initialize();  // scale_init, 0, running mean 0, running variance 1
    void check_input(const tensor::Shape& input) const;

    static constexpr float epsilon = 1e-5f;
    static constexpr float momentum = 0.1f;  // running = (1 - momentum) running + momentum batch

    std::string name;
    int channels;
    float scale_init;
    Parameter scale, shift, running_mean, running_variance;
};

struct LinearParameters {
    LinearParameters(const std::string& name, int in_features, int out_features);
    void collect(ParameterStore& store);
    void initialize(std::mt19937_64& rng);  // uniform in +-1/sqrt(fan_in), PyTorch's default
    void check_input(const tensor::Shape& input) const;

    std::string name;
    int in_features, out_features;
    Parameter weight, bias;
};

// The residual join's two branches must agree.
void check_same_shape(const std::string& name, const tensor::Shape& a, const tensor::Shape& b);

}  // namespace trellis::nn
