// Integer batched matrix products (i64, i32, u8), which cuBLAS does not offer: one thread per
// output element, with wrapping arithmetic as the CPU backend's (and PyTorch's CPU) integer
// matmul. Operands are (batch, rows, cols) with any strides; the output is contiguous
// (batch, m, n). Integer products are rare in models (indices, counts), so this favours
// being obviously right over speed.
#define MATMUL_INT(T, NAME)                                                                   \
    extern "C" __global__ void matmul_int_##NAME(i64 batch, i64 m, i64 k, i64 n, Strides as,  \
                                                 const T* a, Strides bs, const T* b, T* out) { \
        FOR_EACH(i, batch * m * n) {                                                          \
            i64 col = i % n, row = (i / n) % m, bi = i / (m * n);                             \
            const T* pa = a + as.offset + bi * as.s[0] + row * as.s[1];                       \
            const T* pb = b + bs.offset + bi * bs.s[0] + col * bs.s[2];                       \
            i64 acc = 0;                                                                      \
            for (i64 p = 0; p < k; ++p)                                                       \
                acc = wadd(acc, wmul(Ty<T>::up(pa[p * as.s[2]]), Ty<T>::up(pb[p * bs.s[1]]))); \
            out[i] = Ty<T>::down(acc);                                                        \
        }                                                                                     \
    }
MATMUL_INT(i64, i64)
MATMUL_INT(i32, i32)
MATMUL_INT(u8, u8)
