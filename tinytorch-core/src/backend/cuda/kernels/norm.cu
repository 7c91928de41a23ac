// Fused LayerNorm and RMSNorm over the last n elements of each row of a contiguous (rows, n)
// input: the CPU kernel's maths (backend/cpu/norm.rs), one thread block per row. The launch
// side is backend/cuda/norm.rs. Only f32 and f64: the op layer widens f16/bf16 to f32, as it
// does for the CPU kernel, so both devices round once, at the end.
//
//   xhat = (x - mean) * rstd,  rstd = 1 / sqrt(var + eps)     (RMSNorm: mean = 0, var = mean(x^2))
//   y    = xhat * weight + bias
//   gw   = g * weight
//   dx   = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))     (RMSNorm: no mean(gw) term)
//   dweight = sum over rows of g * xhat,  dbias = sum over rows of g
//
// kind: NORM_LAYER (LayerNorm) or NORM_RMS (RMSNorm). An absent weight or bias is a null pointer.

#define NORM_WARP 32
// Threads per block of every norm kernel (launch::BLOCK); norm_param_grads relies on it.
#define NORM_BLOCK 256

// Sum of v over the block, returned to every thread (each thread adds the warps' partials in
// the same order, so all get the same value). The leading barrier keeps a previous call's
// readers of `scratch` from seeing this call's writes.
template <typename T>
__device__ __forceinline__ T norm_block_sum(T v, T* scratch) {
    for (int o = NORM_WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (threadIdx.x % NORM_WARP == 0) scratch[threadIdx.x / NORM_WARP] = v;
    __syncthreads();
    T total = 0;
    for (int w = 0; w < (int)(blockDim.x / NORM_WARP); ++w) total += scratch[w];
    return total;
}

// out: (rows, n); mean, rstd: (rows) (mean is 0 for RMSNorm), saved for the backward. Two
// passes for the statistics (mean, then the sum of squared deviations), as on the CPU.
template <typename T>
__device__ void norm_fwd_impl(i64 rows, i64 n, int kind, double eps, const T* x, const T* w,
                              const T* bias, T* out, T* mean_out, T* rstd_out) {
    __shared__ T scratch[NORM_BLOCK / NORM_WARP];
    const double inv_n = 1.0 / (double)n;
    // The loop bound is the same for the whole block, so every thread reaches the barriers.
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * n;
        T mean = 0;
        if (kind == NORM_LAYER) {
            T s = 0;
            for (i64 j = threadIdx.x; j < n; j += blockDim.x) s += xr[j];
            mean = (T)((double)norm_block_sum(s, scratch) * inv_n);
        }
        T s2 = 0;
        for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
            T d = xr[j] - mean;
            s2 += d * d;
        }
        const double var = (double)norm_block_sum(s2, scratch) * inv_n;
        const T rstd = (T)(1.0 / sqrt(var + eps));
        for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
            T y = (xr[j] - mean) * rstd;
            if (w != nullptr) y = y * w[j];
            if (bias != nullptr) y = y + bias[j];
            out[row * n + j] = y;
        }
        if (threadIdx.x == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }
    }
}

// dx: (rows, n), from the upstream gradient g and the forward's input and statistics.
template <typename T>
__device__ void norm_bwd_dx_impl(i64 rows, i64 n, int kind, const T* x, const T* g, const T* w,
                                 const T* mean_in, const T* rstd_in, T* dx) {
    __shared__ T scratch[NORM_BLOCK / NORM_WARP];
    const double inv_n = 1.0 / (double)n;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * n;
        const T* gr = g + row * n;
        const T mean = mean_in[row], rstd = rstd_in[row];
        T s_xhat = 0, s_g = 0;
        for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
            T gw = w != nullptr ? gr[j] * w[j] : gr[j];
            s_xhat += gw * (xr[j] - mean);
            s_g += gw;
        }
        // mean(gw * xhat) = rstd * mean(gw * (x - mean)).
        const T c_xhat = (T)((double)norm_block_sum(s_xhat, scratch) * inv_n * (double)rstd);
        // `kind` is the same for the whole block, so the barriers inside are reached by all.
        const T c_mean = kind == NORM_LAYER ? (T)((double)norm_block_sum(s_g, scratch) * inv_n) : (T)0;
        for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
            T gw = w != nullptr ? gr[j] * w[j] : gr[j];
            T xhat = (xr[j] - mean) * rstd;
            dx[row * n + j] = rstd * (gw - c_mean - xhat * c_xhat);
        }
    }
}

// Partial column sums of dweight (g * xhat) and dbias (g) over chunks of rows: block
// (blockIdx.x, blockIdx.y) covers columns 32 * blockIdx.x .. + 32 and rows of chunk
// blockIdx.y; its 256 threads are 32 columns (adjacent threads read adjacent elements) by 8
// row lanes, whose sums are added in a fixed order. dw_part, db_part: (chunks, n), either
// null when not wanted; the host adds the chunks up.
template <typename T>
__device__ void norm_param_grads_impl(i64 rows, i64 n, i64 rows_per_chunk, const T* x,
                                      const T* g, const T* mean, const T* rstd, T* dw_part,
                                      T* db_part) {
    __shared__ T sw[NORM_BLOCK];
    __shared__ T sb[NORM_BLOCK];
    const int lanes = NORM_BLOCK / NORM_WARP;
    const i64 col = (i64)blockIdx.x * NORM_WARP + threadIdx.x % NORM_WARP;
    const i64 lane_row = threadIdx.x / NORM_WARP;
    const i64 chunk = blockIdx.y;
    const i64 r0 = chunk * rows_per_chunk;
    const i64 r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
    T aw = 0, ab = 0;
    if (col < n) {
        for (i64 r = r0 + lane_row; r < r1; r += lanes) {
            T gv = g[r * n + col];
            aw += gv * ((x[r * n + col] - mean[r]) * rstd[r]);
            ab += gv;
        }
    }
    sw[threadIdx.x] = aw;
    sb[threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.x < NORM_WARP && col < n) {
        T tw = 0, tb = 0;
        for (int k = 0; k < lanes; ++k) {
            tw += sw[k * NORM_WARP + threadIdx.x];
            tb += sb[k * NORM_WARP + threadIdx.x];
        }
        if (dw_part != nullptr) dw_part[chunk * n + col] = tw;
        if (db_part != nullptr) db_part[chunk * n + col] = tb;
    }
}

#define NORM(T, NAME)                                                                          \
    extern "C" __global__ void norm_fwd_##NAME(i64 rows, i64 n, int kind, double eps,          \
                                               const T* x, const T* w, const T* bias, T* out,  \
                                               T* mean, T* rstd) {                             \
        norm_fwd_impl<T>(rows, n, kind, eps, x, w, bias, out, mean, rstd);                     \
    }                                                                                          \
    extern "C" __global__ void norm_bwd_dx_##NAME(i64 rows, i64 n, int kind, const T* x,       \
                                                  const T* g, const T* w, const T* mean,       \
                                                  const T* rstd, T* dx) {                      \
        norm_bwd_dx_impl<T>(rows, n, kind, x, g, w, mean, rstd, dx);                           \
    }                                                                                          \
    extern "C" __global__ void norm_param_grads_##NAME(i64 rows, i64 n, i64 rows_per_chunk,    \
                                                       const T* x, const T* g, const T* mean,  \
                                                       const T* rstd, T* dw_part,              \
                                                       T* db_part) {                           \
        norm_param_grads_impl<T>(rows, n, rows_per_chunk, x, g, mean, rstd, dw_part, db_part); \
    }
NORM(float, f32)
NORM(double, f64)
