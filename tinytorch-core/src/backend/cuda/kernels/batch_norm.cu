// Fused batch normalisation over a contiguous (N, C, S) input (S = the product of the spatial
// dims, 1 for (N, C)): the CPU kernel's maths (backend/cpu/batch_norm.rs), in the compute type
// A (float for f32/f16/bf16 data, double for f64). The launch side is backend/cuda/batch_norm.rs.
//
//   training forward:  mean, var (biased) per channel over its M = N * S elements
//                      rstd = 1 / sqrt(var + eps),  scale = w * rstd,  shift = b
//                      y = (x - mean) * scale + shift   [then max(y, 0), or max(y + r, 0)]
//   backward:          g' = g, or 0 where a fused ReLU's pre-activation was not positive
//                      dbias = sum(g'),  dweight = rstd * sum(g' (x - mean))
//                      dx = g' * gc + (x - mean) * a + b,  gc = w * rstd,
//                      a = -gc rstd^2 sum(g' (x - mean)) / M,  b = -gc sum(g') / M
//   evaluation:        y = (x - running_mean) * (w / sqrt(running_var + eps)) + b
//
// A channel's elements are N rows of S contiguous elements, C * S apart. The per-channel
// sums run in two kernels, atomic-free and deterministic for a given shape: `parts` blocks per
// channel each reduce a contiguous share of the channel's N * S elements (row by row, walking
// a (row, column) cursor that never divides) to one partial, then one warp per channel merges
// its partials in a fixed order, in double. The statistics are merged as (count, mean, M2)
// triples (Chan et al.): each thread takes the mean and M2 of the UNROLL * V values it loaded
// (two passes over registers), then merges them into its running triple, so no sum of
// squares about a distant origin ever cancels. Elementwise passes (normalise, dx) sweep the
// whole tensor with a (channel, column) cursor.
//
// Data are read and written in units of V elements: V = 16 bytes / sizeof(T) (one 128-bit
// access) when S is a multiple of V and every buffer is 16-byte aligned, else V = 1. The
// units of a row never straddle two rows, so the cursors count units: sv = S / V per row.
//
// Absent weight, bias or residual: null pointers (weight 1, bias 0).

#define BN_WARP 32
// Threads per block of every kernel here (launch::BLOCK).
#define BN_BLOCK 256
#define BN_WARPS (BN_BLOCK / BN_WARP)

// V consecutive elements of T, moved as one access.
template <typename T, int V>
struct alignas(sizeof(T) * V) BnVec {
    T v[V];
};

__device__ __forceinline__ float bn_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double bn_fma(double a, double b, double c) { return fma(a, b, c); }

// The affine map of the forward, `(v - m) * a + b` with one rounding for the product and the
// sum: the forward's output and the backward's recomputed ReLU mask use this one function, so
// they agree to the bit.
template <typename A>
__device__ __forceinline__ A bn_affine(A v, A m, A a, A b) {
    return bn_fma(v - m, a, b);
}

// Merge the (count, mean, M2) triple (nb, mb, qb) into (n, m, q) (Chan et al.).
template <typename A>
__device__ __forceinline__ void bn_merge(A& n, A& m, A& q, A nb, A mb, A qb) {
    if (nb == (A)0) return;
    const A nt = n + nb;
    const A d = mb - m;
    const A f = nb / nt;
    m += d * f;
    q += qb + d * d * n * f;
    n = nt;
}

// Lane 0 of each warp ends with the merge of the warp's triples (in a fixed order).
__device__ __forceinline__ void bn_warp_merge(double& n, double& m, double& q) {
    for (int o = BN_WARP / 2; o > 0; o /= 2) {
        const double nb = __shfl_down_sync(0xffffffffu, n, o);
        const double mb = __shfl_down_sync(0xffffffffu, m, o);
        const double qb = __shfl_down_sync(0xffffffffu, q, o);
        bn_merge(n, m, q, nb, mb, qb);
    }
}

__device__ __forceinline__ double bn_warp_sum(double v) {
    for (int o = BN_WARP / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Step a channel's (row n, unit column s) cursor by (dn, ds) units, sv units a row.
__device__ __forceinline__ void bn_step_row(i64& n, i64& s, i64 dn, i64 ds, i64 sv) {
    s += ds;
    n += dn;
    if (s >= sv) {
        s -= sv;
        n += 1;
    }
}

// Step the whole tensor's (channel c, unit column s) cursor by (dc, ds): the row advances by
// dc channels (mod C) and a carry from the column.
__device__ __forceinline__ void bn_step_channel(i64& c, i64& s, i64 dc, i64 ds, i64 C, i64 sv) {
    s += ds;
    i64 carry = 0;
    if (s >= sv) {
        s -= sv;
        carry = 1;
    }
    c += dc + carry;
    if (c >= C) c -= C;
}

// prelude.cuh's FOR_EACH_SWEEP over `total` units (UNROLL per thread per sweep, `step` apart)
// with the (channel c, unit column s) cursor of the sweep's first unit `base`, divided out once
// per thread: each of the sweep's UNROLL steps advances it by (dc, ds) (bn_step_channel), which
// leaves it at the next sweep's `base`. Reads the enclosing `sv` (units a row) and `C`.
#define BN_SWEEPS(base, step, total, c, s, dc, ds)                                           \
    const i64 step = (i64)blockDim.x * gridDim.x;                                            \
    const i64 ds = step % sv, dc = (step / sv) % C;                                          \
    i64 base = (i64)blockIdx.x * blockDim.x + threadIdx.x;                                   \
    i64 s = base % sv, c = (base / sv) % C;                                                  \
    for (; base < (total); base += UNROLL * step)

// Which channel and which share of it block `blockIdx.x` reduces: units [u0, u1) of the
// channel's N * sv, `per_part` each.
struct BnShare {
    i64 c, u0, u1;
};
__device__ __forceinline__ BnShare bn_share(i64 units, i64 per_part, i64 parts) {
    BnShare sh;
    sh.c = (i64)blockIdx.x / parts;
    sh.u0 = ((i64)blockIdx.x % parts) * per_part;
    sh.u1 = sh.u0 + per_part < units ? sh.u0 + per_part : units;
    return sh;
}

// ---- training forward ------------------------------------------------------------------------

// part: (C, parts, 3) doubles, the (count, mean, M2) of each block's share of its channel.
template <typename T, int V>
__device__ void bn_stats_impl(i64 C, i64 sv, i64 units, i64 per_part, i64 parts, const T* x,
                              double* part) {
    typedef typename Ty<T>::C A;
    typedef BnVec<T, V> Unit;
    __shared__ double sh_n[BN_WARPS], sh_m[BN_WARPS], sh_q[BN_WARPS];
    const Unit* xu = (const Unit*)x;
    const BnShare share = bn_share(units, per_part, parts);
    const i64 c = share.c, step = blockDim.x;
    const i64 dn = step / sv, ds = step % sv;
    A cnt = 0, mean = 0, m2 = 0;
    i64 u = share.u0 + threadIdx.x;
    i64 n = u / sv, s = u % sv;
    while (u < share.u1) {
        // Up to UNROLL units in flight (the valid ones are a prefix: u only grows).
        Unit raw[UNROLL];
        int k = 0;
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            if (u < share.u1) {
                raw[j] = xu[(n * C + c) * sv + s];
                k = j + 1;
            }
            u += step;
            bn_step_row(n, s, dn, ds, sv);
        }
        A bs = 0;
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            if (j < k)
#pragma unroll
                for (int e = 0; e < V; ++e) bs += Ty<T>::up(raw[j].v[e]);
        const A bc = (A)(k * V);
        const A bm = bs / bc;
        A bq = 0;
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            if (j < k)
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const A d = Ty<T>::up(raw[j].v[e]) - bm;
                    bq += d * d;
                }
        bn_merge(cnt, mean, m2, bc, bm, bq);
    }
    double dn_ = cnt, dm = mean, dq = m2;
    bn_warp_merge(dn_, dm, dq);
    const int warp = threadIdx.x / BN_WARP;
    if (threadIdx.x % BN_WARP == 0) {
        sh_n[warp] = dn_;
        sh_m[warp] = dm;
        sh_q[warp] = dq;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double tn = sh_n[0], tm = sh_m[0], tq = sh_q[0];
        for (int w = 1; w < (int)(blockDim.x / BN_WARP); ++w) bn_merge(tn, tm, tq, sh_n[w], sh_m[w], sh_q[w]);
        double* out = part + (i64)blockIdx.x * 3;
        out[0] = tn;
        out[1] = tm;
        out[2] = tq;
    }
}

// One warp per channel: the channel's partials merged, then mean_out, var_out (biased) and
// saved = (mean, rstd, scale, shift), each (C), in A. A channel without elements has mean NaN
// and variance 0, as on the CPU (0 / 0, then max(NaN, 0)).
template <typename A>
__device__ void bn_stats_finish_impl(i64 C, i64 parts, double eps, const double* part,
                                     const A* w, const A* b, A* mean_out, A* var_out,
                                     A* saved) {
    const i64 c = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / BN_WARP;
    const int lane = threadIdx.x % BN_WARP;
    if (c >= C) return;  // whole warps: a warp is one channel
    double n = 0, m = 0, q = 0;
    for (i64 p = lane; p < parts; p += BN_WARP) {
        const double* t = part + (c * parts + p) * 3;
        bn_merge(n, m, q, t[0], t[1], t[2]);
    }
    bn_warp_merge(n, m, q);
    if (lane != 0) return;
    const double mean = n > 0 ? m : __longlong_as_double(0x7ff8000000000000LL);
    const double var = n > 0 ? fmax(q / n, 0.0) : 0.0;
    const double rstd = 1.0 / sqrt(var + eps);
    const double wv = w != nullptr ? (double)w[c] : 1.0;
    mean_out[c] = (A)mean;
    var_out[c] = (A)var;
    saved[c] = (A)mean;
    saved[C + c] = (A)rstd;
    saved[2 * C + c] = (A)(wv * rstd);
    saved[3 * C + c] = b != nullptr ? b[c] : (A)0;
}

// y = (x - mean[c]) * scale[c] + shift[c] over every unit, then what `then` says
// (op_codes.rs): BN_THEN_NOTHING, BN_THEN_RELU, or BN_THEN_ADD_RELU, the residual r added and
// a ReLU (a ReLU keeps NaN, as `relu`). Both the
// training forward (the batch's statistics) and evaluation (the running ones) run it.
template <typename T, int V>
__device__ void bn_apply_impl(i64 total, i64 C, i64 sv, int then, const T* x, const T* r,
                              const typename Ty<T>::C* mean, const typename Ty<T>::C* scale,
                              const typename Ty<T>::C* shift, T* y) {
    typedef typename Ty<T>::C A;
    typedef BnVec<T, V> Unit;
    const Unit* xu = (const Unit*)x;
    const Unit* ru = (const Unit*)r;
    Unit* yu = (Unit*)y;
    BN_SWEEPS(base, step, total, c, s, dc, ds) {
        Unit xv[UNROLL], rv[UNROLL];
        i64 ch[UNROLL];
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const i64 i = base + j * step;
            ch[j] = c;
            if (i < total) {
                xv[j] = xu[i];
                if (then == BN_THEN_ADD_RELU) rv[j] = ru[i];
            }
            bn_step_channel(c, s, dc, ds, C, sv);
        }
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const i64 i = base + j * step;
            if (i >= total) continue;
            const A m = mean[ch[j]], a = scale[ch[j]], b = shift[ch[j]];
            Unit out;
#pragma unroll
            for (int e = 0; e < V; ++e) {
                A v = bn_affine(Ty<T>::up(xv[j].v[e]), m, a, b);
                if (then == BN_THEN_ADD_RELU) v += Ty<T>::up(rv[j].v[e]);
                if (then != BN_THEN_NOTHING && v < (A)0) v = (A)0;
                out.v[e] = Ty<T>::down(v);
            }
            yu[i] = out;
        }
    }
}

// ---- backward --------------------------------------------------------------------------------

// part: (C, parts, 2) doubles, each block's sum(g') and sum(g' (x - mean)) over its share.
// saved: the forward's (mean, rstd, scale, shift); with relu, g' is g where the recomputed
// pre-activation (x - mean) * scale + shift is positive (or NaN), else 0.
template <typename T, int V>
__device__ void bn_grad_sums_impl(i64 C, i64 sv, i64 units, i64 per_part, i64 parts, int relu,
                                  const T* x, const T* g, const typename Ty<T>::C* saved,
                                  double* part) {
    typedef typename Ty<T>::C A;
    typedef BnVec<T, V> Unit;
    __shared__ double sh_g[BN_WARPS], sh_gx[BN_WARPS];
    const Unit* xu = (const Unit*)x;
    const Unit* gu = (const Unit*)g;
    const BnShare share = bn_share(units, per_part, parts);
    const i64 c = share.c, step = blockDim.x;
    const i64 dn = step / sv, ds = step % sv;
    const A m = saved[c], sc = saved[2 * C + c], sf = saved[3 * C + c];
    A sg = 0, sgx = 0;
    i64 u = share.u0 + threadIdx.x;
    i64 n = u / sv, s = u % sv;
    while (u < share.u1) {
        Unit xv[UNROLL], gv[UNROLL];
        int k = 0;
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            if (u < share.u1) {
                const i64 at = (n * C + c) * sv + s;
                xv[j] = xu[at];
                gv[j] = gu[at];
                k = j + 1;
            }
            u += step;
            bn_step_row(n, s, dn, ds, sv);
        }
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            if (j < k)
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const A xe = Ty<T>::up(xv[j].v[e]);
                    A ge = Ty<T>::up(gv[j].v[e]);
                    if (relu && bn_affine(xe, m, sc, sf) <= (A)0) ge = (A)0;
                    sg += ge;
                    sgx += ge * (xe - m);
                }
    }
    double tg = bn_warp_sum((double)sg), tgx = bn_warp_sum((double)sgx);
    const int warp = threadIdx.x / BN_WARP;
    if (threadIdx.x % BN_WARP == 0) {
        sh_g[warp] = tg;
        sh_gx[warp] = tgx;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        tg = sh_g[0];
        tgx = sh_gx[0];
        for (int w = 1; w < (int)(blockDim.x / BN_WARP); ++w) {
            tg += sh_g[w];
            tgx += sh_gx[w];
        }
        double* out = part + (i64)blockIdx.x * 2;
        out[0] = tg;
        out[1] = tgx;
    }
}

// One warp per channel: the partial sums added in a fixed order, then dweight, dbias (C) and
// the coefficients of dx, coef = (gc, a, b) each (C). inv_m = 1 / (N * S).
template <typename A>
__device__ void bn_grad_finish_impl(i64 C, i64 parts, double inv_m, const double* part,
                                    const A* w, const A* saved, A* dweight, A* dbias, A* coef) {
    const i64 c = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / BN_WARP;
    const int lane = threadIdx.x % BN_WARP;
    if (c >= C) return;
    double sg = 0, sgx = 0;
    for (i64 p = lane; p < parts; p += BN_WARP) {
        sg += part[(c * parts + p) * 2];
        sgx += part[(c * parts + p) * 2 + 1];
    }
    sg = bn_warp_sum(sg);
    sgx = bn_warp_sum(sgx);
    if (lane != 0) return;
    const double rstd = (double)saved[C + c];
    dbias[c] = (A)sg;
    dweight[c] = (A)(sgx * rstd);
    const double gc = (w != nullptr ? (double)w[c] : 1.0) * rstd;
    coef[c] = (A)gc;
    coef[C + c] = (A)(-gc * rstd * rstd * sgx * inv_m);
    coef[2 * C + c] = (A)(-gc * sg * inv_m);
}

// dx = g' * gc + (x - mean) * a + b over every unit (g' as in bn_grad_sums).
template <typename T, int V>
__device__ void bn_dx_impl(i64 total, i64 C, i64 sv, int relu, const T* x, const T* g,
                           const typename Ty<T>::C* saved, const typename Ty<T>::C* coef, T* dx) {
    typedef typename Ty<T>::C A;
    typedef BnVec<T, V> Unit;
    const Unit* xu = (const Unit*)x;
    const Unit* gu = (const Unit*)g;
    Unit* du = (Unit*)dx;
    BN_SWEEPS(base, step, total, c, s, dc, ds) {
        Unit xv[UNROLL], gv[UNROLL];
        i64 ch[UNROLL];
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const i64 i = base + j * step;
            ch[j] = c;
            if (i < total) {
                xv[j] = xu[i];
                gv[j] = gu[i];
            }
            bn_step_channel(c, s, dc, ds, C, sv);
        }
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const i64 i = base + j * step;
            if (i >= total) continue;
            const i64 cj = ch[j];
            const A m = saved[cj], gc = coef[cj], a = coef[C + cj], b = coef[2 * C + cj];
            Unit out;
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const A xe = Ty<T>::up(xv[j].v[e]);
                A ge = Ty<T>::up(gv[j].v[e]);
                if (relu && bn_affine(xe, m, saved[2 * C + cj], saved[3 * C + cj]) <= (A)0)
                    ge = (A)0;
                out.v[e] = Ty<T>::down(bn_fma(ge, gc, bn_affine(xe, m, a, b)));
            }
            du[i] = out;
        }
    }
}

// ---- (N, C) input: one thread per channel ----------------------------------------------------

// With S = 1 (BatchNorm1d on (N, C)) a channel's elements are C apart, so the block-per-channel
// passes above would read one element per 32-byte sector. These read whole rows instead: a
// thread per channel (consecutive threads, consecutive channels: coalesced), the grid's y
// dimension cutting the N rows into `parts` shares of `per_part` rows. They write the same
// partials as bn_stats / bn_grad_sums, so the finishing kernels are shared.

// This thread's channel c and the rows [n0, n1) of share blockIdx.y (an empty range past
// the last row); false for a thread past the last channel.
__device__ __forceinline__ bool bn_column_share(i64 C, i64 N, i64 per_part, i64& c, i64& n0,
                                                i64& n1) {
    c = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    n0 = (i64)blockIdx.y * per_part;
    n1 = n0 + per_part < N ? n0 + per_part : N;
    return c < C;
}

// part: (C, parts, 3) doubles, as bn_stats.
template <typename T>
__device__ void bn_stats_columns_impl(i64 C, i64 N, i64 per_part, i64 parts, const T* x,
                                      double* part) {
    typedef typename Ty<T>::C A;
    i64 c, n0, n1;
    if (!bn_column_share(C, N, per_part, c, n0, n1)) return;
    A cnt = 0, mean = 0, m2 = 0;
    for (i64 n = n0; n < n1; n += UNROLL) {
        A v[UNROLL];
        const int k = n1 - n < UNROLL ? (int)(n1 - n) : UNROLL;
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            if (j < k) v[j] = Ty<T>::up(x[(n + j) * C + c]);
        A bs = 0;
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            if (j < k) bs += v[j];
        const A bm = bs / (A)k;
        A bq = 0;
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            if (j < k) bq += (v[j] - bm) * (v[j] - bm);
        bn_merge(cnt, mean, m2, (A)k, bm, bq);
    }
    double* out = part + (c * parts + (i64)blockIdx.y) * 3;
    out[0] = cnt;
    out[1] = mean;
    out[2] = m2;
}

// part: (C, parts, 2) doubles, as bn_grad_sums.
template <typename T>
__device__ void bn_grad_sums_columns_impl(i64 C, i64 N, i64 per_part, i64 parts, int relu,
                                          const T* x, const T* g, const typename Ty<T>::C* saved,
                                          double* part) {
    typedef typename Ty<T>::C A;
    i64 c, n0, n1;
    if (!bn_column_share(C, N, per_part, c, n0, n1)) return;
    const A m = saved[c], sc = saved[2 * C + c], sf = saved[3 * C + c];
    A sg = 0, sgx = 0;
    for (i64 n = n0; n < n1; ++n) {
        const A xe = Ty<T>::up(x[n * C + c]);
        A ge = Ty<T>::up(g[n * C + c]);
        if (relu && bn_affine(xe, m, sc, sf) <= (A)0) ge = (A)0;
        sg += ge;
        sgx += ge * (xe - m);
    }
    double* out = part + (c * parts + (i64)blockIdx.y) * 2;
    out[0] = sg;
    out[1] = sgx;
}

// ---- evaluation and the running statistics ----------------------------------------------------

// One thread per channel: coef = (mean, scale, shift) of evaluation, each (C), from the running
// statistics: mean = running_mean, scale = w / sqrt(running_var + eps), shift = b.
template <typename A>
__device__ void bn_eval_prep_impl(i64 C, double eps, const A* rm, const A* rv, const A* w,
                                  const A* b, A* coef) {
    FOR_EACH(c, C) {
        const double rstd = 1.0 / sqrt((double)rv[c] + eps);
        coef[c] = rm[c];
        coef[C + c] = (A)((w != nullptr ? (double)w[c] : 1.0) * rstd);
        coef[2 * C + c] = b != nullptr ? b[c] : (A)0;
    }
}

__device__ __forceinline__ float bn_mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double bn_mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float bn_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double bn_add_rn(double a, double b) { return __dadd_rn(a, b); }

// In place, one thread per channel: running_mean = running_mean * keep + mean * mom and
// running_var = running_var * keep + var * mom_unbiased (mom_unbiased = momentum * M / (M - 1)),
// each product and the sum rounded separately, as the tensor ops `mul_`, `mul`, `add_` that
// compose it elsewhere. Either running buffer may be null.
template <typename A>
__device__ void bn_running_impl(i64 C, A keep, A mom, A mom_unbiased, const A* mean,
                                const A* var, A* rm, A* rv) {
    FOR_EACH(c, C) {
        if (rm != nullptr) rm[c] = bn_add_rn(bn_mul_rn(rm[c], keep), bn_mul_rn(mean[c], mom));
        if (rv != nullptr)
            rv[c] = bn_add_rn(bn_mul_rn(rv[c], keep), bn_mul_rn(var[c], mom_unbiased));
    }
}

// ---- instantiations --------------------------------------------------------------------------

#define BN_DATA(T, NAME, V)                                                                        \
    extern "C" __global__ void bn_stats_##NAME##_v##V(i64 C, i64 sv, i64 units, i64 per_part,      \
                                                      i64 parts, const T* x, double* part) {       \
        bn_stats_impl<T, V>(C, sv, units, per_part, parts, x, part);                               \
    }                                                                                              \
    extern "C" __global__ void bn_apply_##NAME##_v##V(                                             \
        i64 total, i64 C, i64 sv, int then, const T* x, const T* r, const Ty<T>::C* mean,          \
        const Ty<T>::C* scale, const Ty<T>::C* shift, T* y) {                                      \
        bn_apply_impl<T, V>(total, C, sv, then, x, r, mean, scale, shift, y);                      \
    }                                                                                              \
    extern "C" __global__ void bn_grad_sums_##NAME##_v##V(                                         \
        i64 C, i64 sv, i64 units, i64 per_part, i64 parts, int relu, const T* x, const T* g,       \
        const Ty<T>::C* saved, double* part) {                                                     \
        bn_grad_sums_impl<T, V>(C, sv, units, per_part, parts, relu, x, g, saved, part);           \
    }                                                                                              \
    extern "C" __global__ void bn_dx_##NAME##_v##V(i64 total, i64 C, i64 sv, int relu,             \
                                                   const T* x, const T* g,                         \
                                                   const Ty<T>::C* saved, const Ty<T>::C* coef,    \
                                                   T* dx) {                                        \
        bn_dx_impl<T, V>(total, C, sv, relu, x, g, saved, coef, dx);                               \
    }
#define BN_COLUMNS(T, NAME)                                                                        \
    extern "C" __global__ void bn_stats_columns_##NAME(i64 C, i64 N, i64 per_part, i64 parts,      \
                                                       const T* x, double* part) {                 \
        bn_stats_columns_impl<T>(C, N, per_part, parts, x, part);                                  \
    }                                                                                              \
    extern "C" __global__ void bn_grad_sums_columns_##NAME(                                        \
        i64 C, i64 N, i64 per_part, i64 parts, int relu, const T* x, const T* g,                   \
        const Ty<T>::C* saved, double* part) {                                                     \
        bn_grad_sums_columns_impl<T>(C, N, per_part, parts, relu, x, g, saved, part);              \
    }
#define BN_TYPE(T, NAME, V) BN_DATA(T, NAME, 1) BN_DATA(T, NAME, V) BN_COLUMNS(T, NAME)
// V: 16 bytes of each type.
BN_TYPE(float, f32, 4)
BN_TYPE(double, f64, 2)
BN_TYPE(f16, f16, 8)
BN_TYPE(bf16, bf16, 8)

#define BN_STATS(A, NAME)                                                                          \
    extern "C" __global__ void bn_stats_finish_##NAME(i64 C, i64 parts, double eps,                \
                                                      const double* part, const A* w, const A* b,  \
                                                      A* mean, A* var, A* saved) {                 \
        bn_stats_finish_impl<A>(C, parts, eps, part, w, b, mean, var, saved);                      \
    }                                                                                              \
    extern "C" __global__ void bn_grad_finish_##NAME(i64 C, i64 parts, double inv_m,               \
                                                     const double* part, const A* w,               \
                                                     const A* saved, A* dweight, A* dbias,         \
                                                     A* coef) {                                    \
        bn_grad_finish_impl<A>(C, parts, inv_m, part, w, saved, dweight, dbias, coef);             \
    }                                                                                              \
    extern "C" __global__ void bn_eval_prep_##NAME(i64 C, double eps, const A* rm, const A* rv,    \
                                                   const A* w, const A* b, A* coef) {              \
        bn_eval_prep_impl<A>(C, eps, rm, rv, w, b, coef);                                          \
    }                                                                                              \
    extern "C" __global__ void bn_running_##NAME(i64 C, A keep, A mom, A mom_unbiased,             \
                                                 const A* mean, const A* var, A* rm, A* rv) {      \
        bn_running_impl<A>(C, keep, mom, mom_unbiased, mean, var, rm, rv);                         \
    }
// The statistics' and parameters' type A: float (f32, f16, bf16 data) or double (f64).
BN_STATS(float, f32)
BN_STATS(double, f64)
