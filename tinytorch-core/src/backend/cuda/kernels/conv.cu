// im2col / col2im of a 2-D convolution (the CPU backend's ConvGeometry, same layouts): the
// column matrix is (C*kh*kw, N*OH*OW), row r = (c, i, j) tap, column = (n, oy, ox).

struct Geometry {
    i64 batch, channels, h, w, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow;
};

// One thread per column-matrix entry; zero where the window reaches into the padding.
#define IM2COL(T, NAME)                                                                       \
    extern "C" __global__ void im2col_##NAME(i64 total, Geometry g, i64 off, i64 sn, i64 sc,  \
                                             i64 sy, i64 sx, const T* in, T* cols) {          \
        const i64 ncols = g.batch * g.oh * g.ow;                                              \
        FOR_EACH(e, total) {                                                                  \
            i64 r = e / ncols, col = e % ncols;                                               \
            i64 c = r / (g.kh * g.kw), i = (r / g.kw) % g.kh, j = r % g.kw;                   \
            i64 b = col / (g.oh * g.ow), oy = (col / g.ow) % g.oh, ox = col % g.ow;           \
            i64 y = oy * g.sh - g.ph + i * g.dh, x = ox * g.sw - g.pw + j * g.dw;             \
            T v = Ty<T>::from_d(0.0);                                                         \
            if (y >= 0 && y < g.h && x >= 0 && x < g.w) v = in[off + b * sn + c * sc + y * sy + x * sx]; \
            cols[e] = v;                                                                      \
        }                                                                                     \
    }
FOR_ALL_TYPES(IM2COL)

// col2im as a gather: each input element sums the column entries taken from it, so no
// atomics are needed and the summation order is fixed.
#define COL2IM(T, NAME)                                                                       \
    extern "C" __global__ void col2im_##NAME(i64 total, Geometry g, i64 off, i64 srow,        \
                                             i64 scol, const T* cols, T* out) {               \
        typedef Ty<T>::C A;                                                                   \
        FOR_EACH(e, total) {                                                                  \
            i64 x = e % g.w, y = (e / g.w) % g.h, c = (e / (g.w * g.h)) % g.channels;         \
            i64 b = e / (g.w * g.h * g.channels);                                             \
            A acc = 0;                                                                        \
            for (i64 i = 0; i < g.kh; ++i) {                                                  \
                i64 ty = y + g.ph - i * g.dh;                                                 \
                if (ty < 0 || ty % g.sh != 0) continue;                                       \
                i64 oy = ty / g.sh;                                                           \
                if (oy >= g.oh) continue;                                                     \
                for (i64 j = 0; j < g.kw; ++j) {                                              \
                    i64 tx = x + g.pw - j * g.dw;                                             \
                    if (tx < 0 || tx % g.sw != 0) continue;                                   \
                    i64 ox = tx / g.sw;                                                       \
                    if (ox >= g.ow) continue;                                                 \
                    i64 r = (c * g.kh + i) * g.kw + j, col = (b * g.oh + oy) * g.ow + ox;     \
                    acc += Ty<T>::up(cols[off + r * srow + col * scol]);                      \
                }                                                                             \
            }                                                                                 \
            out[e] = Ty<T>::down(acc);                                                        \
        }                                                                                     \
    }
FOR_FLOAT_TYPES(COL2IM)
