// SPDX-License-Identifier: Apache-2.0
// A column of layers written the way tf_cnn_benchmarks' convnet_builder writes its models:
// conv, pooling, affine, dropout and concat calls, each layer taking the previous one's
// output, with the builder's conventions (a convolution is followed by batch norm and ReLU
// when the model uses batch norm, else it has a bias and a ReLU; SAME padding for
// convolutions and VALID for pooling unless told) and its layer names (conv0, conv1, mpool0,
// affine0, ...), counted over the whole model.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainer/models/architecture.hpp"

namespace trellis::models {

enum class Pad { same, valid };

struct Conventions {
    bool batch_norm = false;
    // tf_cnn_benchmarks' batch_norm defaults: no learnt scale, epsilon 1e-3, decay 0.999
    // (a running average with momentum 0.001).
    bool learn_scale = false;
    float epsilon = 1e-3f;
    float momentum = 0.001f;
};

class LayerColumn {
public:
    // The names are shared by every column of one model.
    LayerColumn(const BuildContext& build, const Conventions& conventions, int channels,
                std::shared_ptr<std::map<std::string, int>> names = {});

    int channels() const { return channels_; }

    LayerColumn& conv(int out, int kernel_h, int kernel_w, int stride = 1, Pad pad = Pad::same);
    LayerColumn& max_pool(int kernel, int stride, Pad pad = Pad::valid);
    LayerColumn& average_pool(int kernel, int stride, Pad pad = Pad::valid);
    // The mean over the image: an N x C matrix.
    LayerColumn& spatial_mean();
    // A fully connected layer over everything before it (flattened in N x C x H x W order),
    // with a ReLU unless `relu` is false.
    LayerColumn& affine(int out, bool relu = true);
    LayerColumn& dropout(float keep);
    // Branches side by side, each written on a column that starts from this one's output.
    LayerColumn& concat(const std::vector<std::function<void(LayerColumn&)>>& branches);

    std::unique_ptr<nn::Sequential> take() { return std::move(layers_); }

private:
    std::string next_name(const std::string& kind);
    nn::Window window(int kernel_h, int kernel_w, int stride, Pad pad) const;

    const BuildContext& build_;
    Conventions conventions_;
    int channels_;
    bool flat_ = false;  // after spatial_mean or affine: channels_ counts features
    std::shared_ptr<std::map<std::string, int>> names_;
    std::unique_ptr<nn::Sequential> layers_ = std::make_unique<nn::Sequential>();
};

}  // namespace trellis::models
