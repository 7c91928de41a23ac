// Elementwise kernels: unary, binary, comparisons, where, casts, strided copies and fills.
// Every operand is addressed through its own Strides over one common Shape, so views
// (transposed, sliced, broadcast with stride 0) never need a copy first. The op codes are
// `#define`d from backend/cuda/op_codes.rs.

// Special functions in double, mirroring backend/cpu/special.rs (same series, same
// branches) so that CPU and CUDA agree to rounding; erfc, erfinv and lgamma are CUDA's.
// NVRTC has no math.h, so infinity and NaN come from their bit patterns.
__device__ __forceinline__ double sp_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double sp_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ double sp_digamma(double x) {
    const double PI = 3.14159265358979323846;
    if (x == 0.0) return signbit(x) ? sp_inf() : -sp_inf();
    double acc = 0.0;
    if (x < 0.0) {
        if (x == floor(x)) return sp_nan();
        acc = -PI / tan(PI * x);
        x = 1.0 - x;
    }
    while (x < 6.0) { acc -= 1.0 / x; x += 1.0; }
    double z = 1.0 / (x * x);
    double series = z * (1.0 / 12.0 - z * (1.0 / 120.0 - z * (1.0 / 252.0 - z * (1.0 / 240.0
                    - z * (1.0 / 132.0 - z * (691.0 / 32760.0 - z / 12.0))))));
    return acc + log(x) - 0.5 / x - series;
}

__device__ double sp_trigamma(double x) {
    const double PI = 3.14159265358979323846;
    if (x <= 0.0 && x == floor(x)) return sp_inf();
    double sign = 1.0, acc = 0.0;
    if (x < 0.0) {
        double s = sin(PI * x);
        acc = PI * PI / (s * s);
        sign = -1.0;
        x = 1.0 - x;
    }
    double t = 0.0;
    while (x < 6.0) { t += 1.0 / (x * x); x += 1.0; }
    double z = 1.0 / (x * x);
    t += 1.0 / x + z / 2.0 + z / x * (1.0 / 6.0 - z * (1.0 / 30.0 - z * (1.0 / 42.0
         - z * (1.0 / 30.0 - z * 5.0 / 66.0))));
    return acc + sign * t;
}

// I_nu(x) e^-x for nu 0 or 1 and x >= 0: power series up to 30, asymptotic expansion beyond.
__device__ double sp_bessel_i_scaled(int nu, double x) {
    if (x <= 30.0) {
        double q = x * x / 4.0, term = nu == 0 ? 1.0 : x / 2.0, sum = term, k = 1.0;
        while (term > sum * 1e-17) { term *= q / (k * (k + nu)); sum += term; k += 1.0; }
        return sum * exp(-x);
    }
    double mu = 4.0 * nu * nu, term = 1.0, sum = 1.0;
    for (int k = 1; k < 60; ++k) {
        double next = -term * (mu - (2.0 * k - 1.0) * (2.0 * k - 1.0)) / (k * 8.0 * x);
        if (fabs(next) >= fabs(term)) break;
        term = next;
        sum += term;
        if (fabs(term) < 1e-17 * fabs(sum)) break;
    }
    return sum / sqrt(2.0 * 3.14159265358979323846 * x);
}

template <typename C>
__device__ __forceinline__ C unary_float(int op, C x, C p0, C p1) {
    const C one = 1, zero = 0;
    switch (op) {
    case UNARY_NEG: return -x;
    case UNARY_ABS: return m_abs(x);
    case UNARY_SIGN: return x > zero ? one : (x < zero ? -one : zero);
    case UNARY_EXP: return m_exp(x);
    case UNARY_LOG: return m_log(x);
    case UNARY_LOG2: return m_log2(x);
    case UNARY_LOG1P: return m_log1p(x);
    case UNARY_EXPM1: return m_expm1(x);
    case UNARY_SQRT: return m_sqrt(x);
    case UNARY_RSQRT: return one / m_sqrt(x);
    case UNARY_SQUARE: return x * x;
    case UNARY_RECIPROCAL: return one / x;
    case UNARY_SIN: return m_sin(x);
    case UNARY_COS: return m_cos(x);
    case UNARY_TAN: return m_tan(x);
    case UNARY_TANH: return m_tanh(x);
    case UNARY_SIGMOID: return one / (one + m_exp(-x));
    case UNARY_RELU: return x < zero ? zero : x;  // keeps NaN, as torch.relu
    case UNARY_LEAKY_RELU: return x > zero ? x : x * p0;
    case UNARY_ELU: return x > zero ? x : p0 * m_expm1(x);
    case UNARY_GELU: return x * (C)0.5 * (one + m_erf(x * (C)0.70710678118654752440));
    case UNARY_GELU_TANH: {
        C inner = (C)0.79788456080286535588 * (x + (C)0.044715 * x * x * x);
        return (C)0.5 * x * (one + m_tanh(inner));
    }
    case UNARY_SILU: return x / (one + m_exp(-x));
    case UNARY_SOFTPLUS: {
        C bx = x * p0;
        return bx > p1 ? x : m_log1p(m_exp(bx)) / p0;
    }
    case UNARY_ERF: return m_erf(x);
    case UNARY_FLOOR: return m_floor(x);
    case UNARY_CEIL: return m_ceil(x);
    case UNARY_ROUND: return m_rint(x);
    case UNARY_ADD_SCALAR: return x + p0;
    case UNARY_MUL_SCALAR: return x * p0;
    case UNARY_POW_SCALAR: return m_pow(x, p0);
    case UNARY_SCALAR_POW: return m_pow(p0, x);
    // min(max(x, lo), hi) in this order: with lo > hi every element becomes hi (PyTorch).
    case UNARY_CLAMP: {
        if (is_nan(x)) return x;
        C y = x < p0 ? p0 : x;
        return y > p1 ? p1 : y;
    }
    case UNARY_CLAMP_NAN: return p0;  // a NaN clamp bound: every element becomes NaN
    case UNARY_ERFC: return (C)erfc((double)x);
    case UNARY_ERFINV: return (C)erfinv((double)x);
    case UNARY_LGAMMA: return (C)lgamma((double)x);
    case UNARY_DIGAMMA: return (C)sp_digamma((double)x);
    case UNARY_TRIGAMMA: return (C)sp_trigamma((double)x);
    case UNARY_I0: return (C)(sp_bessel_i_scaled(0, fabs((double)x)) * exp(fabs((double)x)));
    case UNARY_I0E: return (C)sp_bessel_i_scaled(0, fabs((double)x));
    case UNARY_I1: return (C)copysign(sp_bessel_i_scaled(1, fabs((double)x)) * exp(fabs((double)x)), (double)x);
    case UNARY_I1E: return (C)copysign(sp_bessel_i_scaled(1, fabs((double)x)), (double)x);
    }
    return x;
}

__device__ __forceinline__ i64 unary_int(int op, i64 x, i64 p0, i64 p1) {
    switch (op) {
    case UNARY_NEG: return wsub(0, x);
    case UNARY_ABS: return x < 0 ? wsub(0, x) : x;
    case UNARY_SIGN: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case UNARY_SQUARE: return wmul(x, x);
    case UNARY_RELU: return x < 0 ? 0 : x;
    case UNARY_ADD_SCALAR: return wadd(x, p0);
    case UNARY_MUL_SCALAR: return wmul(x, p0);
    case UNARY_POW_SCALAR: return wpow(x, p0);
    case UNARY_SCALAR_POW: return x < 0 ? 0 : wpow(p0, x);
    case UNARY_CLAMP: {  // min(max(x, lo), hi): hi everywhere when lo > hi, as for floats
        i64 y = x < p0 ? p0 : x;
        return y > p1 ? p1 : y;
    }
    }
    return x;  // floor, ceil, round: the identity on integers
}

// Every load of a sweep before any store: in-place ops (out == in) read and write only their
// own items, so the order within a thread is all that matters.
#define UNARY_FLOAT(T, NAME)                                                                  \
    extern "C" __global__ void unary_##NAME(i64 n, int op, double p0, double p1, Shape sh,    \
                                            Strides is, const T* in, Strides os, T* out) {    \
        typedef Ty<T>::C C;                                                                   \
        FOR_EACH_SWEEP(base, step, n) {                                                       \
            C x[UNROLL];                                                                      \
            _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) {                              \
                i64 i = base + u * step;                                                      \
                x[u] = i < n ? Ty<T>::up(in[offset_of(sh, is, i)]) : (C)0;                    \
            }                                                                                 \
            _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) {                              \
                i64 i = base + u * step;                                                      \
                if (i < n)                                                                    \
                    out[offset_of(sh, os, i)] =                                               \
                        Ty<T>::down(unary_float<C>(op, x[u], (C)p0, (C)p1));                  \
            }                                                                                 \
        }                                                                                     \
    }
FOR_FLOAT_TYPES(UNARY_FLOAT)

// Operands that are contiguous and 16-byte aligned (most activations and gradients) move
// 16 bytes per load and store: four floats, eight halves, two doubles. One access of 4 bytes
// per thread reached 44% of an H200's bandwidth on relu. Whole packs first (grid-stride),
// then the n % V items left, one per thread.
template <typename T>
struct alignas(16) Pack {
    static const int V = 16 / sizeof(T);
    T v[V];
};

template <typename T>
__device__ __forceinline__ void unary_packed(i64 n, int op, double p0, double p1, const T* in,
                                             T* out) {
    typedef typename Ty<T>::C C;
    const i64 packs = n / Pack<T>::V;
    FOR_EACH(k, packs) {
        Pack<T> a = ((const Pack<T>*)in)[k];
#pragma unroll
        for (int u = 0; u < Pack<T>::V; ++u)
            a.v[u] = Ty<T>::down(unary_float<C>(op, Ty<T>::up(a.v[u]), (C)p0, (C)p1));
        ((Pack<T>*)out)[k] = a;
    }
    FOR_EACH(j, n - packs * Pack<T>::V) {
        const i64 i = packs * Pack<T>::V + j;
        out[i] = Ty<T>::down(unary_float<C>(op, Ty<T>::up(in[i]), (C)p0, (C)p1));
    }
}

#define UNARY_PACKED(T, NAME)                                                                 \
    extern "C" __global__ void unary_packed_##NAME(i64 n, int op, double p0, double p1,       \
                                                   const T* in, T* out) {                     \
        unary_packed<T>(n, op, p0, p1, in, out);                                              \
    }
FOR_FLOAT_TYPES(UNARY_PACKED)

#define UNARY_INT(T, NAME)                                                                    \
    extern "C" __global__ void unary_##NAME(i64 n, int op, i64 p0, i64 p1, Shape sh,          \
                                            Strides is, const T* in, Strides os, T* out) {    \
        FOR_EACH(i, n) {                                                                      \
            i64 x = Ty<T>::up(in[offset_of(sh, is, i)]);                                      \
            out[offset_of(sh, os, i)] = Ty<T>::down(unary_int(op, x, p0, p1));                \
        }                                                                                     \
    }
UNARY_INT(i64, i64)
UNARY_INT(i32, i32)
UNARY_INT(u8, u8)

template <typename C>
__device__ __forceinline__ C binary_float(int op, C a, C b) {
    switch (op) {
    case BINARY_ADD: return a + b;
    case BINARY_SUB: return a - b;
    case BINARY_MUL: return a * b;
    case BINARY_DIV: return a / b;
    case BINARY_POW: return m_pow(a, b);
    case BINARY_MAXIMUM: return (is_nan(a) || is_nan(b)) ? a + b : (a > b ? a : b);
    case BINARY_MINIMUM: return (is_nan(a) || is_nan(b)) ? a + b : (a < b ? a : b);
    }
    return a;
}

// Floor division as torch.floor_divide; 0 for a zero divisor (the ops layer rejects those).
__device__ __forceinline__ i64 floor_div(i64 a, i64 b) {
    if (b == 0) return 0;
    if (b == -1) return wsub(0, a);
    i64 q = a / b, r = a % b;
    return (r != 0 && ((r ^ b) < 0)) ? q - 1 : q;
}

__device__ __forceinline__ i64 binary_int(int op, i64 a, i64 b) {
    switch (op) {
    case BINARY_ADD: return wadd(a, b);
    case BINARY_SUB: return wsub(a, b);
    case BINARY_MUL: return wmul(a, b);
    case BINARY_DIV: return floor_div(a, b);
    case BINARY_POW: return b < 0 ? 0 : wpow(a, b);
    case BINARY_MAXIMUM: return a > b ? a : b;
    case BINARY_MINIMUM: return a < b ? a : b;
    }
    return a;
}

// The output may be a third buffer or the lhs itself (in-place ops pass lhs as out).
#define BINARY_FLOAT(T, NAME)                                                                 \
    extern "C" __global__ void binary_##NAME(i64 n, int op, Shape sh, Strides as, const T* a, \
                                             Strides bs, const T* b, Strides os, T* out) {    \
        typedef Ty<T>::C C;                                                                   \
        FOR_EACH_SWEEP(base, step, n) {                                                       \
            C x[UNROLL], y[UNROLL];                                                           \
            _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) {                              \
                i64 i = base + u * step;                                                      \
                x[u] = i < n ? Ty<T>::up(a[offset_of(sh, as, i)]) : (C)0;                     \
                y[u] = i < n ? Ty<T>::up(b[offset_of(sh, bs, i)]) : (C)0;                     \
            }                                                                                 \
            _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) {                              \
                i64 i = base + u * step;                                                      \
                if (i < n) out[offset_of(sh, os, i)] = Ty<T>::down(binary_float<C>(op, x[u], y[u])); \
            }                                                                                 \
        }                                                                                     \
    }
FOR_FLOAT_TYPES(BINARY_FLOAT)

// Contiguous, 16-byte aligned, same-shape operands (no broadcast): see Pack. `out` may be
// `a` itself (in place).
template <typename T>
__device__ __forceinline__ void binary_packed(i64 n, int op, const T* a, const T* b, T* out) {
    typedef typename Ty<T>::C C;
    const i64 packs = n / Pack<T>::V;
    FOR_EACH(k, packs) {
        Pack<T> x = ((const Pack<T>*)a)[k];
        const Pack<T> y = ((const Pack<T>*)b)[k];
#pragma unroll
        for (int u = 0; u < Pack<T>::V; ++u)
            x.v[u] = Ty<T>::down(binary_float<C>(op, Ty<T>::up(x.v[u]), Ty<T>::up(y.v[u])));
        ((Pack<T>*)out)[k] = x;
    }
    FOR_EACH(j, n - packs * Pack<T>::V) {
        const i64 i = packs * Pack<T>::V + j;
        out[i] = Ty<T>::down(binary_float<C>(op, Ty<T>::up(a[i]), Ty<T>::up(b[i])));
    }
}

#define BINARY_PACKED(T, NAME)                                                                \
    extern "C" __global__ void binary_packed_##NAME(i64 n, int op, const T* a, const T* b,     \
                                                    T* out) {                                 \
        binary_packed<T>(n, op, a, b, out);                                                   \
    }
FOR_FLOAT_TYPES(BINARY_PACKED)

#define BINARY_INT(T, NAME)                                                                   \
    extern "C" __global__ void binary_##NAME(i64 n, int op, Shape sh, Strides as, const T* a, \
                                             Strides bs, const T* b, Strides os, T* out) {    \
        FOR_EACH(i, n) {                                                                      \
            i64 x = Ty<T>::up(a[offset_of(sh, as, i)]);                                       \
            i64 y = Ty<T>::up(b[offset_of(sh, bs, i)]);                                       \
            out[offset_of(sh, os, i)] = Ty<T>::down(binary_int(op, x, y));                    \
        }                                                                                     \
    }
BINARY_INT(i64, i64)
BINARY_INT(i32, i32)
BINARY_INT(u8, u8)
// Bool: add/maximum are `or`, mul/minimum are `and` (the host rejects the other ops).
BINARY_INT(boolean, bool)

template <typename C>
__device__ __forceinline__ bool compare(int op, C a, C b) {
    switch (op) {
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    case CMP_GE: return a >= b;
    case CMP_EQ: return a == b;
    case CMP_NE: return a != b;
    case CMP_AND: return (a != (C)0) && (b != (C)0);
    case CMP_OR: return (a != (C)0) || (b != (C)0);
    case CMP_XOR: return (a != (C)0) != (b != (C)0);
    }
    return false;
}

#define CMP(T, NAME)                                                                          \
    extern "C" __global__ void cmp_##NAME(i64 n, int op, Shape sh, Strides as, const T* a,    \
                                          Strides bs, const T* b, boolean* out) {             \
        typedef Ty<T>::C C;                                                                   \
        FOR_EACH(i, n) {                                                                      \
            C x = Ty<T>::up(a[offset_of(sh, as, i)]);                                         \
            C y = Ty<T>::up(b[offset_of(sh, bs, i)]);                                         \
            out[i].x = compare<C>(op, x, y);                                                  \
        }                                                                                     \
    }
FOR_ALL_TYPES(CMP)

#define WHERE(T, NAME)                                                                        \
    extern "C" __global__ void where_##NAME(i64 n, Shape sh, Strides cs, const boolean* c,    \
                                            Strides ts, const T* t, Strides fs, const T* f,   \
                                            T* out) {                                         \
        FOR_EACH(i, n) {                                                                      \
            out[i] = c[offset_of(sh, cs, i)].x ? t[offset_of(sh, ts, i)]                      \
                                               : f[offset_of(sh, fs, i)];                     \
        }                                                                                     \
    }
FOR_ALL_TYPES(WHERE)

// A batch of transposes: dst (B, R, C) contiguous from src element (b, r, c) at
// src[b * sb + r + c * sc], i.e. r unit-stride in the source. Each block moves a 32 x 32
// tile through shared memory so that both its reads (along r) and its writes (along c) are
// coalesced; the generic copy reads one of the two with a stride, a sector per element.
// Block (32, 8); grid (ceil(C / 32), ceil(R / 32), B). The padding column keeps the tile's
// column reads free of bank conflicts.
#define TILE 32
template <typename T>
__device__ __forceinline__ void copy_transposed(i64 R, i64 C, i64 sb, i64 sc, const T* src,
                                                T* dst) {
    __shared__ T tile[TILE][TILE + 1];
    const i64 b = blockIdx.z, r0 = (i64)blockIdx.y * TILE, c0 = (i64)blockIdx.x * TILE;
    src += b * sb;
    dst += b * R * C;
    for (int k = threadIdx.y; k < TILE; k += blockDim.y) {
        const i64 r = r0 + threadIdx.x, c = c0 + k;
        if (r < R && c < C) tile[k][threadIdx.x] = src[r + c * sc];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < TILE; k += blockDim.y) {
        const i64 r = r0 + k, c = c0 + threadIdx.x;
        if (r < R && c < C) dst[r * C + c] = tile[threadIdx.x][k];
    }
}

#define COPY_TRANSPOSED(T, NAME)                                                              \
    extern "C" __global__ void copy_transposed_##NAME(i64 R, i64 C, i64 sb, i64 sc,           \
                                                      const T* src, T* dst) {                 \
        copy_transposed<T>(R, C, sb, sc, src, dst);                                           \
    }
FOR_ALL_TYPES(COPY_TRANSPOSED)

#define COPY(T, NAME)                                                                         \
    extern "C" __global__ void copy_##NAME(i64 n, Shape sh, Strides ss, const T* src,         \
                                           Strides ds, T* dst) {                              \
        FOR_EACH(i, n) { dst[offset_of(sh, ds, i)] = src[offset_of(sh, ss, i)]; }             \
    }
FOR_ALL_TYPES(COPY)

#define FILL(T, NAME)                                                                         \
    extern "C" __global__ void fill_##NAME(i64 n, Shape sh, Strides ds, T* dst, double v) {   \
        T x = Ty<T>::from_d(v);                                                               \
        FOR_EACH(i, n) { dst[offset_of(sh, ds, i)] = x; }                                     \
    }
FOR_ALL_TYPES(FILL)

// arange: element i is start + i * step, computed in double and converted as fill converts.
#define ARANGE(T, NAME)                                                                       \
    extern "C" __global__ void arange_##NAME(i64 n, double start, double step, T* dst) {     \
        FOR_EACH(i, n) { dst[i] = Ty<T>::from_d(start + (double)i * step); }                  \
    }
FOR_ALL_TYPES(ARANGE)

// cast_<from>_<to>: row-major output, converted through double with Rust's `as` rules.
#define CAST(S, SN, D, DN)                                                                    \
    extern "C" __global__ void cast_##SN##_##DN(i64 n, Shape sh, Strides ss, const S* src,    \
                                                D* dst) {                                     \
        FOR_EACH(i, n) { dst[i] = Ty<D>::from_d(Ty<S>::to_d(src[offset_of(sh, ss, i)])); }    \
    }
#define CAST_FROM(S, SN)                                                                      \
    CAST(S, SN, float, f32) CAST(S, SN, double, f64) CAST(S, SN, f16, f16)                    \
    CAST(S, SN, bf16, bf16) CAST(S, SN, i64, i64) CAST(S, SN, i32, i32) CAST(S, SN, u8, u8) \
    CAST(S, SN, boolean, bool)
FOR_ALL_TYPES(CAST_FROM)
