// SPDX-License-Identifier: Apache-2.0
#include "trainer/models/model.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::models {

Model::Model(nn::Backend& backend, const Architecture& architecture, const ModelOptions& options, int batch,
             int image_size, std::uint64_t seed)
    : backend_(backend),
      architecture_(architecture),
      batch_(batch),
      image_size_(image_size),
      num_classes_(options.num_classes),
      dropout_{seed, 0} {
    if (batch < 1) throw UsageError("batch size must be at least 1");
    if (options.num_classes < 2) throw UsageError("--num-classes must be at least 2");
    if (image_size < architecture.minimum_image_size)
        throw UsageError(architecture.name + " needs images of at least " +
                         std::to_string(architecture.minimum_image_size) + " pixels, got " +
                         std::to_string(image_size));
    network_ = architecture.build({backend, options, dropout_});
    input_spec_ = backend.nhwc_spec(tensor::Shape{batch, 3, image_size, image_size});
    network_->setup(input_spec_, false);
    for (const auto& layer : network_->layers()) gmacs_per_image_ += layer->multiply_accumulates();
    gmacs_per_image_ /= 1e9 * batch;
    std::vector<std::size_t> first_parameter;
    for (const auto& layer : network_->layers()) {
        first_parameter.push_back(store_.learned().size());
        layer->collect(store_);
    }
    store_.allocate();
    for (auto index : first_parameter)
        layer_offsets_.push_back(index < store_.learned().size()
                                     ? std::size_t(store_.learned()[index]->value - store_.values().data())
                                     : store_.values().size());
    std::mt19937_64 rng(seed);
    network_->initialize(rng);
    logits_grad_.resize(std::size_t(batch) * num_classes_);
}

tensor::Tensor Model::stage(const Images& images) const {
    auto expected = static_cast<std::size_t>(input_spec_.shape.elements());
    auto given = images.floats.empty() ? images.bytes.values.size() : images.floats.size();
    if (given != expected)
        throw UsageError("batch holds " + std::to_string(given) + " values, the model expects " +
                         std::to_string(expected));
    if (images.unchanging && keep_unchanging_ && !kept_input_.empty()) return kept_input_;
    tensor::Tensor staged;
    const void* borrowed_data = nullptr;
    if (images.floats.empty()) {
        staged = backend_.stage_pixels(images.bytes, input_spec_);
    } else {
        // The batch buffer stays owned by the pipeline; the tensor only borrows it for the step.
        std::shared_ptr<std::byte> borrowed(reinterpret_cast<std::byte*>(const_cast<float*>(images.floats.data())),
                                            [](std::byte*) {});
        borrowed_data = borrowed.get();
        staged =
            backend_.stage_input(tensor::Tensor(input_spec_.shape, tensor::DType::f32, input_spec_.layout, borrowed));
    }
    // Kept only where staging copied it: a tensor that borrows the pipeline's buffer may not.
    if (images.unchanging && keep_unchanging_ && staged.data() != borrowed_data) kept_input_ = staged;
    return staged;
}

nn::LossResult Model::train_step(const Images& images, std::span<const int> labels, const nn::SoftmaxCrossEntropy& loss,
                                 const GradientsReady& ready, StepPart part) {
    if (part.count > 1 && backend_.device_loss())
        throw UsageError("--accumulate: adding the gradients of several batches runs on the CPU backend only");
    bool last = part.index + 1 == part.count;
    dropout_.draw = std::uint64_t(part.step) * std::uint64_t(part.count) + std::uint64_t(part.index);
    auto grads = store_.grads();
    auto logits = network_->forward(stage(images), nn::Mode::train);
    std::function<void(std::size_t)> after;
    std::size_t held_from = grads.size();  // [held_from, end) has the earlier parts added
    if (part.count > 1 && last) {
        // Layers finish back to front: each callback makes the gradients from its offset to
        // the previous one final, and they are completed before anyone is told.
        after = [&](std::size_t layer) {
            std::size_t offset = layer_offsets_[layer];
            for (std::size_t i = offset; i < held_from; ++i) grads[i] += held_grads_[i];
            held_from = std::min(held_from, offset);
            if (ready) ready(offset);
        };
    } else if (ready && last) {
        after = [&](std::size_t layer) { ready(layer_offsets_[layer]); };
    }
    if (auto* device = backend_.device_loss()) {
        // The backward pass is queued behind the loss; waiting for the loss leaves it running.
        auto grad = device->start(logits, labels, int(labels.size()), loss, true);
        network_->backward(grad, after);
        return device->finish();
    }
    auto values = backend_.to_plain(logits);
    auto result = loss.evaluate(values, labels, num_classes_, logits_grad_);
    // The mean over the parts: each part's loss gradient is already a mean over its batch.
    if (float scale = backend_.gradient_scale() / float(part.count); scale != 1.0f)
        for (auto& g : logits_grad_) g *= scale;
    network_->backward(backend_.from_plain(logits_grad_, {logits.shape(), nullptr}), after);
    if (part.count == 1) return result;
    if (last) {
        for (std::size_t i = 0; i < held_from; ++i) grads[i] += held_grads_[i];  // layers with no callback
    } else if (part.index == 0) {
        held_grads_.assign(grads.begin(), grads.end());
    } else {
        for (std::size_t i = 0; i < grads.size(); ++i) held_grads_[i] += grads[i];
    }
    return result;
}

nn::LossResult Model::evaluate(const Images& images, std::span<const int> labels, int count,
                               const nn::SoftmaxCrossEntropy& loss) {
    auto logits = network_->forward(stage(images), nn::Mode::eval);
    if (auto* device = backend_.device_loss()) {
        device->start(logits, labels, count, loss, false);
        return device->finish();
    }
    auto values = backend_.to_plain(logits);
    values.resize(std::size_t(count) * num_classes_);
    return loss.evaluate(values, labels.first(count), num_classes_, {});
}

}  // namespace trellis::models
