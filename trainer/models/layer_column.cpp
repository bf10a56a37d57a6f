// SPDX-License-Identifier: Apache-2.0
#include "trainer/models/layer_column.hpp"

#include "common/error.hpp"
#include "trainer/nn/concat.hpp"

namespace trellis::models {

LayerColumn::LayerColumn(const BuildContext& build, const Conventions& conventions, int channels,
                         std::shared_ptr<std::map<std::string, int>> names)
    : build_(build),
      conventions_(conventions),
      channels_(channels),
      names_(names ? std::move(names) : std::make_shared<std::map<std::string, int>>()) {}

std::string LayerColumn::next_name(const std::string& kind) { return kind + std::to_string((*names_)[kind]++); }

nn::Window LayerColumn::window(int kernel_h, int kernel_w, int stride, Pad pad) const {
    return pad == Pad::same ? nn::Window::tf_same(kernel_h, kernel_w, stride)
                            : nn::Window::tf_valid(kernel_h, kernel_w, stride);
}

LayerColumn& LayerColumn::conv(int out, int kernel_h, int kernel_w, int stride, Pad pad) {
    auto& backend = build_.backend;
    auto name = next_name("conv");
    bool norm = conventions_.batch_norm;
    layers_->add(backend.convolution({name, channels_, out, window(kernel_h, kernel_w, stride, pad), !norm, {1.0f}}));
    if (norm) {
        layers_->add(backend.batch_norm(
            {name + ".bn", out, true, 1.0f, conventions_.learn_scale, conventions_.epsilon, conventions_.momentum}));
    } else {
        layers_->add(backend.relu(name + ".relu"));
    }
    channels_ = out;
    return *this;
}

LayerColumn& LayerColumn::max_pool(int kernel, int stride, Pad pad) {
    layers_->add(build_.backend.pooling({next_name("mpool"), nn::PoolKind::max, window(kernel, kernel, stride, pad)}));
    return *this;
}

LayerColumn& LayerColumn::average_pool(int kernel, int stride, Pad pad) {
    layers_->add(
        build_.backend.pooling({next_name("apool"), nn::PoolKind::average, window(kernel, kernel, stride, pad)}));
    return *this;
}

LayerColumn& LayerColumn::spatial_mean() {
    layers_->add(build_.backend.global_average_pool(next_name("spatial_mean")));
    flat_ = true;
    return *this;
}

LayerColumn& LayerColumn::affine(int out, bool relu) {
    auto name = next_name("affine");
    // 0 input features: the layer takes them from its input, whatever the image size made them.
    layers_->add(build_.backend.linear({name, flat_ ? channels_ : 0, out, {relu ? 2.0f : 1.0f}}));
    if (relu) layers_->add(build_.backend.relu(name + ".relu"));
    channels_ = out, flat_ = true;
    return *this;
}

LayerColumn& LayerColumn::dropout(float keep) {
    layers_->add(build_.backend.dropout(next_name("dropout"), keep, build_.dropout));
    return *this;
}

LayerColumn& LayerColumn::concat(const std::vector<std::function<void(LayerColumn&)>>& branches) {
    if (flat_) throw UsageError("a concatenation joins images, not flattened features");
    auto name = next_name("concat");
    std::vector<std::unique_ptr<nn::Sequential>> columns;
    int channels = 0;
    for (const auto& write : branches) {
        LayerColumn branch(build_, conventions_, channels_, names_);
        write(branch);
        channels += branch.channels();
        columns.push_back(branch.take());
    }
    layers_->add(std::make_unique<nn::Concat>(std::move(columns), build_.backend.channel_concat(name)));
    channels_ = channels;
    return *this;
}

}  // namespace trellis::models
