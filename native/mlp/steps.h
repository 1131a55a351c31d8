// Each method's batch step and forward pass, which train.cc's epoch loop calls: 1_custom.cu and
// cublas.cu. All throw CudaFailure (or a cuBLAS failure).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "mlp/layout.h"
#include "mlp/mlp.h"
#include "mlp/streams.h"

namespace ck {
namespace mlp {

// One batch of `rows` patterns (X, T at the batch): forward, backward and the update, on `stream` and
// up to `streams` side streams (`ev` has max(streams + 1, layers + 1) events).
void stepCustom(const Step& s, const float* X, const float* T, int64_t rows, int streams, int device,
                cudaStream_t stream, const Events& ev, float eta, float alpha, const GradientSum& sum);
void stepCublas(const Step& s, const float* X, const float* T, int64_t rows, int streams, int device,
                cudaStream_t stream, const Events& ev, float eta, float alpha, const GradientSum& sum);

// Y = network(X) for `rows` patterns; with T and s.buf.error, the error too.
void forwardCustom(const Step& s, const float* X, const float* T, float* Y, int64_t rows,
                   cudaStream_t stream);
void forwardCublas(const Step& s, const float* X, const float* T, float* Y, int64_t rows, int device,
                   cudaStream_t stream);

}  // namespace mlp
}  // namespace ck
