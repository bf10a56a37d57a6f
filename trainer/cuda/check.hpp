// SPDX-License-Identifier: Apache-2.0
// Every CUDA, cuDNN, cuBLAS and NCCL call is checked: a failure becomes an exception naming
// the library, the call and the layer, which the trainer reports like any other error.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace trellis::cuda {

struct CudaError : Error {
    using Error::Error;
    const char* topic() const override { return "cuda"; }
};

void check(cudaError_t status, const std::string& what);
void check(cudnnStatus_t status, const std::string& what);
void check(cublasStatus_t status, const std::string& what);
void check(ncclResult_t status, const std::string& what);

}  // namespace trellis::cuda
