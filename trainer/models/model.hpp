// SPDX-License-Identifier: Apache-2.0
// A network set up for one batch shape, with its parameters allocated and initialised, and
// the two things a trainer does with it: a training step and an evaluation pass.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "trainer/models/architecture.hpp"
#include "trainer/nn/backend.hpp"
#include "trainer/nn/softmax_cross_entropy.hpp"

namespace trellis::models {

// Which of a step's batches this is, when a step adds the gradients of several, and the step
// (dropout draws its masks from the two).
struct StepPart {
    int index = 0, count = 1;
    std::int64_t step = 0;
};

// A batch of images as the steps take them, batch x size x size x 3 (NHWC, the pipeline's
// layout): normalised floats, or bytes that the backend normalises where it computes.
struct Images {
    std::span<const float> floats;
    nn::PixelBytes bytes;     // used when `floats` is empty
    bool unchanging = false;  // the same values at every step (synthetic data)

    Images(std::span<const float> normalised) : floats(normalised) {}
    Images(const std::vector<float>& normalised) : floats(normalised) {}
    Images(nn::PixelBytes raw) : bytes(raw) {}
};

class Model {
public:
    // The first convolution converts the images of a step to the backend's layout.
    // Throws UsageError when the images are smaller than the model takes.
    Model(nn::Backend& backend, const Architecture& architecture, const ModelOptions& options, int batch,
          int image_size, std::uint64_t seed);

    const Architecture& architecture() const { return architecture_; }
    const std::string& name() const { return architecture_.name; }
    double gmacs_per_image() const { return gmacs_per_image_; }
    int batch() const { return batch_; }
    int num_classes() const { return num_classes_; }
    nn::ParameterStore& parameters() { return store_; }
    // Training batches marked unchanging are staged once and kept where the backend computes
    // (on a GPU, device memory instead of a copy at every step).
    void keep_unchanging_batches(bool keep) { keep_unchanging_ = keep; }

    // Called during backward with an offset into the flat gradients: from there to the end
    // they are final for this step.
    using GradientsReady = std::function<void(std::size_t offset)>;

    // Forward, loss and backward: the parameters' gradients are this batch's afterwards; with
    // a step of several parts, after the last part they are the mean over the parts (the
    // earlier parts' are held aside), and `ready` is called during the last part only.
    // Several parts need the CPU backend (UsageError otherwise).
    nn::LossResult train_step(const Images& images, std::span<const int> labels, const nn::SoftmaxCrossEntropy& loss,
                              const GradientsReady& ready = {}, StepPart part = {});
    // Inference with running statistics; only the first `count` images are scored (a final
    // partial batch is padded by the caller).
    nn::LossResult evaluate(const Images& images, std::span<const int> labels, int count,
                            const nn::SoftmaxCrossEntropy& loss);

private:
    // The batch where the first layer reads it.
    tensor::Tensor stage(const Images& images) const;

    nn::Backend& backend_;
    Architecture architecture_;
    int batch_, image_size_, num_classes_;
    nn::DropoutDraw dropout_;  // before the network: its dropout layers hold a reference
    double gmacs_per_image_ = 0;
    std::unique_ptr<nn::Sequential> network_;
    nn::TensorSpec input_spec_;
    nn::ParameterStore store_;
    std::vector<float> logits_grad_;
    bool keep_unchanging_ = false;
    mutable tensor::Tensor kept_input_;
    std::vector<float> held_grads_;           // the sum of a step's earlier parts
    std::vector<std::size_t> layer_offsets_;  // where each top-level layer's gradients start
};

}  // namespace trellis::models
