// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/layer_parameters.hpp"

#include <cmath>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::nn {

namespace {

// Normal with variance gain / fan_in, values beyond two standard deviations drawn again.
void fan_in_normal(Parameter& p, float gain, std::int64_t fan_in, std::mt19937_64& rng) {
    float deviation = std::sqrt(gain / float(fan_in));
    std::normal_distribution<float> normal(0.0f, deviation);
    for (std::int64_t i = 0; i < p.elements(); ++i) {
        float value;
        do value = normal(rng);
        while (std::abs(value) > 2 * deviation);
        p.value[i] = value;
    }
}

}  // namespace

ConvolutionWeight::ConvolutionWeight(const ConvolutionSpec& spec) : spec(spec) {
    const auto& w = spec.window;
    weight = {spec.name + ".weight", tensor::Shape{spec.out_channels, spec.in_channels, w.kernel_h, w.kernel_w},
              ParameterKind::weight};
    bias = {spec.name + ".bias", tensor::Shape{spec.out_channels}, ParameterKind::bias};
}

void ConvolutionWeight::collect(ParameterStore& store) {
    store.add(weight);
    if (spec.bias) store.add(bias);
}

void ConvolutionWeight::initialize(std::mt19937_64& rng) {
    if (spec.init.gain > 0) {
        fan_in_normal(weight, spec.init.gain, spec.in_channels * spec.window.kernel_h * spec.window.kernel_w, rng);
        if (spec.bias)
            for (std::int64_t i = 0; i < bias.elements(); ++i) bias.value[i] = 0.0f;
        return;
    }
    double fan_out = double(spec.out_channels) * spec.window.kernel_h * spec.window.kernel_w;
    std::normal_distribution<float> normal(0.0f, float(std::sqrt(2.0 / fan_out)));
    for (std::int64_t i = 0; i < weight.elements(); ++i) weight.value[i] = normal(rng);
    if (spec.bias)
        for (std::int64_t i = 0; i < bias.elements(); ++i) bias.value[i] = 0.0f;
}

tensor::Shape ConvolutionWeight::output_shape(const tensor::Shape& in) const {
    if (in.rank() != 4 || in[1] != spec.in_channels)
        throw UsageError(spec.name + ": expects N x " + std::to_string(spec.in_channels) + " x H x W input, got " +
                         in.str());
    return spec.window.output_shape(in, spec.out_channels, spec.name);
}

double ConvolutionWeight::multiply_accumulates(const tensor::Shape& output) const {
    return double(output.elements()) * spec.in_channels * spec.window.kernel_h * spec.window.kernel_w;
}

BatchNormParameters::BatchNormParameters(const BatchNormSpec& spec) : spec(spec) {
    auto vector = [&](Parameter& p, const char* suffix, ParameterKind kind) {
        p.name = spec.name + suffix;
        p.shape = tensor::Shape{spec.channels};
        p.kind = kind;
    };
    vector(scale, ".weight", ParameterKind::norm_scale);
    vector(shift, ".bias", ParameterKind::norm_shift);
    vector(running_mean, ".running_mean", ParameterKind::running_stat);
    vector(running_variance, ".running_var", ParameterKind::running_stat);
    if (!spec.learn_scale) ones.assign(std::size_t(spec.channels), 1.0f);
}

void BatchNormParameters::collect(ParameterStore& store) {
    if (spec.learn_scale) store.add(scale);
    store.add(shift);
    store.add(running_mean);
    store.add(running_variance);
}

void BatchNormParameters::initialize() {
    for (int c = 0; c < spec.channels; ++c) {
        if (spec.learn_scale) scale.value[c] = spec.scale_init;
        shift.value[c] = 0.0f;
        running_mean.value[c] = 0.0f;
        running_variance.value[c] = 1.0f;
    }
}

void BatchNormParameters::check_input(const tensor::Shape& input) const {
    if (input.rank() != 4 || input[1] != spec.channels)
        throw UsageError(spec.name + ": expects N x " + std::to_string(spec.channels) + " x H x W input, got " +
                         input.str());
}

LinearParameters::LinearParameters(const LinearSpec& spec)
    : name(spec.name), in_features(spec.in_features), out_features(spec.out_features), init(spec.init) {
    weight = {name + ".weight", tensor::Shape{out_features, in_features}, ParameterKind::weight};
    bias = {name + ".bias", tensor::Shape{out_features}, ParameterKind::bias};
}

void LinearParameters::collect(ParameterStore& store) {
    store.add(weight);
    store.add(bias);
}

void LinearParameters::initialize(std::mt19937_64& rng) {
    if (init.gain > 0) {
        fan_in_normal(weight, init.gain, in_features, rng);
        for (std::int64_t i = 0; i < bias.elements(); ++i) bias.value[i] = 0.0f;
        return;
    }
    float bound = 1.0f / std::sqrt(float(in_features));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    for (std::int64_t i = 0; i < weight.elements(); ++i) weight.value[i] = uniform(rng);
    for (std::int64_t i = 0; i < bias.elements(); ++i) bias.value[i] = uniform(rng);
}

std::int64_t LinearParameters::resolve_input(const tensor::Shape& input) {
    std::int64_t features = input.rank() == 4 ? input[1] * input[2] * input[3] : input.rank() == 2 ? input[1] : -1;
    if (in_features == 0 && features > 0) {
        in_features = int(features);
        weight.shape = tensor::Shape{out_features, in_features};
    }
    if (features != in_features)
        throw UsageError(name + ": expects N x " + std::to_string(in_features) + " input (or N x C x H x W with " +
                         std::to_string(in_features) + " values per image), got " + input.str());
    return features;
}

void check_same_shape(const std::string& name, const tensor::Shape& a, const tensor::Shape& b) {
    if (a != b) throw UsageError(name + ": branch shapes differ: " + a.str() + " and " + b.str());
}

}  // namespace trellis::nn
