// SPDX-License-Identifier: Apache-2.0
// The parameters of each kind of layer, their names, kinds, order and initial values, and the
// input checks, shared by the backends: a model has the same parameters on the CPU and on the
// GPU, so that checkpoints and parameter-server shards move between them.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "trainer/nn/backend.hpp"

namespace trellis::nn {

// A convolution's weight, O x I x KH x KW, and its bias when the spec has one.
struct ConvolutionWeight {
    explicit ConvolutionWeight(const ConvolutionSpec& spec);
    void collect(ParameterStore& store);
    void initialize(std::mt19937_64& rng);  // as spec.init says; bias 0
    // N x O x H' x W' for an N x I x H x W input; throws naming the layer otherwise.
    tensor::Shape output_shape(const tensor::Shape& input) const;
    double multiply_accumulates(const tensor::Shape& output) const;

    ConvolutionSpec spec;
    Parameter weight, bias;
};

struct BatchNormParameters {
    explicit BatchNormParameters(const BatchNormSpec& spec);
    void collect(ParameterStore& store);  // no scale parameter when it is not learnt
    void initialize();                    // scale_init, 0, running mean 0, running variance 1
    void check_input(const tensor::Shape& input) const;
    // gamma: the parameter's values, or ones when the scale is not learnt.
    const float* scale_values() const { return spec.learn_scale ? scale.value : ones.data(); }

    BatchNormSpec spec;
    Parameter scale, shift, running_mean, running_variance;
    std::vector<float> ones;  // gamma without a learnt scale
};

struct LinearParameters {
    explicit LinearParameters(const LinearSpec& spec);
    void collect(ParameterStore& store);
    void initialize(std::mt19937_64& rng);  // by default uniform in +-1/sqrt(fan_in), PyTorch's
    // Checks an N x in_features input, or an N x C x H x W one with C x H x W features;
    // with in_features 0, takes them from it. Returns the features.
    std::int64_t resolve_input(const tensor::Shape& input);
    double multiply_accumulates(std::int64_t batch) const { return double(batch) * in_features * out_features; }

    std::string name;
    int in_features, out_features;
    FanInGain init;
    Parameter weight, bias;
};

// The residual join's two branches must agree.
void check_same_shape(const std::string& name, const tensor::Shape& a, const tensor::Shape& b);

}  // namespace trellis::nn
