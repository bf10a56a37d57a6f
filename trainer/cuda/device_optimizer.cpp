// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/device_optimizer.hpp"

#include <cmath>

#include "trainer/cuda/check.hpp"
#include "trainer/optim/lars.hpp"

namespace trellis::cuda {

namespace {

kernels::OptimizerKind kind_of(optim::OptimizerKind kind) {
    switch (kind) {
    case optim::OptimizerKind::rmsprop: return kernels::OptimizerKind::rmsprop;
    case optim::OptimizerKind::lars: return kernels::OptimizerKind::lars;
    case optim::OptimizerKind::sgd: break;
    }
    return kernels::OptimizerKind::sgd;
}

// On the compute stream, which is non-blocking and so not ordered after the legacy stream's
// copies; waited for, since pageable host memory may be copied after the call returns.
template <typename T>
T* uploaded(const std::vector<T>& host, const char* what, cudaStream_t stream) {
    auto* device = static_cast<T*>(device_allocate(host.size() * sizeof(T), what));
    check(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream), what);
    check(cudaStreamSynchronize(stream), what);
    return device;
}

}  // namespace

DeviceOptimizer::DeviceOptimizer(const optim::OptimizerConfig& config, nn::ParameterStore& store, CudaContext& context)
    : Optimizer(config, store), context_(context), kind_(kind_of(config.kind)) {
    // The table holds the device's offsets (each parameter padded to its alignment): the
    // kernel runs over the device's arrays, gaps included.
    const auto& layout = context_.parameters().learned_layout();
    for (std::size_t i = 0; i < store.learned().size(); ++i) {
        const auto* p = store.learned()[i];
        offsets_.push_back(std::int64_t(layout.device_start(i)));
        decay_.push_back(decay_of(*p));
        is_weight_.push_back(p->kind == nn::ParameterKind::weight);
    }
    offsets_.push_back(std::int64_t(layout.device_size()));
    lr_factor_.assign(decay_.size(), 1.0f);
    table_.offsets = uploaded(offsets_, "the parameter table", context_.stream());
    table_.decay = uploaded(decay_, "the weight decays", context_.stream());
    table_.lr_factor = uploaded(lr_factor_, "the layer-wise rates", context_.stream());
    table_.count = int(decay_.size());
    // RMSProp's mean square starts at 1, as the CPU's (and TensorFlow's).
    // The state's host copies are laid out like the store's values, for checkpoints.
    auto& params = context_.parameters();
    host_velocity_.assign(layout.host_size(), 0.0f);
    velocity_ = static_cast<float*>(device_allocate(layout.device_size() * 4, "the momentum"));
    params.upload_learned(host_velocity_, velocity_);
    if (kind_ == kernels::OptimizerKind::rmsprop) {
        host_mean_square_.assign(layout.host_size(), 1.0f);
        mean_square_ = static_cast<float*>(device_allocate(layout.device_size() * 4, "the mean squares"));
        params.upload_learned(host_mean_square_, mean_square_);
    }
    if (kind_ == kernels::OptimizerKind::lars)
        norms_ = static_cast<double*>(device_allocate(decay_.size() * 2 * sizeof(double), "the LARS norms"));
}

DeviceOptimizer::~DeviceOptimizer() {
    for (const void* p : {static_cast<const void*>(table_.offsets), static_cast<const void*>(table_.decay),
                          static_cast<const void*>(table_.lr_factor), static_cast<const void*>(velocity_),
                          static_cast<const void*>(mean_square_), static_cast<const void*>(norms_)})
        if (p) cudaFree(const_cast<void*>(p));
}

std::string DeviceOptimizer::name() const {
    bool nesterov = config_.nesterov && kind_ == kernels::OptimizerKind::sgd;
    return optim::optimizer_kinds().name(config_.kind) + (nesterov ? " (nesterov, on the GPU)" : " (on the GPU)");
}

void DeviceOptimizer::update_trust_ratios() {
    auto& params = context_.parameters();
    auto stream = context_.stream();
    kernels::parameter_norms(params.values(), params.grads(), table_, norms_, stream);
    std::vector<double> norms(decay_.size() * 2);
    check(cudaMemcpyAsync(norms.data(), norms_, norms.size() * sizeof(double), cudaMemcpyDeviceToHost, stream),
          "reading the LARS norms");
    check(cudaStreamSynchronize(stream), "reading the LARS norms");
    // As the CPU's LARS: weights take the trust ratio, batch norm parameters and biases not.
    for (std::size_t p = 0; p < decay_.size(); ++p)
        lr_factor_[p] = is_weight_[p]
                            ? float(optim::Lars::trust_ratio(std::sqrt(norms[2 * p]), std::sqrt(norms[2 * p + 1]),
                                                             decay_[p], config_.lars_eta))
                            : 1.0f;
    check(cudaMemcpyAsync(const_cast<float*>(table_.lr_factor), lr_factor_.data(), lr_factor_.size() * sizeof(float),
                          cudaMemcpyHostToDevice, stream),
          "uploading the LARS rates");
    check(cudaStreamSynchronize(stream), "uploading the LARS rates");
}

void DeviceOptimizer::step(float lr) {
    auto timed = context_.profile().time("optimizer", context_.stream());
    auto& params = context_.parameters();
    if (host_is_newer_) {
        params.upload_learned(host_velocity_, velocity_);
        if (mean_square_) params.upload_learned(host_mean_square_, mean_square_);
        host_is_newer_ = false;
    }
    if (kind_ == kernels::OptimizerKind::lars) update_trust_ratios();
    kernels::OptimizerStep step{
        kind_, lr, config_.momentum, config_.nesterov, config_.rmsprop_decay, config_.rmsprop_epsilon, skip_when_set_};
    kernels::optimizer_step(params.values(), params.grads(), velocity_, mean_square_, table_,
                            params.mixed() ? params.low_values() : nullptr, params.low_type(),
                            params.learned_elements(), step, context_.stream());
}

std::vector<optim::StateSlot> DeviceOptimizer::state() {
    auto& params = context_.parameters();
    params.download_learned(velocity_, host_velocity_);
    host_is_newer_ = true;
    if (!mean_square_) return {{"momentum", &host_velocity_}};
    params.download_learned(mean_square_, host_mean_square_);
    return {{"mean_square", &host_mean_square_}, {"momentum", &host_velocity_}};
}

}  // namespace trellis::cuda
