#include "trainer/nn/cuda/device_sgd.hpp"

#include "trainer/nn/cuda/cuda_check.hpp"
#include "trainer/nn/cuda/kernels.hpp"

namespace trellis::nn::cuda {

DeviceSgd::DeviceSgd(const optim::OptimizerConfig& config, ParameterStore& store, CudaContext& context)
    : Optimizer(config, store), context_(context), host_velocity_(std::size_t(store.learned_elements()), 0.0f) {
    auto n = host_velocity_.size();
    velocity_ = static_cast<float*>(device_allocate(n * 4, "the momentum"));
    decays_ = static_cast<std::uint8_t*>(device_allocate(n, "the weight-decay mask"));
    std::vector<std::uint8_t> decays;
    decays.reserve(n);
    for (auto* p : store.learned()) decays.insert(decays.end(), std::size_t(p->elements()), decay_of(*p) > 0 ? 1 : 0);
    check(cudaMemcpy(decays_, decays.data(), n, cudaMemcpyHostToDevice), "uploading the decay mask");
    check(cudaMemset(velocity_, 0, n * 4), "clearing the velocity");
}

DeviceSgd::~DeviceSgd() {
    cudaFree(velocity_);
    cudaFree(decays_);
}

void DeviceSgd::step(float lr) {
    auto& params = context_.parameters();
    if (host_is_newer_) {
        params.upload_learned(host_velocity_, velocity_);
        host_is_newer_ = false;
    }
    kernels::SgdStep step{lr, config_.momentum, config_.weight_decay, config_.nesterov};
    kernels::sgd(params.values(), params.grads(), velocity_, decays_, params.mixed() ? params.low_values() : nullptr,
                 params.low_type(), params.learned_elements(), step, context_.stream());
}

std::vector<optim::StateSlot> DeviceSgd::state() {
    context_.parameters().download_learned(velocity_, host_velocity_);
    host_is_newer_ = true;
    return {{"momentum", &host_velocity_}};  // the CPU Sgd's name: checkpoints move between them
}

}  // namespace trellis::nn::cuda
