#include "trainer/nn/layer_parameters.hpp"

#include <cmath>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::nn {

ConvolutionWeight::ConvolutionWeight(const ConvolutionSpec& spec) : spec(spec) {
    weight.name = spec.name + ".weight";
    weight.shape = tensor::Shape{spec.out_channels, spec.in_channels, spec.kernel, spec.kernel};
    weight.kind = ParameterKind::weight;
}

void ConvolutionWeight::initialize(std::mt19937_64& rng) {
    double fan_out = double(spec.out_channels) * spec.kernel * spec.kernel;
    std::normal_distribution<float> normal(0.0f, float(std::sqrt(2.0 / fan_out)));
    for (std::int64_t i = 0; i < weight.elements(); ++i) weight.value[i] = normal(rng);
}

tensor::Shape ConvolutionWeight::output_shape(const tensor::Shape& in) const {
    if (in.rank() != 4 || in[1] != spec.in_channels)
        throw UsageError(spec.name + ": expects N x " + std::to_string(spec.in_channels) +
                                    " x H x W input, got " + in.str());
    auto out_size = [&](std::int64_t size) { return (size + 2 * spec.padding - spec.kernel) / spec.stride + 1; };
    return tensor::Shape{in[0], spec.out_channels, out_size(in[2]), out_size(in[3])};
}

BatchNormParameters::BatchNormParameters(const std::string& name, int channels, float scale_init)
    : name(name), channels(channels), scale_init(scale_init) {
    auto vector = [&](Parameter& p, const char* suffix, ParameterKind kind) {
        p.name = name + suffix;
        p.shape = tensor::Shape{channels};
        p.kind = kind;
    };
    vector(scale, ".weight", ParameterKind::norm_scale);
    vector(shift, ".bias", ParameterKind::norm_shift);
    vector(running_mean, ".running_mean", ParameterKind::running_stat);
    vector(running_variance, ".running_var", ParameterKind::running_stat);
}

void BatchNormParameters::collect(ParameterStore& store) {
    store.add(scale);
    store.add(shift);
    store.add(running_mean);
    store.add(running_variance);
}

void BatchNormParameters::initialize() {
    for (int c = 0; c < channels; ++c) {
        scale.value[c] = scale_init;
        shift.value[c] = 0.0f;
        running_mean.value[c] = 0.0f;
        running_variance.value[c] = 1.0f;
    }
}

void BatchNormParameters::check_input(const tensor::Shape& input) const {
    if (input.rank() != 4 || input[1] != channels)
        throw UsageError(name + ": expects N x " + std::to_string(channels) + " x H x W input, got " +
                                    input.str());
}

LinearParameters::LinearParameters(const std::string& name, int in_features, int out_features)
    : name(name), in_features(in_features), out_features(out_features) {
    weight = {name + ".weight", tensor::Shape{out_features, in_features}, ParameterKind::weight};
    bias = {name + ".bias", tensor::Shape{out_features}, ParameterKind::bias};
}

void LinearParameters::collect(ParameterStore& store) {
    store.add(weight);
    store.add(bias);
}

void LinearParameters::initialize(std::mt19937_64& rng) {
    float bound = 1.0f / std::sqrt(float(in_features));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    for (std::int64_t i = 0; i < weight.elements(); ++i) weight.value[i] = uniform(rng);
    for (std::int64_t i = 0; i < bias.elements(); ++i) bias.value[i] = uniform(rng);
}

void LinearParameters::check_input(const tensor::Shape& input) const {
    if (input.rank() != 2 || input[1] != in_features)
        throw UsageError(name + ": expects N x " + std::to_string(in_features) + " input, got " +
                                    input.str());
}

void check_same_shape(const std::string& name, const tensor::Shape& a, const tensor::Shape& b) {
    if (a != b) throw UsageError(name + ": branch shapes differ: " + a.str() + " and " + b.str());
}

}  // namespace trellis::nn
