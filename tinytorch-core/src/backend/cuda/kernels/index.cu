// Index kernels: index_select, gather, scatter, index_add, sort. An out-of-range index is
// skipped and raises the device's error flag (`err`), which the host checks when it next
// synchronises (as PyTorch's device-side asserts, without killing the context).

__device__ __forceinline__ bool index_ok(i64 k, i64 size, int* err) {
    if (k < 0 || k >= size) { atomicExch(err, 1); return false; }
    return true;
}

// out (contiguous, the input's shape with `dim` of size k) = input.index_select(dim, index).
// The input is split into its outer dims (before dim) and inner dims (after it).
#define INDEX_SELECT(T, NAME)                                                                 \
    extern "C" __global__ void index_select_##NAME(                                           \
        i64 n, i64 k, i64 inner, Shape osh, Strides os, Shape qsh, Strides qs, i64 dstride,    \
        i64 dsize, const T* in, const i64* idx, i64 idx_offset, i64 idx_stride, T* out,      \
        int* err) {                                                                           \
        FOR_EACH(i, n) {                                                                      \
            i64 o = i / (k * inner), j = (i / inner) % k, q = i % inner;                      \
            i64 x = idx[idx_offset + j * idx_stride];                                         \
            if (!index_ok(x, dsize, err)) continue;                                           \
            out[i] = in[offset_of(osh, os, o) + x * dstride + offset_of(qsh, qs, q)];         \
        }                                                                                     \
    }
FOR_ALL_TYPES(INDEX_SELECT)

// out (index's shape) = input.gather(dim, index). `ps` are the input's strides with `dim`
// pinned to 0 (and the input's offset), walked over the index's shape.
#define GATHER(T, NAME)                                                                       \
    extern "C" __global__ void gather_##NAME(i64 n, Shape ish, Strides ps, Strides is,        \
                                             i64 dstride, i64 dsize, const T* in,             \
                                             const i64* idx, T* out, int* err) {              \
        FOR_EACH(i, n) {                                                                      \
            i64 x = idx[offset_of(ish, is, i)];                                               \
            if (!index_ok(x, dsize, err)) continue;                                           \
            out[i] = in[offset_of(ish, ps, i) + x * dstride];                                 \
        }                                                                                     \
    }
FOR_ALL_TYPES(GATHER)

// dst.scatter_(dim, index, src), or scatter_add_ with `accumulate`.
#define SCATTER(T, NAME)                                                                      \
    extern "C" __global__ void scatter_##NAME(i64 n, int accumulate, Shape ish, Strides ps,   \
                                              Strides is, Strides ss, i64 dstride, i64 dsize,  \
                                              T* dst, const i64* idx, const T* src,           \
                                              int* err) {                                     \
        FOR_EACH(i, n) {                                                                      \
            i64 x = idx[offset_of(ish, is, i)];                                               \
            if (!index_ok(x, dsize, err)) continue;                                           \
            T v = src[offset_of(ish, ss, i)];                                                 \
            T* p = dst + offset_of(ish, ps, i) + x * dstride;                                 \
            if (accumulate) atomic_add(p, Ty<T>::up(v));                                      \
            else *p = v;                                                                      \
        }                                                                                     \
    }
FOR_ALL_TYPES(SCATTER)

// dst.index_add_(dim, index, src): one thread per source element (src has dst's shape with
// `dim` of size k), split into outer, index and inner positions as in index_select.
#define INDEX_ADD(T, NAME)                                                                    \
    extern "C" __global__ void index_add_##NAME(                                              \
        i64 n, i64 k, i64 inner, Shape osh, Strides os, Shape qsh, Strides qs, i64 dstride,    \
        i64 dsize, T* dst, const i64* idx, i64 idx_offset, i64 idx_stride, Shape ssh,        \
        Strides ss, const T* src, int* err) {                                                 \
        FOR_EACH(i, n) {                                                                      \
            i64 o = i / (k * inner), j = (i / inner) % k, q = i % inner;                      \
            i64 x = idx[idx_offset + j * idx_stride];                                         \
            if (!index_ok(x, dsize, err)) continue;                                           \
            T* p = dst + offset_of(osh, os, o) + x * dstride + offset_of(qsh, qs, q);         \
            atomic_add(p, Ty<T>::up(src[offset_of(ssh, ss, i)]));                             \
        }                                                                                     \
    }
FOR_ALL_TYPES(INDEX_ADD)

// ---- sort ---------------------------------------------------------------------------------
// torch.sort's order: NaN above every number (all NaNs equal), -0.0 equal to 0.0, descending
// the reverse, and equal values in their original order (stable). Each element becomes a
// pair (key, index): `sort_key` maps the value to an unsigned integer whose order is that
// value order, and the index (the element's position in its row) breaks ties. The pairs of a
// row are all distinct, so they have exactly one sorted order, which is the stable order;
// any sorting network (the bitonic network here, not stable by itself) yields it. The values
// written out are read back from the input at the sorted indices, so NaN payloads and the
// sign of zero come out as they went in, as on the CPU.
//
// Bitonic sort of m = next_power_of_two(n) slots per row; the m - n padding slots hold
// (SORT_PAD_KEY, SORT_PAD_INDEX), which is above every real pair (a real index is < n), so
// the n real elements take the first n slots. Stage k (k = 2, 4, ..., m) makes sorted runs
// of k slots, by steps j = k/2, ..., 1 that compare-exchange slots i and i + j (bit j of i
// clear) in the direction given by bit k of i's position in its row: ascending runs
// alternate with descending ones, which stage 2k merges; at k = m every row is ascending.
//
// Rows of at most SORT_CHUNK elements (m <= SORT_CHUNK) are sorted in shared memory by one
// block, several short rows per block (sort_rows_*). Longer rows go, a batch of rows at a
// time, through a scratch buffer of m pairs per row: sort_fill_* writes the pairs, then the
// steps with j < SORT_CHUNK, which only pair slots inside one SORT_CHUNK-aligned chunk, run
// in shared memory, a block per chunk (sort_chunks), and each step with j >= SORT_CHUNK is
// one launch over all rows of the batch (sort_step); sort_gather_* writes the outputs. The
// host (backend/cuda/index.rs) orders the launches.

// Slots sorted in shared memory by one block: 2048 * (8 + 8) bytes = 32 KiB of the 48 KiB
// of static shared memory a block may have. index.rs's SORT_CHUNK must match.
#define SORT_CHUNK 2048
#define SORT_PAD_KEY 0xffffffffffffffffull
#define SORT_PAD_INDEX 0x7fffffffffffffffll

// Order-preserving maps to unsigned integers. Floats: NaN becomes one canonical positive
// NaN and -0.0 becomes +0.0 (equal values must get equal keys); then a set sign bit flips
// every bit (larger magnitude, smaller key) and a clear one is set (positives above
// negatives). The canonical NaN's key is above +inf's. Integers (i32, u8 and bool compute as i64):
// flipping the sign bit maps i64's order onto u64's.
__device__ __forceinline__ u64 sort_key(float x) {
    unsigned int b = is_nan(x) ? 0x7fc00000u : (x == 0.0f ? 0u : __float_as_uint(x));
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return (u64)b;
}
__device__ __forceinline__ u64 sort_key(double x) {
    u64 b = is_nan(x) ? 0x7ff8000000000000ull : (x == 0.0 ? 0ull : (u64)__double_as_longlong(x));
    return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ u64 sort_key(i64 x) { return (u64)x ^ 0x8000000000000000ull; }

// The key of a stored value; descending order is ascending order of the complemented key
// (the index still breaks ties upwards, so equal values keep their order both ways).
template <typename T>
__device__ __forceinline__ u64 sort_key_of(T v, int descending) {
    u64 k = sort_key(Ty<T>::up(v));
    return descending ? ~k : k;
}

// (ka, ia) < (kb, ib) lexicographically.
__device__ __forceinline__ bool pair_less(u64 ka, i64 ia, u64 kb, i64 ib) {
    return ka < kb || (ka == kb && ia < ib);
}

// Compare-exchange of slots i < l: afterwards slot i holds the smaller pair when `up`, the
// larger otherwise.
__device__ __forceinline__ void compare_exchange(u64* key, i64* idx, i64 i, i64 l, bool up) {
    bool swap = up ? pair_less(key[l], idx[l], key[i], idx[i])
                   : pair_less(key[i], idx[i], key[l], idx[l]);
    if (swap) {
        u64 k = key[i]; key[i] = key[l]; key[l] = k;
        i64 x = idx[i]; idx[i] = idx[l]; idx[l] = x;
    }
}

// The lower slot of the p-th pair of a step with distance j (a power of two): the p-th slot
// whose bit j is clear. Its partner is that slot + j.
__device__ __forceinline__ i64 pair_low(i64 p, i64 j) { return (p / j) * (2 * j) + p % j; }

// Direction of the pair at slot i (counted from the start of the row-major m-slot rows) in
// stage k: ascending when bit k of the position within the row is clear (always so at k = m).
__device__ __forceinline__ bool pair_up(i64 i, i64 m, i64 k) { return ((i & (m - 1)) & k) == 0; }

// Stages k_first, 2 k_first, ..., k_last of the network, without their steps j >= SORT_CHUNK,
// over `count` slots in shared memory (a multiple of 2j for every step run). Shared slot s is
// slot base + s of the rows of m slots (base decides the directions). Every thread of the
// block must call it; it ends with a barrier, so the block then sees the sorted slots.
__device__ void bitonic_shared(u64* key, i64* idx, i64 count, i64 base, i64 m, i64 k_first,
                               i64 k_last) {
    for (i64 k = k_first; k <= k_last; k *= 2) {
        for (i64 j = (k / 2 < SORT_CHUNK / 2 ? k / 2 : SORT_CHUNK / 2); j >= 1; j /= 2) {
            for (i64 p = threadIdx.x; p < count / 2; p += blockDim.x) {
                i64 i = pair_low(p, j);
                compare_exchange(key, idx, i, i + j, pair_up(base + i, m, k));
            }
            __syncthreads();
        }
    }
}

// Rows of n <= m <= SORT_CHUNK elements: a block sorts rows_per_block rows (m slots each,
// rows_per_block * m <= SORT_CHUNK) in shared memory at a time and writes values and indices
// to the contiguous outputs. `osh` indexes the rows; `is`/`os` place each row's start in the
// input and output, `istride`/`ostride` step along it.
template <typename T>
__device__ void sort_rows_impl(i64 rows, i64 n, i64 m, i64 rows_per_block, int descending,
                               const Shape& osh, const Strides& is, i64 istride,
                               const Strides& os, i64 ostride, const T* in, T* values,
                               i64* indices) {
    __shared__ u64 key[SORT_CHUNK];
    __shared__ i64 idx[SORT_CHUNK];
    const i64 count = rows_per_block * m;
    const i64 groups = (rows + rows_per_block - 1) / rows_per_block;
    // The loop bounds are the same for the whole block, so every thread meets the barriers.
    for (i64 g = blockIdx.x; g < groups; g += gridDim.x) {
        const i64 first = g * rows_per_block;
        for (i64 s = threadIdx.x; s < count; s += blockDim.x) {
            i64 row = first + s / m, j = s % m;
            if (row < rows && j < n) {
                key[s] = sort_key_of(in[offset_of(osh, is, row) + j * istride], descending);
                idx[s] = j;
            } else {
                key[s] = SORT_PAD_KEY;
                idx[s] = SORT_PAD_INDEX;
            }
        }
        __syncthreads();
        bitonic_shared(key, idx, count, 0, m, 2, m);
        for (i64 s = threadIdx.x; s < count; s += blockDim.x) {
            i64 row = first + s / m, j = s % m;
            if (row < rows && j < n) {
                i64 from = idx[s];
                i64 ob = offset_of(osh, os, row) + j * ostride;
                values[ob] = in[offset_of(osh, is, row) + from * istride];
                indices[ob] = from;
            }
        }
        __syncthreads();  // the next group's loads overwrite key and idx
    }
}

#define SORT_ROWS(T, NAME)                                                                    \
    extern "C" __global__ void sort_rows_##NAME(                                              \
        i64 rows, i64 n, i64 m, i64 rows_per_block, int descending, Shape osh, Strides is,     \
        i64 istride, Strides os, i64 ostride, const T* in, T* values, i64* indices) {         \
        sort_rows_impl<T>(rows, n, m, rows_per_block, descending, osh, is, istride, os,       \
                          ostride, in, values, indices);                                      \
    }
FOR_ALL_TYPES(SORT_ROWS)

// Long rows, first launch: the pairs of rows first_row, first_row + 1, ... into the scratch
// buffer, m slots a row (slots = that many rows * m), padding included. (The host sorts the
// rows in batches, so that the scratch buffer stays bounded.)
#define SORT_FILL(T, NAME)                                                                    \
    extern "C" __global__ void sort_fill_##NAME(i64 slots, i64 first_row, i64 n, i64 m,       \
                                                int descending, Shape osh, Strides is,         \
                                                i64 istride, const T* in, u64* key,           \
                                                i64* idx) {                                   \
        FOR_EACH(s, slots) {                                                                  \
            i64 row = first_row + s / m, j = s % m;                                           \
            if (j < n) {                                                                      \
                key[s] = sort_key_of(in[offset_of(osh, is, row) + j * istride], descending);  \
                idx[s] = j;                                                                   \
            } else {                                                                          \
                key[s] = SORT_PAD_KEY;                                                        \
                idx[s] = SORT_PAD_INDEX;                                                      \
            }                                                                                 \
        }                                                                                     \
    }
FOR_ALL_TYPES(SORT_FILL)

// Long rows: stages k_first..k_last without their steps j >= SORT_CHUNK, one block per
// SORT_CHUNK-slot chunk of the scratch buffer (chunks = rows * m / SORT_CHUNK; m is a
// multiple of SORT_CHUNK, so a chunk lies in one row).
extern "C" __global__ void sort_chunks(i64 chunks, i64 m, i64 k_first, i64 k_last, u64* key,
                                       i64* idx) {
    __shared__ u64 skey[SORT_CHUNK];
    __shared__ i64 sidx[SORT_CHUNK];
    for (i64 c = blockIdx.x; c < chunks; c += gridDim.x) {
        const i64 base = c * SORT_CHUNK;
        for (i64 s = threadIdx.x; s < SORT_CHUNK; s += blockDim.x) {
            skey[s] = key[base + s];
            sidx[s] = idx[base + s];
        }
        __syncthreads();
        bitonic_shared(skey, sidx, SORT_CHUNK, base, m, k_first, k_last);
        for (i64 s = threadIdx.x; s < SORT_CHUNK; s += blockDim.x) {
            key[base + s] = skey[s];
            idx[base + s] = sidx[s];
        }
        __syncthreads();  // the next chunk's loads overwrite skey and sidx
    }
}

// Long rows: step j (>= SORT_CHUNK) of stage k over the whole scratch buffer (pairs =
// rows * m / 2; 2j divides m, so both slots of a pair lie in one row).
extern "C" __global__ void sort_step(i64 pairs, i64 m, i64 k, i64 j, u64* key, i64* idx) {
    FOR_EACH(p, pairs) {
        i64 i = pair_low(p, j);
        compare_exchange(key, idx, i, i + j, pair_up(i, m, k));
    }
}

// Long rows, last launch: the first n slots of each sorted row of the batch (row first_row
// + r in scratch row r; total = the batch's rows * n) to the outputs, the values read from
// the input at the sorted indices.
#define SORT_GATHER(T, NAME)                                                                  \
    extern "C" __global__ void sort_gather_##NAME(                                            \
        i64 total, i64 first_row, i64 n, i64 m, Shape osh, Strides is, i64 istride,           \
        Strides os, i64 ostride, const T* in, const i64* idx, T* values, i64* indices) {      \
        FOR_EACH(t, total) {                                                                  \
            i64 r = t / n, j = t % n, row = first_row + r;                                    \
            i64 from = idx[r * m + j];                                                        \
            i64 ob = offset_of(osh, os, row) + j * ostride;                                   \
            values[ob] = in[offset_of(osh, is, row) + from * istride];                        \
            indices[ob] = from;                                                               \
        }                                                                                     \
    }
FOR_ALL_TYPES(SORT_GATHER)
