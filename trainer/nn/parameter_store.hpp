// SPDX-License-Identifier: Apache-2.0
// Owns the memory of every parameter in one flat buffer of values, one of gradients and one of
// running statistics, in registration order. Flat buffers let the optimizer run one fused
// loop and let the collectives reduce gradients in contiguous buckets.
#pragma once

#include <span>
#include <vector>

#include "trainer/nn/parameter.hpp"

namespace trellis::nn {

class ParameterStore {
public:
    void add(Parameter& parameter);  // before allocate()
    void allocate();                 // binds every added parameter's value and grad

    const std::vector<Parameter*>& learned() const { return learned_; }
    const std::vector<Parameter*>& statistics() const { return statistics_; }
    std::span<float> values() { return values_; }
    std::span<float> grads() { return grads_; }
    std::span<float> statistic_values() { return statistic_values_; }
    std::int64_t learned_elements() const { return static_cast<std::int64_t>(values_.size()); }

    void zero_grads();

private:
    std::vector<Parameter*> learned_;
    std::vector<Parameter*> statistics_;
    std::vector<float> values_;
    std::vector<float> grads_;
    std::vector<float> statistic_values_;
};

}  // namespace trellis::nn
