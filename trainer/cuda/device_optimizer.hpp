// SPDX-License-Identifier: Apache-2.0
// SGD, RMSProp and LARS on the device: one kernel over every parameter, which also refreshes
// the low-precision copy the convolutions read (LARS first sums each weight's norms on the
// device and takes the trust ratios on the host: one small copy per step). The state lives on
// the device; state() hands the checkpoint and the broadcast host mirrors, under the CPU
// optimizers' slot names, and takes back what they wrote into them.
#pragma once

#include <vector>

#include "trainer/cuda/context.hpp"
#include "trainer/cuda/kernels.hpp"
#include "trainer/optim/optimizer.hpp"

namespace trellis::cuda {

class DeviceOptimizer : public optim::Optimizer {
public:
    DeviceOptimizer(const optim::OptimizerConfig& config, nn::ParameterStore& store, CudaContext& context);
    ~DeviceOptimizer() override;

    std::string name() const override;
    void step(float learning_rate) override;
    std::vector<optim::StateSlot> state() override;
    // fp16 with the overflow-on-device speed item: every step reads this device flag and
    // changes nothing when it is set.
    void skip_when_set(const int* flag) { skip_when_set_ = flag; }

private:
    void update_trust_ratios();

    CudaContext& context_;
    kernels::OptimizerKind kind_;
    kernels::ParameterTable table_{};
    std::vector<std::int64_t> offsets_;
    std::vector<float> decay_;
    std::vector<bool> is_weight_;
    std::vector<float> lr_factor_;
    double* norms_ = nullptr;       // device: 2 per parameter
    float* velocity_ = nullptr;     // device
    float* mean_square_ = nullptr;  // device, RMSProp only
    std::vector<float> host_velocity_, host_mean_square_;
    bool host_is_newer_ = false;  // state() was called: the mirrors may have been written
    const int* skip_when_set_ = nullptr;
};

}  // namespace trellis::cuda
