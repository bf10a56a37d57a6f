#include "trainer/models/resnet.hpp"

#include <stdexcept>

#include "common/error.hpp"
#include "trainer/nn/residual_block.hpp"

namespace trellis::models {

const std::vector<ResNetConfig>& resnet_configs() {
    static const std::vector<ResNetConfig> configs{
        {"resnet18", false, false, {2, 2, 2, 2}, 224, false},
        {"resnet34", false, false, {3, 4, 6, 3}, 224, false},
        {"resnet50", true, false, {3, 4, 6, 3}, 224, false},
        {"resnet101", true, false, {3, 4, 23, 3}, 224, false},
        {"resnet152", true, false, {3, 8, 36, 3}, 224, false},
        {"resnet50_v1", true, false, {3, 4, 6, 3}, 224, true},
        {"resnet101_v1", true, false, {3, 4, 23, 3}, 224, true},
        {"resnet152_v1", true, false, {3, 8, 36, 3}, 224, true},
        {"resnet8", false, true, {1, 1, 1}, 32, false},
        {"resnet20", false, true, {3, 3, 3}, 32, false},
        {"resnet32", false, true, {5, 5, 5}, 32, false},
        {"resnet56", false, true, {9, 9, 9}, 32, false},
    };
    return configs;
}

const ResNetConfig& find_resnet(const std::string& name) {
    std::string accepted;
    for (const auto& config : resnet_configs()) {
        if (config.name == name) return config;
        accepted += (accepted.empty() ? "" : ", ") + config.name;
    }
    throw UsageError("unknown model '" + name + "' (accepted: " + accepted + ")");
}

namespace {

class Builder {
public:
    Builder(nn::Backend& backend, const ResNetOptions& options, bool stride_on_first)
        : backend_(backend), options_(options), stride_on_first_(stride_on_first) {}

    void conv_norm(nn::Sequential& into, const std::string& name, int in, int out, int kernel, int stride,
                   bool relu, bool last_of_branch = false) {
        into.add(backend_.convolution({name + ".conv", in, out, kernel, stride, kernel / 2}));
        float gamma = last_of_branch && options_.zero_init_residual ? 0.0f : 1.0f;
        into.add(backend_.batch_norm(name + ".bn", out, relu, gamma));
    }

    nn::LayerPtr block(const std::string& name, bool bottleneck, int in, int width, int stride) {
        int out = bottleneck ? width * 4 : width;
        auto main = std::make_unique<nn::Sequential>();
        if (bottleneck) {
            int first = stride_on_first_ ? stride : 1;  // v1 strides on the 1x1, v1.5 on the 3x3
            conv_norm(*main, name + ".1", in, width, 1, first, true);
            conv_norm(*main, name + ".2", width, width, 3, stride / first, true);
            conv_norm(*main, name + ".3", width, out, 1, 1, false, true);
        } else {
            conv_norm(*main, name + ".1", in, width, 3, stride, true);
            conv_norm(*main, name + ".2", width, out, 3, 1, false, true);
        }
        auto shortcut = std::make_unique<nn::Sequential>();
        if (stride != 1 || in != out) conv_norm(*shortcut, name + ".downsample", in, out, 1, stride, false);
        return std::make_unique<nn::ResidualBlock>(std::move(main), std::move(shortcut),
                                                   backend_.residual_join(name + ".join"));
    }

private:
    nn::Backend& backend_;
    const ResNetOptions& options_;
    bool stride_on_first_;
};

}  // namespace

double multiply_accumulates(const ResNetConfig& config, int image_size, int num_classes) {
    double total = 0;
    int size = image_size;
    // A convolution with padding kernel/2 on a size x size input; returns the output size.
    auto conv = [&total](int in_size, int in, int out, int kernel, int stride) {
        int out_size = (in_size + 2 * (kernel / 2) - kernel) / stride + 1;
        total += double(out_size) * out_size * in * out * kernel * kernel;
        return out_size;
    };
    int channels;
    std::vector<int> widths;
    if (config.cifar) {
        channels = 16, widths = {16, 32, 64};
        size = conv(size, 3, channels, 3, 1);
    } else {
        channels = 64, widths = {64, 128, 256, 512};
        size = conv(size, 3, channels, 7, 2);
        size = (size + 2 - 3) / 2 + 1;  // max pooling 3x3, stride 2, padding 1
    }
    for (std::size_t stage = 0; stage < config.blocks.size(); ++stage)
        for (int b = 0; b < config.blocks[stage]; ++b) {
            int stride = (b == 0 && stage > 0) ? 2 : 1, width = widths[stage];
            int out = config.bottleneck ? width * 4 : width;
            if (stride != 1 || channels != out) conv(size, channels, out, 1, stride);
            if (config.bottleneck) {
                int first = config.stride_on_first ? stride : 1;
                int inner = conv(size, channels, width, 1, first);
                inner = conv(inner, width, width, 3, stride / first);
                size = conv(inner, width, out, 1, 1);
            } else {
                size = conv(conv(size, channels, width, 3, stride), width, out, 3, 1);
            }
            channels = out;
        }
    return total + double(channels) * num_classes;
}

std::unique_ptr<nn::Sequential> build_resnet(nn::Backend& backend, const ResNetConfig& config,
                                             const ResNetOptions& options) {
    if (options.num_classes < 2) throw UsageError("--num-classes must be at least 2");
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
        net->add(backend.convolution({"stem.conv", 3, channels, 7, 2, 3}));
        net->add(backend.batch_norm("stem.bn", channels, true, 1.0f));
        net->add(backend.max_pool("stem.pool", 3, 2, 1));
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
    net->add(backend.linear("fc", channels, options.num_classes));
    return net;
}

}  // namespace trellis::models
