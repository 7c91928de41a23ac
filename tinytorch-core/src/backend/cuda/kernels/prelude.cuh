// Shared by every TinyTorch kernel source: element types, conversions and strided indexing.
// NVRTC compiles these sources with no headers at all (the CUDA half-precision headers are
// not part of NVRTC), so f16/bf16 are plain 16-bit structs converted with PTX `cvt`.

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned char u8;
typedef int i32;

#define MAX_DIMS 8

// The common shape of the operands of an elementwise kernel, after the host merged the
// dimensions that are contiguous in every operand.
struct Shape {
    i64 ndim;
    i64 size[MAX_DIMS];
};

// Where one operand's elements sit: offset and per-dimension strides, in elements.
struct Strides {
    i64 offset;
    i64 s[MAX_DIMS];
};

// Storage offset of the i-th element (row-major over `sh`) of an operand with strides `st`.
// The loop runs over the constant MAX_DIMS, fully unrolled, so that every `size[d]`/`s[d]`
// is read at a constant index: a loop bounded by `ndim` indexes them at run time, which
// makes each thread copy the structs (kernel parameters) into local memory first, hundreds
// of bytes written per element.
__device__ __forceinline__ i64 offset_of(const Shape& sh, const Strides& st, i64 i) {
    if (sh.ndim == 1) return st.offset + i * st.s[0];
    i64 off = st.offset;
#pragma unroll
    for (int d = MAX_DIMS - 1; d >= 0; --d) {
        if (d < sh.ndim) {
            i64 n = sh.size[d];
            off += (i % n) * st.s[d];
            i /= n;
        }
    }
    return off;
}

// Grid-stride loop over `n` items.
#define FOR_EACH(i, n) \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)

// Items each thread of a sweeping kernel (FOR_EACH_SWEEP) takes per sweep: independent
// loads in flight, which a memory-bound kernel needs to come near the bandwidth of an
// H100/H200 (one 4-byte load per thread at a time reached 40% of an H200's). launch.rs's
// UNROLL must match.
#define UNROLL 4

// Grid-stride sweeps over `n` items, each thread taking items `base + u * step` for
// u < UNROLL (a warp's accesses stay coalesced); the body skips items past `n`. Launched with
// `grid_sweeps(n)`.
#define FOR_EACH_SWEEP(base, step, n)                                                   \
    const i64 step = (i64)blockDim.x * gridDim.x;                                        \
    for (i64 base = (i64)blockIdx.x * blockDim.x + threadIdx.x; base < (n); base += UNROLL * step)

struct f16 { unsigned short x; };
struct bf16 { unsigned short x; };
struct boolean { u8 x; };

__device__ __forceinline__ float f16_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short float_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float bf16_to_float(unsigned short b) {
    return __uint_as_float(((unsigned int)b) << 16);
}
// Round to nearest even; NaN stays a quiet NaN.
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

// Ty<T>: the compute type C of a stored type T (f16/bf16 compute in float, integers in i64
// with wrapping arithmetic), and the conversions up to C and down from C. `to_d`/`from_d` go
// through double for dtype casts, with Rust's `as` rules (saturation, NaN -> 0) for integers.
template <typename T> struct Ty;

template <> struct Ty<float> {
    typedef float C;
    static __device__ __forceinline__ float up(float v) { return v; }
    static __device__ __forceinline__ float down(float v) { return v; }
    static __device__ __forceinline__ double to_d(float v) { return v; }
    static __device__ __forceinline__ float from_d(double v) { return (float)v; }
};
template <> struct Ty<double> {
    typedef double C;
    static __device__ __forceinline__ double up(double v) { return v; }
    static __device__ __forceinline__ double down(double v) { return v; }
    static __device__ __forceinline__ double to_d(double v) { return v; }
    static __device__ __forceinline__ double from_d(double v) { return v; }
};
template <> struct Ty<f16> {
    typedef float C;
    static __device__ __forceinline__ float up(f16 v) { return f16_to_float(v.x); }
    static __device__ __forceinline__ f16 down(float v) { f16 r; r.x = float_to_f16(v); return r; }
    static __device__ __forceinline__ double to_d(f16 v) { return f16_to_float(v.x); }
    // Through float, as PyTorch (c10::Half has no double constructor): rounds twice.
    static __device__ __forceinline__ f16 from_d(double v) { return down((float)v); }
};
template <> struct Ty<bf16> {
    typedef float C;
    static __device__ __forceinline__ float up(bf16 v) { return bf16_to_float(v.x); }
    static __device__ __forceinline__ bf16 down(float v) { bf16 r; r.x = float_to_bf16(v); return r; }
    static __device__ __forceinline__ double to_d(bf16 v) { return bf16_to_float(v.x); }
    static __device__ __forceinline__ bf16 from_d(double v) { return down((float)v); }
};

__device__ __forceinline__ i64 sat_i64(double v) {
    if (v != v) return 0;
    if (v >= 9.2233720368547758e18) return 0x7fffffffffffffffLL;
    if (v <= -9.2233720368547758e18) return (i64)0x8000000000000000ULL;
    return (i64)v;
}

template <> struct Ty<i64> {
    typedef i64 C;
    static __device__ __forceinline__ i64 up(i64 v) { return v; }
    static __device__ __forceinline__ i64 down(i64 v) { return v; }
    static __device__ __forceinline__ double to_d(i64 v) { return (double)v; }
    static __device__ __forceinline__ i64 from_d(double v) { return sat_i64(v); }
};
template <> struct Ty<i32> {
    typedef i64 C;
    static __device__ __forceinline__ i64 up(i32 v) { return v; }
    // Wraps modulo 2^32, so i64 arithmetic followed by `down` equals wrapping i32 arithmetic.
    static __device__ __forceinline__ i32 down(i64 v) { return (i32)(unsigned int)(u64)v; }
    static __device__ __forceinline__ double to_d(i32 v) { return (double)v; }
    static __device__ __forceinline__ i32 from_d(double v) { return down(sat_i64(v)); }
};
template <> struct Ty<u8> {
    typedef i64 C;
    static __device__ __forceinline__ i64 up(u8 v) { return v; }
    // Wraps modulo 256, so i64 arithmetic followed by `down` equals wrapping u8 arithmetic.
    static __device__ __forceinline__ u8 down(i64 v) { return (u8)(u64)v; }
    static __device__ __forceinline__ double to_d(u8 v) { return (double)v; }
    static __device__ __forceinline__ u8 from_d(double v) { return (u8)(u64)sat_i64(v); }
};
template <> struct Ty<boolean> {
    typedef i64 C;
    static __device__ __forceinline__ i64 up(boolean v) { return v.x != 0; }
    static __device__ __forceinline__ boolean down(i64 v) { boolean r; r.x = v != 0; return r; }
    static __device__ __forceinline__ double to_d(boolean v) { return v.x != 0; }
    static __device__ __forceinline__ boolean from_d(double v) { boolean r; r.x = v != 0.0; return r; }
};

// Math overloads for the two float compute types.
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_log2(float x) { return log2f(x); }
__device__ __forceinline__ double m_log2(double x) { return log2(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double m_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_tan(float x) { return tanf(x); }
__device__ __forceinline__ double m_tan(double x) { return tan(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
__device__ __forceinline__ float m_floor(float x) { return floorf(x); }
__device__ __forceinline__ double m_floor(double x) { return floor(x); }
__device__ __forceinline__ float m_ceil(float x) { return ceilf(x); }
__device__ __forceinline__ double m_ceil(double x) { return ceil(x); }
__device__ __forceinline__ float m_rint(float x) { return rintf(x); }
__device__ __forceinline__ double m_rint(double x) { return rint(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
template <typename C> __device__ __forceinline__ bool is_nan(C x) { return x != x; }

// The identities of max and min in each accumulator type.
template <typename A> struct Lowest;
template <typename A> struct Highest;
template <> struct Lowest<float> { static __device__ __forceinline__ float value() { return __int_as_float(0xff800000); } };
template <> struct Highest<float> { static __device__ __forceinline__ float value() { return __int_as_float(0x7f800000); } };
template <> struct Lowest<double> { static __device__ __forceinline__ double value() { return __longlong_as_double(0xfff0000000000000LL); } };
template <> struct Highest<double> { static __device__ __forceinline__ double value() { return __longlong_as_double(0x7ff0000000000000LL); } };
template <> struct Lowest<i64> { static __device__ __forceinline__ i64 value() { return (i64)0x8000000000000000ULL; } };
template <> struct Highest<i64> { static __device__ __forceinline__ i64 value() { return 0x7fffffffffffffffLL; } };

// Wrapping integer arithmetic (signed overflow is undefined in C++, so go through u64).
__device__ __forceinline__ i64 wadd(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ i64 wsub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ i64 wmul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
__device__ __forceinline__ i64 wpow(i64 base, i64 e) {
    u64 r = 1, b = (u64)base;
    while (e > 0) { if (e & 1) r *= b; b *= b; e >>= 1; }
    return (i64)r;
}

// Atomic add for every float storage type. f16/bf16 go through a CAS on the aligned 32-bit
// word holding them, which works on every architecture.
__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(i64* p, i64 v) { atomicAdd((u64*)p, (u64)v); }
template <typename H>
__device__ __forceinline__ void atomic_add_16(H* p, float v) {
    unsigned int* word = (unsigned int*)((size_t)p & ~(size_t)3);
    unsigned int shift = ((size_t)p & 2) ? 16 : 0;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        H h; h.x = (unsigned short)((assumed >> shift) & 0xffffu);
        H s = Ty<H>::down(Ty<H>::up(h) + v);
        unsigned int repl = (assumed & ~(0xffffu << shift)) | ((unsigned int)s.x << shift);
        old = atomicCAS(word, assumed, repl);
    } while (assumed != old);
}
__device__ __forceinline__ void atomic_add(f16* p, float v) { atomic_add_16(p, v); }
__device__ __forceinline__ void atomic_add(bf16* p, float v) { atomic_add_16(p, v); }
__device__ __forceinline__ void atomic_add(u8* p, i64 v) {
    unsigned int* word = (unsigned int*)((size_t)p & ~(size_t)3);
    unsigned int shift = ((size_t)p & 3) * 8;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        unsigned int b = ((assumed >> shift) + (unsigned int)v) & 0xffu;
        old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (b << shift));
    } while (assumed != old);
}

__device__ __forceinline__ void atomic_add(i32* p, i64 v) { atomicAdd(p, (i32)(unsigned int)(u64)v); }

// Bool accumulation is logical or.
__device__ __forceinline__ void atomic_add(boolean* p, i64 v) {
    if (v == 0) return;
    unsigned int* word = (unsigned int*)((size_t)p & ~(size_t)3);
    atomicOr(word, 1u << (((size_t)p & 3) * 8));
}

// Instantiate `KERNEL(T, suffix)` for every dtype, or for the float ones.
#define FOR_FLOAT_TYPES(KERNEL) KERNEL(float, f32) KERNEL(double, f64) KERNEL(f16, f16) KERNEL(bf16, bf16)
#define FOR_ALL_TYPES(KERNEL) FOR_FLOAT_TYPES(KERNEL) KERNEL(i64, i64) KERNEL(i32, i32) KERNEL(u8, u8) KERNEL(boolean, bool)
