// One fused Adam/AdamW step over n elements of contiguous, same-dtype buffers: the CPU
// kernel's maths (backend/cpu/adam.rs), one element per thread in a grid-stride loop. The
// launch side is backend/cuda/adam.rs. The scalars come in f64, as the optimizer holds them,
// and are rounded to the element type first, as on the CPU.
//
//   x  = p * (1 - lr * wd)           (mode 2: AdamW's decoupled decay)
//   d  = ±g (+ wd * p)               (maximize; mode 1: Adam's L2 term)
//   m  = beta1 * m + (1 - beta1) * d
//   v  = beta2 * v + (1 - beta2) * d * d
//   s  = v, or vmax = max(vmax, v) with AMSGrad (vmax non-null)
//   p  = x + step_size * m / (sqrt(s) * inv_bias_correction2_sqrt + eps)
//
// mode: 0 no weight decay, 1 L2 (Adam), 2 decoupled (AdamW).

template <typename T>
__device__ void adam_impl(i64 n, int maximize, int mode, double decay, double l2, double beta1,
                          double one_minus_beta1, double beta2, double one_minus_beta2,
                          double inv_bias_correction2_sqrt, double eps, double step_size, T* p,
                          const T* g, T* m, T* v, T* vmax) {
    const T t_decay = (T)decay, t_l2 = (T)l2, t_beta1 = (T)beta1, t_omb1 = (T)one_minus_beta1,
            t_beta2 = (T)beta2, t_omb2 = (T)one_minus_beta2,
            t_inv = (T)inv_bias_correction2_sqrt, t_eps = (T)eps, t_step = (T)step_size;
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        T x = p[i];
        T d = maximize ? -g[i] : g[i];
        if (mode == ADAM_DECOUPLED) {
            x = x * t_decay;
        } else if (mode == ADAM_L2) {
            d = d + x * t_l2;
        }
        const T mm = m[i] * t_beta1 + t_omb1 * d;
        const T vv = v[i] * t_beta2 + t_omb2 * (d * d);
        m[i] = mm;
        v[i] = vv;
        T second = vv;
        if (vmax != nullptr) {
            // A NaN on either side wins, as the CPU's maximum.
            const T a = vmax[i];
            second = (a != a) ? a : ((vv != vv || vv > a) ? vv : a);
            vmax[i] = second;
        }
        p[i] = x + t_step * (mm / (sqrt(second) * t_inv + t_eps));
    }
}

#define ADAM(T, NAME)                                                                          \
    extern "C" __global__ void adam_##NAME(i64 n, int maximize, int mode, double decay,        \
                                           double l2, double beta1, double one_minus_beta1,    \
                                           double beta2, double one_minus_beta2,               \
                                           double inv_bias_correction2_sqrt, double eps,       \
                                           double step_size, T* p, const T* g, T* m, T* v,     \
                                           T* vmax) {                                          \
        adam_impl<T>(n, maximize, mode, decay, l2, beta1, one_minus_beta1, beta2,              \
                     one_minus_beta2, inv_bias_correction2_sqrt, eps, step_size, p, g, m, v,   \
                     vmax);                                                                    \
    }
ADAM(float, f32)
ADAM(double, f64)
