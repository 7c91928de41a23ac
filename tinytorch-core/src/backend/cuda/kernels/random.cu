// Random tensors drawn on the device: element i of a draw with seed s is a function of
// (s, i) alone (Philox4x32-10, as PyTorch's CUDA generator), so a draw needs nothing from
// the host but its seed and never depends on the launch's shape. The host's generator
// gives each draw a fresh seed. Launch side: backend/cuda/random.rs.

struct Philox { unsigned int w[4]; };

__device__ __forceinline__ Philox philox(u64 seed, u64 index) {
    unsigned int c0 = (unsigned int)index, c1 = (unsigned int)(index >> 32), c2 = 0, c3 = 0;
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        const unsigned int lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
        const unsigned int lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    Philox r;
    r.w[0] = c0; r.w[1] = c1; r.w[2] = c2; r.w[3] = c3;
    return r;
}

// Uniform in [0, 1) with `bits` random mantissa bits (exact in a type of that precision, so
// rounding never gives 1.0), from two 32-bit words.
__device__ __forceinline__ double uniform_bits(unsigned int hi, unsigned int lo, int bits) {
    const u64 r = (((u64)hi << 32) | lo) >> (64 - bits);
    return (double)r / (double)(1ull << bits);
}

// Draw kinds: RANDOM_UNIFORM (with `bits`), RANDOM_NORMAL (Box-Muller), RANDOM_BERNOULLI
// (1 with probability probs[i], or `p` for every element when probs is null; a probability
// outside [0, 1] raises the error flag).
template <typename T>
__device__ __forceinline__ void random_draw(i64 n, int kind, u64 seed, int bits, double p,
                                            const T* probs, T* out, int* err) {
    FOR_EACH(i, n) {
        const Philox r = philox(seed, (u64)i);
        double v;
        if (kind == RANDOM_UNIFORM) {
            v = uniform_bits(r.w[0], r.w[1], bits);
        } else if (kind == RANDOM_NORMAL) {
            const double u1 = uniform_bits(r.w[0], r.w[1], 53), u2 = uniform_bits(r.w[2], r.w[3], 53);
            v = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586476925 * u2);
        } else {
            const double q = probs != nullptr ? Ty<T>::to_d(probs[i]) : p;
            if (!(q >= 0.0 && q <= 1.0)) atomicExch(err, 1);
            v = uniform_bits(r.w[0], r.w[1], 53) < q ? 1.0 : 0.0;
        }
        out[i] = Ty<T>::from_d(v);
    }
}

#define RANDOM(T, NAME)                                                                       \
    extern "C" __global__ void random_##NAME(i64 n, int kind, u64 seed, int bits, double p,   \
                                             const T* probs, T* out, int* err) {              \
        random_draw<T>(n, kind, seed, bits, p, probs, out, err);                              \
    }
FOR_FLOAT_TYPES(RANDOM)
