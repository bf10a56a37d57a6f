// SPDX-License-Identifier: Apache-2.0
#include "trainer/models/resnet.hpp"

#include <stdexcept>

#include "common/error.hpp"
#include "trainer/nn/residual_block.hpp"

namespace trellis::models {

namespace {

struct ResNetConfig {
    std::string name;
    bool bottleneck = false;
    bool cifar = false;            // 3x3 stem without pooling, three stages
    std::vector<int> blocks;       // per stage
    bool stride_on_first = false;  // bottleneck v1: the stride on the first 1x1 convolution
};

const ResNetConfig configs[] = {
    {"resnet18", false, false, {2, 2, 2, 2}, false},    {"resnet34", false, false, {3, 4, 6, 3}, false},
    {"resnet50", true, false, {3, 4, 6, 3}, false},     {"resnet101", true, false, {3, 4, 23, 3}, false},
    {"resnet152", true, false, {3, 8, 36, 3}, false},   {"resnet50_v1", true, false, {3, 4, 6, 3}, true},
    {"resnet101_v1", true, false, {3, 4, 23, 3}, true}, {"resnet152_v1", true, false, {3, 8, 36, 3}, true},
    {"resnet8", false, true, {1, 1, 1}, false},         {"resnet20", false, true, {3, 3, 3}, false},
    {"resnet32", false, true, {5, 5, 5}, false},        {"resnet56", false, true, {9, 9, 9}, false},
};

class Builder {
public:
    Builder(nn::Backend& backend, const ModelOptions& options, bool stride_on_first)
        : backend_(backend), options_(options), stride_on_first_(stride_on_first) {}

    void conv_norm(nn::Sequential& into, const std::string& name, int in, int out, int kernel, int stride, bool relu) {
        into.add(convolution(name, in, out, kernel, stride));
        into.add(backend_.batch_norm({name + ".bn", out, relu}));
    }

    nn::LayerPtr convolution(const std::string& name, int in, int out, int kernel, int stride) {
        return backend_.convolution({name + ".conv", in, out, nn::Window::square(kernel, stride, kernel / 2)});
    }

    // The main branch's last convolution; its norm goes to the join (`last_norm`).
    nn::BatchNormSpec last_conv(nn::Sequential& into, const std::string& name, int in, int out, int kernel) {
        into.add(convolution(name, in, out, kernel, 1));
        float gamma = options_.zero_init_residual ? 0.0f : 1.0f;
        return {name + ".bn", out, false, gamma};
    }

    nn::LayerPtr block(const std::string& name, bool bottleneck, int in, int width, int stride) {
        int out = bottleneck ? width * 4 : width;
        auto main = std::make_unique<nn::Sequential>();
        nn::BatchNormSpec last_norm;
        if (bottleneck) {
            int first = stride_on_first_ ? stride : 1;  // v1 strides on the 1x1, v1.5 on the 3x3
            conv_norm(*main, name + ".1", in, width, 1, first, true);
            conv_norm(*main, name + ".2", width, width, 3, stride / first, true);
            last_norm = last_conv(*main, name + ".3", width, out, 1);
        } else {
            conv_norm(*main, name + ".1", in, width, 3, stride, true);
            last_norm = last_conv(*main, name + ".2", width, out, 3);
        }
        auto shortcut = std::make_unique<nn::Sequential>();
        if (stride != 1 || in != out) conv_norm(*shortcut, name + ".downsample", in, out, 1, stride, false);
        return std::make_unique<nn::ResidualBlock>(std::move(main), std::move(shortcut),
                                                   backend_.normalized_join(last_norm, name + ".join"));
    }

private:
    nn::Backend& backend_;
    const ModelOptions& options_;
    bool stride_on_first_;
};

std::unique_ptr<nn::Sequential> build_resnet(nn::Backend& backend, const ResNetConfig& config,
                                             const ModelOptions& options) {
    Builder builder(backend, options, config.stride_on_first);
    auto net = std::make_unique<nn::Sequential>();
    int channels;
    std::vector<int> widths;
    if (config.cifar) {
        channels = 16;
        builder.conv_norm(*net, "stem", 3, channels, 3, 1, true);
        widths = {16, 32, 64};
    } else {
        channels = 64;
        net->add(backend.convolution({"stem.conv", 3, channels, nn::Window::square(7, 2, 3)}));
        net->add(backend.batch_norm({"stem.bn", channels, true}));
        net->add(backend.pooling({"stem.pool", nn::PoolKind::max, nn::Window::square(3, 2, 1)}));
        widths = {64, 128, 256, 512};
    }
    for (std::size_t stage = 0; stage < config.blocks.size(); ++stage) {
        for (int b = 0; b < config.blocks[stage]; ++b) {
            int stride = (b == 0 && stage > 0) ? 2 : 1;
            std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
            net->add(builder.block(name, config.bottleneck, channels, widths[stage], stride));
            channels = config.bottleneck ? widths[stage] * 4 : widths[stage];
        }
    }
    net->add(backend.global_average_pool("avgpool"));
    net->add(backend.linear({"fc", channels, options.num_classes}));
    return net;
}

}  // namespace

std::vector<Architecture> resnets() {
    std::vector<Architecture> list;
    for (const auto& config : configs) {
        std::string form = config.bottleneck ? (config.stride_on_first ? "ResNet v1" : "ResNet v1.5") : "";
        // The ImageNet stem divides the image by 32, the CIFAR one by 4.
        list.push_back(
            {config.name, form, config.cifar ? 32 : 224, config.cifar ? 8 : 32,
             [config](const BuildContext& build) { return build_resnet(build.backend, config, build.options); }});
    }
    return list;
}

}  // namespace trellis::models
