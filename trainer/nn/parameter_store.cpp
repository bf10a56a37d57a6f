// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/parameter_store.hpp"

#include <algorithm>
#include <stdexcept>

namespace trellis::nn {

void ParameterStore::add(Parameter& parameter) {
    if (!values_.empty() || !statistic_values_.empty())
        throw std::logic_error("parameter " + parameter.name + " added after allocation");
    (parameter.learned() ? learned_ : statistics_).push_back(&parameter);
}

void ParameterStore::allocate() {
    auto total = [](const std::vector<Parameter*>& list) {
        std::size_t count = 0;
        for (auto* p : list) count += static_cast<std::size_t>(p->elements());
        return count;
    };
    values_.assign(total(learned_), 0.0f);
    grads_.assign(values_.size(), 0.0f);
    statistic_values_.assign(total(statistics_), 0.0f);

    std::size_t offset = 0;
    for (auto* p : learned_) {
        p->value = values_.data() + offset;
        p->grad = grads_.data() + offset;
        offset += static_cast<std::size_t>(p->elements());
    }
    offset = 0;
    for (auto* p : statistics_) {
        p->value = statistic_values_.data() + offset;
        offset += static_cast<std::size_t>(p->elements());
    }
}

void ParameterStore::zero_grads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

}  // namespace trellis::nn
