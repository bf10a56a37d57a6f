// Momentum SGD on the device: one kernel over every parameter, which also refreshes the
// low-precision copy the convolutions read. The velocity lives on the device; state() hands
// the checkpoint and the broadcast a host mirror and takes back what they wrote into it.
#pragma once

#include <vector>

#include "trainer/nn/cuda/cuda_context.hpp"
#include "trainer/optim/optimizer.hpp"

namespace trellis::nn::cuda {

class DeviceSgd : public optim::Optimizer {
public:
    DeviceSgd(const optim::OptimizerConfig& config, ParameterStore& store, CudaContext& context);
    ~DeviceSgd() override;

    std::string name() const override { return config_.nesterov ? "sgd (nesterov, on the GPU)" : "sgd (on the GPU)"; }
    void step(float learning_rate) override;
    std::vector<optim::StateSlot> state() override;

private:
    CudaContext& context_;
    float* velocity_ = nullptr;
    std::uint8_t* decays_ = nullptr;  // 1 where weight decay applies
    std::vector<float> host_velocity_;
    bool host_is_newer_ = false;  // state() was called: the mirror may have been written
};

}  // namespace trellis::nn::cuda
