// SPDX-License-Identifier: Apache-2.0
// The few kernels neither cuDNN nor cuBLAS provides: element type conversion (mixed
// precision), the input's normalisation from bytes, ReLU, dropout and the residual join,
// global average pooling into the f32 head, the fully connected bias, the optimizer update
// fused over every parameter, and the loss-scale check.
// Element pointers are untyped where the type is a run-time choice (f32, bf16, f16).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "trainer/tensor/dtype.hpp"

namespace trellis::cuda::kernels {

using tensor::DType;

// Throws CudaError naming the kernel (or call) and CUDA's reason (check.cpp): the .cu
// files do not include the project's error types.
[[noreturn]] void launch_failed(const char* kernel, cudaError_t status);

// dst[i] = src[i] * scale, converting the element type.
void convert(const void* src, DType from, void* dst, DType to, std::size_t n, float scale, cudaStream_t stream);
// Bytes of N x H x W x 3 pixels (0..255) to `to`: channel c as value * gain[c] + bias[c].
void normalise_pixels(const std::uint8_t* src, void* dst, DType to, std::size_t n, const float* gain, const float* bias,
                      cudaStream_t stream);
// The vector-kernels speed item (gpu/speedups.hpp): relu, add_relu, relu_backward and
// accumulate in 16-byte vectors where pointers and counts allow. Off by default.
void use_vector_kernels(bool use);
// y = relu(a + b)
void add_relu(const void* a, const void* b, void* y, DType type, std::size_t n, cudaStream_t stream);
// y = max(x, 0)
void relu(const void* x, void* y, DType type, std::size_t n, cudaStream_t stream);
// y[i] = keeps(key, i, threshold) ? x[i] * scale : 0 (nn/dropout_mask.hpp's mask, the CPU's)
void dropout(const float* x, float* y, std::size_t n, std::uint64_t key, std::uint64_t threshold, float scale,
             cudaStream_t stream);
// y (N x (H + extra_h) x (W + extra_w) x C) = x (N x H x W x C), `fill` in the added last
// rows and columns; and the way back, dx = dy without them.
void pad_end(const void* x, void* y, DType type, int n, int h, int w, int c, int extra_h, int extra_w, float fill,
             cudaStream_t stream);
void crop_end(const void* dy, void* dx, DType type, int n, int h, int w, int c, int extra_h, int extra_w,
              cudaStream_t stream);
// dx = y > 0 ? dy : 0
void relu_backward(const void* y, const void* dy, void* dx, DType type, std::size_t n, cudaStream_t stream);
// target += addend
void accumulate(void* target, const void* addend, DType type, std::size_t n, cudaStream_t stream);
// x: N x HW x C (NHWC) of `type`; y: N x C f32, the mean over HW.
void global_average_pool(const void* x, DType type, float* y, int n, int hw, int c, cudaStream_t stream);
// dx[n, p, c] = dy[n, c] / HW for every position p.
void global_average_pool_backward(const float* dy, void* dx, DType type, int n, int hw, int c, cudaStream_t stream);
// y[r, j] += bias[j] over `rows` rows of `cols`.
void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream);
// grad[j] = sum over rows of dy[r, j]
void bias_gradient(const float* dy, float* grad, int rows, int cols, cudaStream_t stream);

// A convolution's bias, kept in f32 in every precision: cuDNN's own bias addition and bias
// gradient refuse some NHWC bf16/f16 shapes, and would round the gradient to 8 bits.
// y (rows x channels, NHWC, of `type`) += bias; grad = sum over rows of dy, in f32, through
// `partial` (channel_gradient_blocks(rows) x channels floats of scratch).
void add_channel_bias(void* y, DType type, const float* bias, std::size_t rows, int channels, cudaStream_t stream);
int channel_gradient_blocks(std::size_t rows);
void channel_bias_gradient(const void* dy, DType type, float* grad, std::size_t rows, int channels, float* partial,
                           cudaStream_t stream);

// Softmax cross-entropy with label smoothing, one block per row of `classes` logits, as the
// CPU's SoftmaxCrossEntropy: loss[r], and higher[r] = classes scoring above the label (ties
// count for the label, non-finite scores against it); grad (when set) = (p - target) * scale / rows.
void softmax_cross_entropy(const float* logits, const int* labels, int rows, int classes, float smoothing,
                           float grad_scale, float* grad, float* loss, int* higher, cudaStream_t stream);

// The optimizers over the flat parameters, fused into one kernel. Each element finds its
// parameter in `table` (offsets of P parameters, P + 1 entries) for the weight decay and, for
// LARS, the layer-wise learning rate.
enum class OptimizerKind { sgd, rmsprop, lars };
struct ParameterTable {
    const std::int64_t* offsets;  // P + 1
    const float* decay;           // P
    const float* lr_factor;       // P: LARS's trust ratio (1 elsewhere)
    int count;
};
struct OptimizerStep {
    OptimizerKind kind;
    float lr, momentum;
    bool nesterov;
    float rho, epsilon;  // RMSProp
    // A device flag: when it is non-zero (fp16 gradients overflowed) the step changes nothing.
    const int* skip_when_set = nullptr;
};
// sgd:     d = g + wd w; v = m v + d; w -= lr (nesterov ? d + m v : v)
// rmsprop: d = g + wd w; s = rho s + (1 - rho) d^2; v = m v + lr d / sqrt(s + eps); w -= v
// lars:    v = m v + lr * factor (g + wd w); w -= v
// `second` is RMSProp's mean square (unused otherwise). Writes the low-precision copy of w
// when `low` is set.
void optimizer_step(float* w, const float* g, float* v, float* second, ParameterTable table, void* low, DType low_type,
                    std::size_t n, OptimizerStep step, cudaStream_t stream);
// sums[2p] = sum of w^2, sums[2p + 1] = sum of g^2 over parameter p (LARS's norms).
void parameter_norms(const float* w, const float* g, ParameterTable table, double* sums, cudaStream_t stream);

// g *= factor; sets *nonfinite to 1 when any g is Inf or NaN.
void scale_and_check(float* g, std::size_t n, float factor, int* nonfinite, cudaStream_t stream);

}  // namespace trellis::cuda::kernels
