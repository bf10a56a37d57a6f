// SPDX-License-Identifier: Apache-2.0
// The layers a backend provides. Models are written against this interface only, so the CPU
// (oneDNN) and CUDA (cuDNN) backends build the same networks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainer/nn/dropout_mask.hpp"
#include "trainer/nn/layer.hpp"
#include "trainer/nn/softmax_cross_entropy.hpp"
#include "trainer/nn/window.hpp"

namespace trellis::nn {

// How a layer's weights start. 0: the layer's default (He et al.'s normal over the fan-out
// for convolutions, as torchvision's ResNets; PyTorch's uniform for fully connected layers);
// above 0: tf_cnn_benchmarks' variance scaling, a normal with variance gain / fan-in cut at
// two standard deviations (gain 1 for its convolutions and its classifier, 2 for fully
// connected layers before a ReLU). Biases start at 0 there.
struct FanInGain {
    float gain = 0;
};

struct ConvolutionSpec {
    std::string name;
    int in_channels = 0;
    int out_channels = 0;
    Window window;
    bool bias = false;  // the models without batch norm add one
    FanInGain init{};
};

struct LinearSpec {
    std::string name;
    int in_features = 0;  // 0: from the input at setup
    int out_features = 0;
    FanInGain init{};
};

struct BatchNormSpec {
    std::string name;
    int channels = 0;
    bool relu = false;        // a fused ReLU after it
    float scale_init = 1.0f;  // gamma's starting value (0 for the last norm of a residual branch when asked)
    bool learn_scale = true;  // false: gamma is 1 and not a parameter (tf_cnn_benchmarks' default)
    float epsilon = 1e-5f;
    float momentum = 0.1f;  // running = (1 - momentum) running + momentum batch
};

enum class PoolKind {
    max,
    average,  // over the window's pixels inside the image: padding is not counted (TensorFlow's SAME)
};

struct PoolingSpec {
    std::string name;
    PoolKind kind = PoolKind::max;
    Window window;
};

// An image batch as 0..255 bytes, N x H x W x C, and how each channel is normalised:
// value * gain + bias.
struct PixelBytes {
    std::span<const std::uint8_t> values;
    std::array<float, 3> gain{}, bias{};
};

// y = relu(a + b), the end of a residual block, with the gradient sum the shortcut needs.
class ResidualJoin {
public:
    virtual ~ResidualJoin() = default;
    virtual TensorSpec setup(const TensorSpec& a, const TensorSpec& b) = 0;
    // In training the output is kept for the backward pass; in evaluation nothing is.
    virtual tensor::Tensor forward(const tensor::Tensor& a, const tensor::Tensor& b, Mode mode) = 0;
    // The gradient reaching both a and b (relu's backward of dy), in a's layout.
    virtual tensor::Tensor backward(const tensor::Tensor& output_grad) = 0;
    // target += addend, converting the addend's layout when it differs.
    virtual void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) = 0;
};

// y = relu(norm(a) + b): a residual block's join with its main branch's last batch norm, so
// that a backend can run the three as one (cuDNN's BN_ADD_ACTIVATION). Its parameters are the
// norm's, collected where the norm stood: at the end of the main branch, before the shortcut's.
class NormalizedJoin {
public:
    struct Gradients {
        tensor::Tensor a;  // through the norm, for the main branch
        tensor::Tensor b;  // relu's backward of dy, for the shortcut
    };

    virtual ~NormalizedJoin() = default;
    virtual TensorSpec setup(const TensorSpec& a, const TensorSpec& b) = 0;
    virtual void collect(ParameterStore& store) = 0;
    virtual void initialize(std::mt19937_64& rng) = 0;
    virtual tensor::Tensor forward(const tensor::Tensor& a, const tensor::Tensor& b, Mode mode) = 0;
    virtual Gradients backward(const tensor::Tensor& output_grad) = 0;
    // target += addend, converting the addend's layout when it differs.
    virtual void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) = 0;
};

// Branch outputs side by side along the channels (the Inception modules), and the output's
// gradient split back into the branches.
class ChannelConcat {
public:
    virtual ~ChannelConcat() = default;
    // The branches must agree on N, H and W.
    virtual TensorSpec setup(const std::vector<TensorSpec>& branches) = 0;
    virtual tensor::Tensor forward(const std::vector<tensor::Tensor>& branches) = 0;
    // Each branch's part of the gradient, in that branch's layout.
    virtual std::vector<tensor::Tensor> backward(const tensor::Tensor& output_grad) = 0;
    // target += addend (the branches' input gradients add up).
    virtual void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) = 0;
};

// Softmax cross-entropy computed where the logits are (a GPU), so that the backward pass can
// be queued behind it without a round trip through the host.
class DeviceLoss {
public:
    virtual ~DeviceLoss() = default;
    // Queues the loss of the first `count` rows (labels checked here) and returns
    // d(loss)/d(logits) times the backend's gradient_scale(), or an empty tensor when
    // `gradient` is false.
    virtual tensor::Tensor start(const tensor::Tensor& logits, std::span<const int> labels, int count,
                                 const SoftmaxCrossEntropy& loss, bool gradient) = 0;
    // Waits for the loss (not for what was queued after it) and returns the figures.
    virtual LossResult finish() = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;

    virtual LayerPtr convolution(const ConvolutionSpec& spec) = 0;
    virtual LayerPtr batch_norm(const BatchNormSpec& spec) = 0;
    virtual LayerPtr pooling(const PoolingSpec& spec) = 0;
    // Averages each channel over the image; the output is a plain N x C matrix.
    virtual LayerPtr global_average_pool(const std::string& name) = 0;
    // Fully connected, with a bias. An N x C x H x W input is flattened in that order.
    virtual LayerPtr linear(const LinearSpec& spec) = 0;
    virtual LayerPtr relu(const std::string& name) = 0;
    // On an N x F matrix, keeping each value with probability `keep` in training; the mask is
    // drawn from `draw` as it is at each forward pass (dropout_mask.hpp).
    virtual LayerPtr dropout(const std::string& name, float keep, const DropoutDraw& draw) = 0;
    virtual std::unique_ptr<ResidualJoin> residual_join(const std::string& name) = 0;
    // By default the norm is a layer of its own before residual_join (normalized_join.cpp).
    virtual std::unique_ptr<NormalizedJoin> normalized_join(const BatchNormSpec& norm, const std::string& name);
    virtual std::unique_ptr<ChannelConcat> channel_concat(const std::string& name) = 0;

    // The spec of an image batch stored N x H x W x C (as the data pipeline delivers it).
    virtual TensorSpec nhwc_spec(const tensor::Shape& nchw_shape) = 0;
    // A copy in plain row-major (NCHW) order, for tests, evaluation and checkpoints.
    virtual std::vector<float> to_plain(const tensor::Tensor& t) = 0;
    // A tensor in the given spec's layout holding plain NCHW values.
    virtual tensor::Tensor from_plain(const std::vector<float>& values, const TensorSpec& spec) = 0;
    // The input batch where the first layer reads it: the host tensor itself on the CPU, a
    // device copy on a GPU.
    virtual tensor::Tensor stage_input(const tensor::Tensor& host_batch) { return host_batch; }
    // The same from bytes, normalised where the first layer reads them (`spec`: the input's):
    // into a host tensor on the CPU, on the device on a GPU, where a quarter of the bytes
    // crosses the bus.
    virtual tensor::Tensor stage_pixels(const PixelBytes& batch, const TensorSpec& spec) = 0;
    // What the loss gradient is multiplied by before the backward pass (fp16 loss scaling).
    virtual float gradient_scale() const { return 1.0f; }
    // Null: the model computes the loss on the host from to_plain(logits).
    virtual DeviceLoss* device_loss() { return nullptr; }
};

}  // namespace trellis::nn
