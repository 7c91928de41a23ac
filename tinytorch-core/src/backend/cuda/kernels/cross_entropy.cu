// Fused cross-entropy with class-index targets over contiguous (rows, C) logits: the CPU
// kernel's maths (backend/cpu/cross_entropy.rs), one thread block per row, computed in
// double. The launch side is backend/cuda/cross_entropy.rs. f32 and f64 logits (the op layer
// widens f16/bf16 to f32, as for the CPU kernel). With lse = max + ln(sum), sum =
// sum_j exp(x_j - max), and the (weighted, smoothed) target distribution
// q_j = w_j ((1 - eps) [j = t] + eps / C):
//
//   loss = (1 - eps) w_t (lse - x_t) + eps / C * (sum(w) ln(sum) + sum_j w_j (max - x_j))
//   dx_j = exp(x_j - max) * (g sum(q) / sum)  -  g eps / C * w_j  -  [j = t] g (1 - eps) w_t
//
// A row whose target is `ignore` has loss 0, weight 0 and a zero gradient. A target outside
// 0..C raises the device's error flag (reported at the next synchronisation) and the row
// counts as ignored. An absent class weight is a null pointer (all ones).

#define CE_WARP 32
// Threads per block (launch::BLOCK).
#define CE_BLOCK 256

// Sum (or max) of v over the block, returned to every thread. The leading barrier keeps a
// previous call's readers of `scratch` from seeing this call's writes.
template <bool MAX>
__device__ __forceinline__ double ce_block_reduce(double v, double* scratch) {
    for (int o = CE_WARP / 2; o > 0; o /= 2) {
        double u = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? fmax(v, u) : v + u;
    }
    __syncthreads();
    if (threadIdx.x % CE_WARP == 0) scratch[threadIdx.x / CE_WARP] = v;
    __syncthreads();
    double total = scratch[0];
    for (int w = 1; w < (int)(blockDim.x / CE_WARP); ++w)
        total = MAX ? fmax(total, scratch[w]) : total + scratch[w];
    return total;
}

// The class of a row's target, or -1 when the row is ignored (or its target out of range,
// which raises the error flag).
__device__ __forceinline__ i64 ce_class(i64 t, i64 c, i64 ignore, int* err) {
    if (t == ignore) return -1;
    if (t < 0 || t >= c) {
        if (threadIdx.x == 0) atomicExch(err, 1);
        return -1;
    }
    return t;
}

// losses, row_weight: (rows); stats: (rows, 2) = (max, sum of exp(x - max)).
template <typename T>
__device__ void ce_fwd_impl(i64 rows, i64 c, i64 ignore, double eps, const T* x, const i64* t,
                            const T* w, double* losses, double* row_weight, double* stats,
                            int* err) {
    __shared__ double scratch[CE_BLOCK / CE_WARP];
    // The loop bound is the same for the whole block, so every thread reaches the barriers.
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * c;
        const i64 k = ce_class(t[row], c, ignore, err);
        if (k < 0) {
            if (threadIdx.x == 0) {
                losses[row] = 0.0;
                row_weight[row] = 0.0;
                stats[2 * row] = 0.0;
                stats[2 * row + 1] = 0.0;
            }
            continue;
        }
        double m = Lowest<double>::value();
        for (i64 j = threadIdx.x; j < c; j += blockDim.x) m = fmax(m, (double)xr[j]);
        m = ce_block_reduce<true>(m, scratch);
        double s = 0.0;
        for (i64 j = threadIdx.x; j < c; j += blockDim.x) s += exp((double)xr[j] - m);
        s = ce_block_reduce<false>(s, scratch);
        const double wt = w != nullptr ? (double)w[k] : 1.0;
        const double ln_sum = log(s);
        double loss = (1.0 - eps) * wt * ((m - (double)xr[k]) + ln_sum);
        if (eps > 0.0) {
            double spread = 0.0, wsum = 0.0;
            for (i64 j = threadIdx.x; j < c; j += blockDim.x) {
                const double wj = w != nullptr ? (double)w[j] : 1.0;
                spread += wj * (m - (double)xr[j]);
                wsum += wj;
            }
            spread = ce_block_reduce<false>(spread, scratch);
            wsum = ce_block_reduce<false>(wsum, scratch);
            loss += eps / (double)c * (wsum * ln_sum + spread);
        }
        if (threadIdx.x == 0) {
            losses[row] = loss;
            row_weight[row] = wt;
            stats[2 * row] = m;
            stats[2 * row + 1] = s;
        }
    }
}

// dx: (rows, C). The upstream gradient of row r is g_rows[r] when g_rows is not null, else
// *g_uniform (one double on the device, so that the host need not read the loss's gradient).
template <typename T>
__device__ void ce_bwd_impl(i64 rows, i64 c, i64 ignore, double eps, const T* x, const i64* t,
                            const T* w, const double* stats, const T* g_rows, const double* g_uniform,
                            T* dx, int* err) {
    __shared__ double scratch[CE_BLOCK / CE_WARP];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * c;
        T* dr = dx + row * c;
        const i64 k = ce_class(t[row], c, ignore, err);
        if (k < 0) {
            for (i64 j = threadIdx.x; j < c; j += blockDim.x) dr[j] = (T)0;
            continue;
        }
        double wsum = (double)c;
        if (w != nullptr && eps > 0.0) {
            wsum = 0.0;
            for (i64 j = threadIdx.x; j < c; j += blockDim.x) wsum += (double)w[j];
            wsum = ce_block_reduce<false>(wsum, scratch);
        }
        const double g = g_rows != nullptr ? (double)g_rows[row] : *g_uniform;
        const double wt = w != nullptr ? (double)w[k] : 1.0;
        const double q_total = (1.0 - eps) * wt + eps / (double)c * wsum;
        const double m = stats[2 * row], s = stats[2 * row + 1];
        const double a = g * q_total / s, b = g * eps / (double)c;
        const double target_share = g * (1.0 - eps) * wt;
        for (i64 j = threadIdx.x; j < c; j += blockDim.x) {
            const double wj = w != nullptr ? (double)w[j] : 1.0;
            double d = exp((double)xr[j] - m) * a - b * wj;
            if (j == k) d -= target_share;
            dr[j] = (T)d;
        }
    }
}

#define CE_KERNELS(NAME, T)                                                                     \
    extern "C" __global__ void ce_fwd_##NAME(i64 rows, i64 c, i64 ignore, double eps,           \
            const T* x, const i64* t, const T* w, double* losses, double* row_weight,           \
            double* stats, int* err) {                                                          \
        ce_fwd_impl<T>(rows, c, ignore, eps, x, t, w, losses, row_weight, stats, err);          \
    }                                                                                           \
    extern "C" __global__ void ce_bwd_##NAME(i64 rows, i64 c, i64 ignore, double eps,           \
            const T* x, const i64* t, const T* w, const double* stats, const T* g_rows,         \
            const double* g_uniform, T* dx, int* err) {                                         \
        ce_bwd_impl<T>(rows, c, ignore, eps, x, t, w, stats, g_rows, g_uniform, dx, err);       \
    }

CE_KERNELS(f32, float)
CE_KERNELS(f64, double)
