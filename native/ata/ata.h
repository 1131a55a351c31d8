// C = AᵀA in float64. Files, in study order: 1_basic.cu (one thread per element), 2_tiled_symmetric.cu
// (shared-memory tiles, upper triangle mirrored), 3_tensor_core.cu (ours: mma.sync f64, cp.async
// pipeline, split-K for tall-skinny A), cublas.cc (DGEMM, DSYRK); mirror.cu copies a triangle for
// DSYRK, common.cuh holds what the kernels share.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ck {
namespace ata {

// A: rows×cols, row-major, float64, device memory. C: cols×cols, row-major, device memory; the FULL
// symmetric matrix is written (C[i][j] and C[j][i] hold the same bits).
// Each launcher enqueues on `stream`, never synchronizes, and returns the first CUDA error
// (cudaSuccess otherwise). cols == 0 does nothing; rows == 0 writes a zero C; negative sizes give
// cudaErrorInvalidValue.

// One thread per C element (i, j), walking columns i and j of A. Reference speed only.
cudaError_t launchBasic(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t stream);

// 32×32 shared-memory tiles, only the upper-triangle tiles launched, each writing its mirror.
cudaError_t launchTiled(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t stream);

// FP64 tensor cores (mma.sync f64: m8n8k4 on sm_80+, m16n8k4/m16n8k16 on sm_90+), split-K when there
// are too few output tiles to fill the device. Below sm_80, or where its shared-memory needs exceed
// the device's per-block limit, it runs launchTiled. When it splits K it allocates a workspace with
// the library pool (core/pool.h) on `stream` and frees it on the same stream.
cudaError_t launchFast(const double* A, double* C, int64_t rows, int64_t cols, cudaStream_t stream);

// Copies the upper triangle (row <= col) of the n×n row-major C into its lower triangle (used after
// cublasDsyrk too).
cudaError_t launchMirrorUpper(double* C, int64_t n, cudaStream_t stream);

}  // namespace ata
}  // namespace ck
