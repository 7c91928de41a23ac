// Elementwise kernels: unary, binary, comparisons, where, casts, strided copies and fills.
// Every operand is addressed through its own Strides over one common Shape, so views
// (transposed, sliced, broadcast with stride 0) never need a copy first. The op codes are
// the ones in backend/cuda/elementwise.rs.

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
    case 0: return -x;
    case 1: return m_abs(x);
    case 2: return x > zero ? one : (x < zero ? -one : zero);
    case 3: return m_exp(x);
    case 4: return m_log(x);
    case 5: return m_log2(x);
    case 6: return m_log1p(x);
    case 7: return m_expm1(x);
    case 8: return m_sqrt(x);
    case 9: return one / m_sqrt(x);
    case 10: return x * x;
    case 11: return one / x;
    case 12: return m_sin(x);
    case 13: return m_cos(x);
    case 14: return m_tan(x);
    case 15: return m_tanh(x);
    case 16: return one / (one + m_exp(-x));
    case 17: return x < zero ? zero : x;  // keeps NaN, as torch.relu
    case 18: return x > zero ? x : x * p0;
    case 19: return x > zero ? x : p0 * m_expm1(x);
    case 20: return x * (C)0.5 * (one + m_erf(x * (C)0.70710678118654752440));
    case 21: {
        C inner = (C)0.79788456080286535588 * (x + (C)0.044715 * x * x * x);
        return (C)0.5 * x * (one + m_tanh(inner));
    }
    case 22: return x / (one + m_exp(-x));
    case 23: {
        C bx = x * p0;
        return bx > p1 ? x : m_log1p(m_exp(bx)) / p0;
    }
    case 24: return m_erf(x);
    case 25: return m_floor(x);
    case 26: return m_ceil(x);
    case 27: return m_rint(x);
    case 28: return x + p0;
    case 29: return x * p0;
    case 30: return m_pow(x, p0);
    case 31: return m_pow(p0, x);
    // min(max(x, lo), hi) in this order: with lo > hi every element becomes hi (PyTorch).
    case 32: {
        if (is_nan(x)) return x;
        C y = x < p0 ? p0 : x;
        return y > p1 ? p1 : y;
    }
    case 33: return p0;  // a NaN clamp bound: every element becomes NaN
    case 34: return (C)erfc((double)x);
    case 35: return (C)erfinv((double)x);
    case 36: return (C)lgamma((double)x);
    case 37: return (C)sp_digamma((double)x);
    case 38: return (C)sp_trigamma((double)x);
    case 39: return (C)(sp_bessel_i_scaled(0, fabs((double)x)) * exp(fabs((double)x)));
    case 40: return (C)sp_bessel_i_scaled(0, fabs((double)x));
    case 41: return (C)copysign(sp_bessel_i_scaled(1, fabs((double)x)) * exp(fabs((double)x)), (double)x);
    case 42: return (C)copysign(sp_bessel_i_scaled(1, fabs((double)x)), (double)x);
    }
    return x;
}

__device__ __forceinline__ i64 unary_int(int op, i64 x, i64 p0, i64 p1) {
    switch (op) {
    case 0: return wsub(0, x);
    case 1: return x < 0 ? wsub(0, x) : x;
    case 2: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case 10: return wmul(x, x);
    case 17: return x < 0 ? 0 : x;
    case 28: return wadd(x, p0);
    case 29: return wmul(x, p0);
    case 30: return wpow(x, p0);
    case 31: return x < 0 ? 0 : wpow(p0, x);
    case 32: {  // min(max(x, lo), hi): hi everywhere when lo > hi, as for floats
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
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return m_pow(a, b);
    case 5: return (is_nan(a) || is_nan(b)) ? a + b : (a > b ? a : b);
    case 6: return (is_nan(a) || is_nan(b)) ? a + b : (a < b ? a : b);
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
    case 0: return wadd(a, b);
    case 1: return wsub(a, b);
    case 2: return wmul(a, b);
    case 3: return floor_div(a, b);
    case 4: return b < 0 ? 0 : wpow(a, b);
    case 5: return a > b ? a : b;
    case 6: return a < b ? a : b;
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
    case 0: return a < b;
    case 1: return a <= b;
    case 2: return a > b;
    case 3: return a >= b;
    case 4: return a == b;
    case 5: return a != b;
    case 6: return (a != (C)0) && (b != (C)0);
    case 7: return (a != (C)0) || (b != (C)0);
    case 8: return (a != (C)0) != (b != (C)0);
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
