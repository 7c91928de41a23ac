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

// "a sorts before b" in torch.sort's order: NaN above every number; equal values keep their
// positions (stable).
template <typename A>
__device__ __forceinline__ bool sorts_before(A a, i64 ia, A b, i64 ib, int descending) {
    bool an = is_nan(a), bn = is_nan(b);
    bool less, greater;
    if (an || bn) { less = !an && bn; greater = an && !bn; }
    else { less = a < b; greater = a > b; }
    bool before = descending ? greater : less;
    bool tie = !less && !greater;
    return before || (tie && ia < ib);
}

// Stable sort along a dim by ranking: each element counts the elements that sort before it
// in its row, which is its position (O(n^2) work per row, no scratch memory).
#define SORT(T, NAME)                                                                         \
    extern "C" __global__ void sort_##NAME(i64 total, i64 n, int descending, Shape osh,       \
                                           Strides is, i64 istride, Strides os, i64 ostride,  \
                                           const T* in, T* values, i64* indices) {            \
        typedef Ty<T>::C A;                                                                   \
        FOR_EACH(t, total) {                                                                  \
            i64 row = t / n, j = t % n;                                                       \
            i64 ib = offset_of(osh, is, row);                                                 \
            T vj = in[ib + j * istride];                                                      \
            A aj = Ty<T>::up(vj);                                                             \
            i64 rank = 0;                                                                     \
            for (i64 m = 0; m < n; ++m) {                                                     \
                A am = Ty<T>::up(in[ib + m * istride]);                                       \
                rank += sorts_before(am, m, aj, j, descending);                               \
            }                                                                                 \
            i64 ob = offset_of(osh, os, row) + rank * ostride;                                \
            values[ob] = vj;                                                                  \
            indices[ob] = j;                                                                  \
        }                                                                                     \
    }
FOR_ALL_TYPES(SORT)
