// Every CUDA, cuDNN, cuBLAS and NCCL call is checked: a failure becomes an exception naming
// the library, the call and the layer, which the trainer reports like any other error.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace trellis::nn::cuda {

class CudaError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

void check(cudaError_t status, const std::string& what);
void check(cudnnStatus_t status, const std::string& what);
void check(cublasStatus_t status, const std::string& what);
void check(ncclResult_t status, const std::string& what);

}  // namespace trellis::nn::cuda
