// Reductions: over any set of dims (reduce), along one dim (arg_reduce, softmax, scan).
// A reduction is described by two index spaces over the input: the kept dims (one output
// per position, written row-major) and the reduced dims (walked by the threads of a group).

#define WARP 32

// Op codes of reduce: REDUCE_* (backend/cuda/op_codes.rs).
template <typename A>
__device__ __forceinline__ A reduce_identity(int op) {
    switch (op) {
    case REDUCE_SUM: return (A)0;
    case REDUCE_PROD: return (A)1;
    case REDUCE_MAX: return Lowest<A>::value();
    case REDUCE_MIN: return Highest<A>::value();
    case REDUCE_ALL: return (A)1;
    }
    return (A)0;
}

// NaN wins max and min, as in PyTorch.
template <typename A>
__device__ __forceinline__ A reduce_combine(int op, A a, A b) {
    switch (op) {
    case REDUCE_SUM: return a + b;
    case REDUCE_PROD: return a * b;
    case REDUCE_MAX: return (is_nan(a) || is_nan(b)) ? a + b : (a > b ? a : b);
    case REDUCE_MIN: return (is_nan(a) || is_nan(b)) ? a + b : (a < b ? a : b);
    case REDUCE_ALL: return (A)((a != (A)0) && (b != (A)0));
    case REDUCE_ANY: return (A)((a != (A)0) || (b != (A)0));
    }
    return a;
}

template <typename A>
__device__ __forceinline__ A warp_reduce(int op, A v) {
    for (int o = WARP / 2; o > 0; o /= 2) v = reduce_combine(op, v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

// `group` threads (32, or the whole block of 256) reduce one slice: elements
// [c * chunk, (c + 1) * chunk) of output o's r, for slice o2 = o * splits + c. With one slice
// per output (splits 1, chunk r) that is the whole reduction, written to `out` (T, or boolean
// for all/any). With several (PARTIAL), each slice's accumulator (Ty<T>::C) goes to
// `out[o2]` and a second pass combines the slices: a few outputs over long rows (a loss's
// sum over a whole activation) would otherwise leave all but a few SMs idle.
// blockDim.x is 256.
template <typename T, bool PARTIAL>
__device__ void reduce_impl(i64 m, i64 r, int op, int group, i64 splits, i64 chunk,
                            const Shape& ksh, const Strides& ks, const Shape& rsh,
                            const Strides& rs, const T* in, void* out) {
    typedef typename Ty<T>::C A;
    __shared__ A partial[256 / WARP];
    const int lane = threadIdx.x % group;
    const i64 per_block = blockDim.x / group;
    const i64 slices = m * splits;
    for (i64 o2 = (i64)blockIdx.x * per_block + threadIdx.x / group; o2 - threadIdx.x / group < slices;
         o2 += (i64)gridDim.x * per_block) {
        A acc = reduce_identity<A>(op);
        if (o2 < slices) {
            const i64 o = o2 / splits;
            const i64 j0 = (o2 % splits) * chunk;
            const i64 j1 = j0 + chunk < r ? j0 + chunk : r;
            i64 base = offset_of(ksh, ks, o);
            for (i64 j = j0 + lane; j < j1; j += group) {
                A x = Ty<T>::up(in[base + offset_of(rsh, rs, j)]);  // rs.offset is 0
                acc = reduce_combine(op, acc, x);
            }
        }
        acc = warp_reduce(op, acc);
        if (group > WARP) {
            if (threadIdx.x % WARP == 0) partial[threadIdx.x / WARP] = acc;
            __syncthreads();
            if (threadIdx.x < WARP) {
                acc = threadIdx.x < blockDim.x / WARP ? partial[threadIdx.x] : reduce_identity<A>(op);
                acc = warp_reduce(op, acc);
            }
            __syncthreads();
        }
        if (lane == 0 && o2 < slices) {
            if (PARTIAL) ((A*)out)[o2] = acc;
            else if (op >= REDUCE_ALL) ((boolean*)out)[o2].x = acc != (A)0;
            else ((T*)out)[o2] = Ty<T>::down(acc);
        }
    }
}

// Reductions whose outputs are unit-stride in the input (a bias gradient: the sum over the
// rows of a (rows, features) matrix): one thread per output, consecutive threads on
// consecutive outputs, so that each step's loads are coalesced (a group of threads per
// output would read a column, a 32-byte sector per element). blockIdx.y is the slice c of
// the reduced range, [c * chunk, (c + 1) * chunk); with PARTIAL each slice's accumulator goes
// to out[c * m + o] for a second pass, otherwise the result to out[o].
template <typename T, bool PARTIAL>
__device__ void reduce_columns_impl(i64 m, i64 r, int op, i64 chunk, const Shape& ksh,
                                    const Strides& ks, const Shape& rsh, const Strides& rs,
                                    const T* in, void* out) {
    typedef typename Ty<T>::C A;
    const i64 c = blockIdx.y;
    const i64 j0 = c * chunk;
    const i64 j1 = j0 + chunk < r ? j0 + chunk : r;
    for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < m; o += (i64)gridDim.x * blockDim.x) {
        const i64 base = offset_of(ksh, ks, o);
        A acc = reduce_identity<A>(op);
        for (i64 j = j0; j < j1; ++j) acc = reduce_combine(op, acc, Ty<T>::up(in[base + offset_of(rsh, rs, j)]));
        if (PARTIAL) ((A*)out)[c * m + o] = acc;
        else if (op >= REDUCE_ALL) ((boolean*)out)[o].x = acc != (A)0;
        else ((T*)out)[o] = Ty<T>::down(acc);
    }
}

#define REDUCE(T, NAME)                                                                       \
    extern "C" __global__ void reduce_##NAME(i64 m, i64 r, int op, int group, Shape ksh,      \
                                             Strides ks, Shape rsh, Strides rs, const T* in,  \
                                             void* out) {                                     \
        reduce_impl<T, false>(m, r, op, group, 1, r, ksh, ks, rsh, rs, in, out);              \
    }                                                                                         \
    extern "C" __global__ void reduce_partial_##NAME(i64 m, i64 r, int op, i64 splits,        \
                                                     i64 chunk, Shape ksh, Strides ks,        \
                                                     Shape rsh, Strides rs, const T* in,      \
                                                     void* out) {                             \
        reduce_impl<T, true>(m, r, op, 256, splits, chunk, ksh, ks, rsh, rs, in, out);        \
    }                                                                                         \
    extern "C" __global__ void reduce_columns_##NAME(i64 m, i64 r, int op, i64 chunk,         \
                                                     Shape ksh, Strides ks, Shape rsh,        \
                                                     Strides rs, const T* in, void* out) {    \
        if (gridDim.y > 1)                                                                    \
            reduce_columns_impl<T, true>(m, r, op, chunk, ksh, ks, rsh, rs, in, out);         \
        else                                                                                  \
            reduce_columns_impl<T, false>(m, r, op, chunk, ksh, ks, rsh, rs, in, out);        \
    }
FOR_ALL_TYPES(REDUCE)

// Index of the max (ARG_MAX) or min (ARG_MIN) along a dim of size r and stride rstride; the first
// occurrence wins ties and the first NaN wins outright. One warp per output.
#define ARG_REDUCE(T, NAME)                                                                   \
    extern "C" __global__ void arg_reduce_##NAME(i64 m, i64 r, int op, Shape ksh, Strides ks,  \
                                                 i64 rstride, const T* in, i64* out) {        \
        typedef Ty<T>::C A;                                                                   \
        const int lane = threadIdx.x % WARP;                                                  \
        const i64 warps = (i64)gridDim.x * (blockDim.x / WARP);                               \
        for (i64 o = (i64)blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP; o < m;        \
             o += warps) {                                                                    \
            i64 base = offset_of(ksh, ks, o);                                                 \
            A best = 0;                                                                       \
            i64 idx = -1;                                                                     \
            for (i64 j = lane; j < r; j += WARP) {                                            \
                A x = Ty<T>::up(in[base + j * rstride]);                                      \
                if (idx >= 0 && is_nan(best)) break;                                          \
                if (idx < 0 || is_nan(x) || (op == ARG_MAX ? x > best : x < best)) { best = x; idx = j; } \
            }                                                                                 \
            for (int s = WARP / 2; s > 0; s /= 2) {                                           \
                A ob = __shfl_down_sync(0xffffffffu, best, s);                                \
                i64 oi = __shfl_down_sync(0xffffffffu, idx, s);                               \
                if (oi < 0) continue;                                                         \
                bool take;                                                                    \
                if (idx < 0) take = true;                                                     \
                else if (is_nan(best) || is_nan(ob)) take = is_nan(ob) && (!is_nan(best) || oi < idx); \
                else if (ob == best) take = oi < idx;                                         \
                else take = op == ARG_MAX ? ob > best : ob < best;                                  \
                if (take) { best = ob; idx = oi; }                                            \
            }                                                                                 \
            if (lane == 0) out[o] = idx < 0 ? 0 : idx;                                        \
        }                                                                                     \
    }
FOR_ALL_TYPES(ARG_REDUCE)

// Softmax (or log-softmax) of rows along a dim: one warp per row. Each lane keeps a running
// max and the sum of exp(x - max) over its elements; lanes merge the pairs, then write.
// -inf elements add nothing (a row of only -inf gives NaN, as in PyTorch); NaN poisons the sum.
#define SOFTMAX(T, NAME)                                                                      \
    extern "C" __global__ void softmax_##NAME(i64 rows, i64 n, int log_out, Shape osh,        \
                                              Strides is, i64 istride, Strides os,             \
                                              i64 ostride, const T* in, T* out) {             \
        typedef Ty<T>::C A;                                                                   \
        const A ninf = Lowest<A>::value();                                                    \
        const int lane = threadIdx.x % WARP;                                                  \
        const i64 warps = (i64)gridDim.x * (blockDim.x / WARP);                               \
        for (i64 row = (i64)blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP; row < rows; \
             row += warps) {                                                                  \
            i64 ib = offset_of(osh, is, row), ob = offset_of(osh, os, row);                   \
            A mx = ninf, sum = 0;                                                             \
            for (i64 j = lane; j < n; j += WARP) {                                            \
                A x = Ty<T>::up(in[ib + j * istride]);                                        \
                if (x == ninf) continue;                                                      \
                if (x > mx) { sum = sum * m_exp(mx - x); mx = x; }                            \
                sum += m_exp(x - mx);                                                         \
            }                                                                                 \
            for (int s = WARP / 2; s > 0; s /= 2) {                                           \
                A om = __shfl_down_sync(0xffffffffu, mx, s);                                  \
                A osum = __shfl_down_sync(0xffffffffu, sum, s);                               \
                A nm = om > mx ? om : mx;                                                     \
                A a = mx == ninf ? (A)0 : sum * m_exp(mx - nm);                               \
                A b = om == ninf ? (A)0 : osum * m_exp(om - nm);                              \
                mx = nm;                                                                      \
                sum = a + b;                                                                  \
            }                                                                                 \
            mx = __shfl_sync(0xffffffffu, mx, 0);                                             \
            sum = __shfl_sync(0xffffffffu, sum, 0);                                           \
            A lse = m_log(sum);                                                               \
            for (i64 j = lane; j < n; j += WARP) {                                            \
                A x = Ty<T>::up(in[ib + j * istride]) - mx;                                   \
                out[ob + j * ostride] = Ty<T>::down(log_out ? x - lse : m_exp(x) / sum);      \
            }                                                                                 \
        }                                                                                     \
    }
FOR_FLOAT_TYPES(SOFTMAX)

// Inclusive scans along a dim: SCAN_CUMSUM, SCAN_CUMPROD, SCAN_REV_CUMSUM (suffix sums) (the scan runs from the
// end of the row: scan position k is element n - 1 - k). Floats accumulate in double and keep
// their dtype; integers and bool accumulate into i64 with wrapping arithmetic, which is
// associative, so the parallel scan's integer results equal the sequential ones exactly (the
// float sums may differ from the CPU's sequential order in the last bits of the double).
__device__ __forceinline__ double scan_step(int op, double a, double x) { return op == SCAN_CUMPROD ? a * x : a + x; }
__device__ __forceinline__ i64 scan_step(int op, i64 a, i64 x) { return op == SCAN_CUMPROD ? wmul(a, x) : wadd(a, x); }
template <typename A> __device__ __forceinline__ A scan_identity(int op) { return op == SCAN_CUMPROD ? (A)1 : (A)0; }
template <typename O> __device__ __forceinline__ void scan_store(O* p, double a) { *p = Ty<O>::from_d(a); }
__device__ __forceinline__ void scan_store(i64* p, i64 a) { *p = a; }

// The reference path, also the fastest when rows alone fill the GPU (or are a few elements
// long): one thread per row, in order.
template <typename T, typename O, typename A>
__device__ void scan_serial_impl(i64 rows, i64 n, int op, const Shape& osh, const Strides& is,
                                 i64 istride, const Strides& os, i64 ostride, const T* in,
                                 O* out) {
    FOR_EACH(row, rows) {
        i64 ib = offset_of(osh, is, row), ob = offset_of(osh, os, row);
        A acc = scan_identity<A>(op);
        for (i64 k = 0; k < n; ++k) {
            i64 j = op == SCAN_REV_CUMSUM ? n - 1 - k : k;
            acc = scan_step(op, acc, (A)Ty<T>::up(in[ib + j * istride]));
            scan_store(out + ob + j * ostride, acc);
        }
    }
}

// Elements each thread of a parallel scan takes per tile (consecutive in scan order).
#define SCAN_ITEMS 8

// Inclusive scan of v over the lanes of a warp (Hillis-Steele with shuffles).
template <typename A>
__device__ __forceinline__ A warp_inclusive_scan(int op, A v) {
    const int lane = threadIdx.x % WARP;
    for (int o = 1; o < WARP; o *= 2) {
        A before = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v = scan_step(op, before, v);
    }
    return v;
}

// Exclusive scan of v over a group of `group` threads (one warp, or the whole block of
// blockDim.x <= 256 threads): returns the combination of the values of the threads before
// this one and sets *total to the whole group's. A block goes through `warp_total` in shared
// memory; each thread combines the warps' totals in the same order, so all agree. Every
// thread of the group must call it.
template <typename A>
__device__ A group_exclusive_scan(int op, int group, A v, A* total, A* warp_total) {
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    A incl = warp_inclusive_scan(op, v);
    A excl = __shfl_up_sync(0xffffffffu, incl, 1);
    if (lane == 0) excl = scan_identity<A>(op);
    if (group == WARP) {
        *total = __shfl_sync(0xffffffffu, incl, WARP - 1);
        return excl;
    }
    if (lane == WARP - 1) warp_total[warp] = incl;
    __syncthreads();
    A before = scan_identity<A>(op), all = scan_identity<A>(op);
    for (int w = 0; w < group / WARP; ++w) {
        if (w < warp) before = scan_step(op, before, warp_total[w]);
        all = scan_step(op, all, warp_total[w]);
    }
    __syncthreads();  // every thread has read warp_total before the next call writes it
    *total = all;
    return scan_step(op, before, excl);
}

// A group of `group` threads (32, or the whole block of 256) scans one row. The row goes in
// tiles of group * SCAN_ITEMS elements: each thread scans its SCAN_ITEMS consecutive
// elements in registers, the group scans the threads' totals, and each element's result is
// carry (the tiles before) + the threads before it in the tile + its own partial scan.
template <typename T, typename O, typename A>
__device__ void scan_impl(i64 rows, i64 n, int op, int group, const Shape& osh,
                          const Strides& is, i64 istride, const Strides& os, i64 ostride,
                          const T* in, O* out) {
    __shared__ A warp_total[256 / WARP];
    const int lane = threadIdx.x % group;
    const i64 per_block = blockDim.x / group;
    const i64 tile = (i64)group * SCAN_ITEMS;
    // The loop bounds depend only on the row, which the whole group shares, so every thread
    // of a group runs the same iterations (its shuffles and barriers need that).
    for (i64 row = (i64)blockIdx.x * per_block + threadIdx.x / group; row < rows;
         row += (i64)gridDim.x * per_block) {
        const i64 ib = offset_of(osh, is, row), ob = offset_of(osh, os, row);
        A carry = scan_identity<A>(op);
        for (i64 start = 0; start < n; start += tile) {
            const i64 first = start + (i64)lane * SCAN_ITEMS;
            A part[SCAN_ITEMS];
            A acc = scan_identity<A>(op);
#pragma unroll
            for (int t = 0; t < SCAN_ITEMS; ++t) {
                const i64 k = first + t;
                if (k < n) {
                    const i64 j = op == SCAN_REV_CUMSUM ? n - 1 - k : k;
                    acc = scan_step(op, acc, (A)Ty<T>::up(in[ib + j * istride]));
                }
                part[t] = acc;
            }
            A tile_total;
            const A before = group_exclusive_scan(op, group, acc, &tile_total, warp_total);
            const A prefix = scan_step(op, carry, before);
#pragma unroll
            for (int t = 0; t < SCAN_ITEMS; ++t) {
                const i64 k = first + t;
                if (k < n) {
                    const i64 j = op == SCAN_REV_CUMSUM ? n - 1 - k : k;
                    scan_store(out + ob + j * ostride, scan_step(op, prefix, part[t]));
                }
            }
            carry = scan_step(op, carry, tile_total);
        }
    }
}

#define SCAN(T, NAME, O, A)                                                                   \
    extern "C" __global__ void scan_serial_##NAME(i64 rows, i64 n, int op, Shape osh,         \
                                                  Strides is, i64 istride, Strides os,         \
                                                  i64 ostride, const T* in, O* out) {         \
        scan_serial_impl<T, O, A>(rows, n, op, osh, is, istride, os, ostride, in, out);       \
    }                                                                                         \
    extern "C" __global__ void scan_##NAME(i64 rows, i64 n, int op, int group, Shape osh,     \
                                           Strides is, i64 istride, Strides os, i64 ostride,  \
                                           const T* in, O* out) {                             \
        scan_impl<T, O, A>(rows, n, op, group, osh, is, istride, os, ostride, in, out);       \
    }
SCAN(float, f32, float, double)
SCAN(double, f64, double, double)
SCAN(f16, f16, f16, double)
SCAN(bf16, bf16, bf16, double)
SCAN(i64, i64, i64, i64)
SCAN(i32, i32, i64, i64)
SCAN(u8, u8, i64, i64)
SCAN(boolean, bool, i64, i64)
