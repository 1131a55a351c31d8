// What both methods do with the gradients (gradients.cu): the bias gradients' column sums, the fold of
// per-stream gradient sets, and the momentum update. Each throws CudaFailure.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "mlp/mlp.h"

namespace ck {
namespace mlp {

// out[c] = Σ_r D[r][c] over `rows` rows of n columns, deterministic: partial sums per row chunk
// (`partial`, kColsumChunks × n floats), then a pass over the chunks.
void columnSums(const float* D, int64_t rows, int64_t n, float* partial, float* out, cudaStream_t stream);
// grads[i] = Σ over the `sets` gradient sets of `count` floats, in the update's order (data parallel:
// before the sum over ranks).
void foldGradientSets(float* grads, int64_t count, int sets, cudaStream_t stream);
// g = Σ over the gradient sets; ΔW = −η·g + α·ΔW_prev; W += ΔW on buf.params and buf.momentum.
void enqueueUpdate(const Net& net, const Buffers& buf, const float* grads, int sets, float eta, float alpha,
                   cudaStream_t stream);

}  // namespace mlp
}  // namespace ck
