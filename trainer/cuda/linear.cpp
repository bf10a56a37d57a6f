// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/linear.hpp"

#include "trainer/cuda/check.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

Linear::Linear(CudaContext& context, const nn::LinearSpec& spec) : context_(context), parameters_(spec) {}

nn::TensorSpec Linear::setup(const nn::TensorSpec& input, bool input_grad) {
    parameters_.resolve_input(input.shape);
    image_shape_ = input.shape.rank() == 4 ? input.shape : tensor::Shape{};
    input_type_ = type_of(input);
    input_grad_ = input_grad;
    batch_ = int(input.shape[0]);
    return context_.spec(tensor::Shape{batch_, parameters_.out_features}, tensor::DType::f32);
}

void Linear::collect(nn::ParameterStore& store) {
    parameters_.collect(store);
    // The GPU's images are N x H x W x C: a flattened one is in H, W, C order, so the weight,
    // O x (C x H x W) as the CPU and checkpoints hold it, is held O x H x W x C here.
    if (image_shape_.rank() == 4)
        context_.parameters().hold_as_ohwi(parameters_.weight, tensor::Shape{parameters_.out_features, image_shape_[1],
                                                                             image_shape_[2], image_shape_[3]});
}

tensor::Tensor Linear::widened(const tensor::Tensor& input) const {
    if (input_type_ == tensor::DType::f32) return input;
    auto wide = context_.allocate(tensor::Shape{batch_, parameters_.in_features}, tensor::DType::f32);
    kernels::convert(input.data(), input_type_, wide.f32(), tensor::DType::f32, std::size_t(wide.shape().elements()),
                     1.0f, context_.stream());
    return wide;
}

// Row-major matrices are cuBLAS's column-major transposes: y (N x out) = x W^T + b is
// computed as y^T = W x^T, with W^T stored column-major being W row-major.
tensor::Tensor Linear::forward(const tensor::Tensor& input, nn::Mode mode) {
    auto timed = context_.profile().time("fully connected", context_.stream());
    auto& params = context_.parameters();
    const int in = parameters_.in_features, out = parameters_.out_features;
    const auto &weight = parameters_.weight, &bias = parameters_.bias;
    auto output = context_.allocate(tensor::Shape{batch_, out}, tensor::DType::f32);
    float one = 1, zero = 0;
    auto x = widened(input);
    check(cublasSgemm(context_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out, batch_, in, &one, params.value(weight), in,
                      x.f32(), in, &zero, output.f32(), out),
          weight.name + ": forward");
    kernels::add_bias(output.f32(), params.value(bias), batch_, out, context_.stream());
    if (mode == nn::Mode::train) input_ = x;
    return output;
}

tensor::Tensor Linear::backward(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("fully connected", context_.stream());
    auto& params = context_.parameters();
    const int in = parameters_.in_features, out = parameters_.out_features;
    const auto &weight = parameters_.weight, &bias = parameters_.bias;
    auto cublas = context_.cublas();
    float one = 1, zero = 0;
    // dW (out x in) = dy^T x, as column-major dW^T (in x out) = x^T dy.
    check(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch_, &one, input_.f32(), in, output_grad.f32(), out,
                      &zero, params.grad(weight), in),
          weight.name + ": weight gradient");
    kernels::bias_gradient(output_grad.f32(), params.grad(bias), batch_, out, context_.stream());
    tensor::Tensor input_grad;
    if (input_grad_) {
        // dx (N x in) = dy W, as column-major dx^T (in x N) = W^T dy^T.
        input_grad = context_.allocate(tensor::Shape{batch_, in}, tensor::DType::f32);
        check(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, batch_, out, &one, params.value(weight), in,
                          output_grad.f32(), out, &zero, input_grad.f32(), in),
              weight.name + ": input gradient");
        if (image_shape_.rank() == 4) {  // back to the image's layout and type: N x H x W x C
            auto image_grad = context_.allocate(image_shape_, input_type_);
            kernels::convert(input_grad.f32(), tensor::DType::f32, image_grad.data(), input_type_,
                             std::size_t(input_grad.shape().elements()), 1.0f, context_.stream());
            input_grad = image_grad;
        }
    }
    input_ = {};
    return input_grad;
}

}  // namespace trellis::cuda
