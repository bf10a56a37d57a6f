// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/batch_norm.hpp"

#include <cstdio>

#include "trainer/cuda/check.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

BatchNorm::BatchNorm(CudaContext& context, const nn::BatchNormSpec& spec, bool joined)
    : context_(context), parameters_(spec), name_(parameters_.spec.name), relu_(spec.relu), joined_(joined) {
    check(cudnnCreateTensorDescriptor(&channel_desc_), "cudnnCreateTensorDescriptor");
    check(cudnnCreateActivationDescriptor(&relu_desc_), "cudnnCreateActivationDescriptor");
    check(cudnnSetActivationDescriptor(relu_desc_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          name_ + ": relu descriptor");
    fused_ = relu_;
    fused_join_ = joined_;
}

BatchNorm::~BatchNorm() {
    cudnnDestroyTensorDescriptor(channel_desc_);
    cudnnDestroyActivationDescriptor(relu_desc_);
}

nn::TensorSpec BatchNorm::setup(const nn::TensorSpec& input, bool) {
    shape_ = input.shape;
    parameters_.check_input(shape_);
    type_ = type_of(input);
    data_desc_ = TensorDescriptor(shape_, type_);
    // One scale, shift and statistic per channel, whichever kernels run.
    check(cudnnDeriveBNTensorDescriptor(channel_desc_, data_desc_, CUDNN_BATCHNORM_SPATIAL),
          name_ + ": channel descriptor");
    if (!parameters_.spec.learn_scale) {
        tensor::Shape channels{parameters_.spec.channels};
        ones_ = context_.allocate(channels, tensor::DType::f32);
        scale_grad_ = context_.allocate(channels, tensor::DType::f32);
        // On the compute stream, which does not wait for the legacy stream's copies; the host
        // vector is pageable, so the copy must be finished before it can change.
        check(cudaMemcpyAsync(ones_.data(), parameters_.ones.data(), parameters_.ones.size() * sizeof(float),
                              cudaMemcpyHostToDevice, context_.stream()),
              name_ + ": ones for the scale");
        check(cudaStreamSynchronize(context_.stream()), name_ + ": ones for the scale");
    }
    return input;
}

tensor::Tensor BatchNorm::forward(const tensor::Tensor& input, nn::Mode mode) {
    auto timed = context_.profile().time("batch norm forward", context_.stream());
    if (mode == nn::Mode::eval) {
        auto output = inference(input);
        if (relu_) apply_relu(output);
        return output;
    }
    auto output = train_forward(input, {});
    if (relu_ && !fused_) apply_relu(output);
    input_ = input;
    if (relu_) output_ = output;  // the ReLU's backward reads the output
    return output;
}

tensor::Tensor BatchNorm::forward_joined(const tensor::Tensor& input, const tensor::Tensor& addend, nn::Mode mode) {
    auto timed = context_.profile().time("batch norm forward", context_.stream());
    auto n = std::size_t(shape_.elements());
    if (mode == nn::Mode::eval) {
        auto output = inference(input);
        kernels::add_relu(output.data(), addend.data(), output.data(), type_, n, context_.stream());
        return output;
    }
    auto output = train_forward(input, addend);
    if (!fused_join_) kernels::add_relu(output.data(), addend.data(), output.data(), type_, n, context_.stream());
    input_ = input;
    output_ = output;  // the ReLU's backward reads the output
    return output;
}

tensor::Tensor BatchNorm::inference(const tensor::Tensor& input) {
    auto& params = context_.parameters();
    const auto& spec = parameters_.spec;
    auto output = context_.allocate(shape_, type_);
    float one = 1, zero = 0;
    check(cudnnBatchNormalizationForwardInference(
              context_.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, data_desc_, input.data(), data_desc_,
              output.data(), channel_desc_, spec.learn_scale ? params.value(parameters_.scale) : ones_.data(),
              params.value(parameters_.shift), params.value(parameters_.running_mean),
              params.value(parameters_.running_variance), spec.epsilon),
          name_ + ": inference");
    return output;
}

tensor::Tensor BatchNorm::train_forward(const tensor::Tensor& input, const tensor::Tensor& addend) {
    const void* scale = parameters_.spec.learn_scale ? context_.parameters().value(parameters_.scale) : ones_.data();
    auto output = context_.allocate(shape_, type_);
    auto status = training_forward(input, addend, output, scale);
    // cuDNN fuses the ReLU (and the sum), and runs its persistent kernels, only for some types
    // and shapes. A refusal is answered by the next kernels of the chain, and the layer keeps
    // them. cuDNN 9's refusals are a category of codes (NOT_SUPPORTED_SHAPE, _DATA_TYPE, ...).
    while (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED && fall_back())
        status = training_forward(input, addend, output, scale);
    check(status, name_ + ": training forward");
    return output;
}

bool BatchNorm::fall_back() {
    if (fused_join_)
        fused_join_ = false;
    else if (fused_)
        fused_ = false;
    else if (mode_ != CUDNN_BATCHNORM_SPATIAL)
        mode_ = CUDNN_BATCHNORM_SPATIAL;
    else
        return false;
    std::fprintf(stderr, "%s: cuDNN refused its batch norm kernels in %s; using %s%s\n", name_.c_str(),
                 std::string(tensor::name(type_)).c_str(),
                 mode_ == CUDNN_BATCHNORM_SPATIAL ? "the spatial kernels" : "the persistent kernels",
                 joined_ ? ", the shortcut's sum and the ReLU apart"
                 : relu_ ? " and a separate ReLU"
                         : "");
    return true;
}

// The module's own ReLU where cuDNN's is not fused: it takes every type the layer computes in.
void BatchNorm::apply_relu(const tensor::Tensor& output) {
    kernels::relu(output.data(), output.data(), type_, std::size_t(shape_.elements()), context_.stream());
}

cudnnBatchNormOps_t BatchNorm::ops() const {
    if (fused_join_) return CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    return fused_ ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : CUDNN_BATCHNORM_OPS_BN;
}

cudnnStatus_t BatchNorm::training_forward(const tensor::Tensor& input, const tensor::Tensor& addend,
                                          const tensor::Tensor& output, const void* scale) {
    auto& params = context_.parameters();
    const auto& spec = parameters_.spec;
    auto cudnn = context_.cudnn();
    float one = 1, zero = 0;
    auto ops = this->ops();
    cudnnActivationDescriptor_t activation = ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : relu_desc_;
    cudnnTensorDescriptor_t z_desc = fused_join_ ? static_cast<cudnnTensorDescriptor_t>(data_desc_) : nullptr;
    std::size_t work_bytes = 0, reserve_bytes = 0, backward_bytes = 0;
    auto status = cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
        cudnn, mode_, ops, data_desc_, z_desc, data_desc_, channel_desc_, activation, &work_bytes);
    if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnGetBatchNormalizationTrainingExReserveSpaceSize(cudnn, mode_, ops, activation, data_desc_,
                                                                      &reserve_bytes);
    // The fused sum's backward is asked for too, while the chain can still fall back: once,
    // the shapes being the layer's for good (each call costs host time at every step).
    if (status == CUDNN_STATUS_SUCCESS && fused_join_ && !fused_join_accepted_) {
        status = cudnnGetBatchNormalizationBackwardExWorkspaceSize(cudnn, mode_, ops, data_desc_, data_desc_,
                                                                   data_desc_, z_desc, data_desc_, channel_desc_,
                                                                   activation, &backward_bytes);
        fused_join_accepted_ = status == CUDNN_STATUS_SUCCESS;
    }
    if (status != CUDNN_STATUS_SUCCESS) return status;
    saved_mean_ = context_.allocate(tensor::Shape{spec.channels}, tensor::DType::f32);
    saved_inverse_std_ = context_.allocate(tensor::Shape{spec.channels}, tensor::DType::f32);
    // The reserve space is opaque bytes, held as 2-byte elements.
    reserve_ = reserve_bytes
                   ? context_.allocate(tensor::Shape{std::int64_t((reserve_bytes + 1) / 2)}, tensor::DType::bf16)
                   : tensor::Tensor();
    return cudnnBatchNormalizationForwardTrainingEx(
        cudnn, mode_, ops, &one, &zero, data_desc_, input.data(), z_desc, fused_join_ ? addend.data() : nullptr,
        data_desc_, output.data(), channel_desc_, scale, params.value(parameters_.shift), spec.momentum,
        params.value(parameters_.running_mean), params.value(parameters_.running_variance), spec.epsilon,
        saved_mean_.data(), saved_inverse_std_.data(), activation, context_.workspace(work_bytes), work_bytes,
        reserve_bytes ? reserve_.data() : nullptr, reserve_bytes);
}

tensor::Tensor BatchNorm::backward(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("batch norm backward", context_.stream());
    tensor::Tensor norm_grad = output_grad;
    if (relu_ && !fused_) {
        // ReLU's backward from its output: y > 0 exactly where its input was.
        norm_grad = context_.allocate(shape_, type_);
        kernels::relu_backward(output_.data(), output_grad.data(), norm_grad.data(), type_,
                               std::size_t(shape_.elements()), context_.stream());
    }
    auto input_grad = context_.allocate(shape_, type_);
    check(run_backward(norm_grad, input_grad, {}), name_ + ": backward");
    forget();
    return input_grad;
}

nn::NormalizedJoin::Gradients BatchNorm::backward_joined(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("batch norm backward", context_.stream());
    // The shortcut's gradient is the ReLU's backward, which the norm's backward also starts from.
    auto addend_grad = context_.allocate(shape_, type_);
    auto input_grad = context_.allocate(shape_, type_);
    if (fused_join_) {
        auto status = run_backward(output_grad, input_grad, addend_grad);
        if (CUDNN_STATUS_CATEGORY(status) != CUDNN_STATUS_NOT_SUPPORTED) {
            check(status, name_ + ": backward");
            forget();
            return {input_grad, addend_grad};
        }
        // Refused after a fused forward: the plain kernels take the saved mean and inverse
        // deviation that forward wrote (not its reserve space), now and from the next step on.
        fused_join_ = false;
        mode_ = CUDNN_BATCHNORM_SPATIAL;
        reserve_ = {};
        std::fprintf(stderr,
                     "%s: cuDNN refused the backward pass of its fused batch norm, sum and ReLU in %s; using the "
                     "spatial kernels, the shortcut's sum and the ReLU apart\n",
                     name_.c_str(), std::string(tensor::name(type_)).c_str());
    }
    kernels::relu_backward(output_.data(), output_grad.data(), addend_grad.data(), type_,
                           std::size_t(shape_.elements()), context_.stream());
    check(run_backward(addend_grad, input_grad, {}), name_ + ": backward");
    forget();
    return {input_grad, addend_grad};
}

void BatchNorm::forget() { input_ = output_ = saved_mean_ = saved_inverse_std_ = reserve_ = {}; }

cudnnStatus_t BatchNorm::run_backward(const tensor::Tensor& norm_grad, const tensor::Tensor& input_grad,
                                      const tensor::Tensor& addend_grad) {
    auto& params = context_.parameters();
    bool learnt = parameters_.spec.learn_scale;
    auto cudnn = context_.cudnn();
    float one = 1, zero = 0;
    auto ops = this->ops();
    cudnnActivationDescriptor_t activation = ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : relu_desc_;
    cudnnTensorDescriptor_t y_desc =
        ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : static_cast<cudnnTensorDescriptor_t>(data_desc_);
    cudnnTensorDescriptor_t dz_desc = fused_join_ ? static_cast<cudnnTensorDescriptor_t>(data_desc_) : nullptr;
    std::size_t work_bytes = 0;
    auto status = cudnnGetBatchNormalizationBackwardExWorkspaceSize(
        cudnn, mode_, ops, data_desc_, y_desc, data_desc_, dz_desc, data_desc_, channel_desc_, activation, &work_bytes);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    std::size_t reserve_bytes = reserve_.empty() ? 0 : reserve_.bytes();
    return cudnnBatchNormalizationBackwardEx(
        cudnn, mode_, ops, &one, &zero, &one, &zero, data_desc_, input_.data(), y_desc,
        y_desc ? output_.data() : nullptr, data_desc_, norm_grad.data(), dz_desc,
        dz_desc ? addend_grad.data() : nullptr, data_desc_, input_grad.data(), channel_desc_,
        learnt ? params.value(parameters_.scale) : ones_.data(), params.value(parameters_.shift),
        learnt ? params.grad(parameters_.scale) : scale_grad_.data(), params.grad(parameters_.shift),
        parameters_.spec.epsilon, saved_mean_.data(), saved_inverse_std_.data(), activation,
        context_.workspace(work_bytes), work_bytes, reserve_bytes ? reserve_.data() : nullptr, reserve_bytes);
}

}  // namespace trellis::cuda
