// Fused scaled-dot-product attention, FlashAttention-2 style: the L x S score matrix is never
// stored. The forward walks key tiles with an online softmax and saves each query row's
// log-sum-exp L; the backward recomputes each tile's probabilities P = exp(S - L) from it.
// The launch side is backend/cuda/attention.rs; the maths, the masking rules and the dropout
// mask are those of the CPU kernel (backend/cpu/attention.rs), so the two agree.
//
// Every operand is a (batch..., rows, cols) view: the batch dims (one shape `bs` for all
// operands, which the op layer broadcast to the same batch shape) give problem b's base
// offset, then element (r, c) is at base + r * row + c * col. Outputs are contiguous.
//
// One thread block per (problem, tile); tiles live in dynamically sized shared memory, in
// the compute type A (float for f32/f16/bf16, double for f64). The host picks square tiles
// (BQ = BK) as large as fit in 48 KiB, so any head dim that fits a tile of one row works.
// Shared-memory rows that threads of one warp read at different rows of (K and V in the score
// dot products) are padded by one element, so those reads fall in different banks.

struct AttnParams {
    i64 bh, l, s, e, ev;  // problems, queries, keys, query/key features, value features
    i64 bq, bk;           // tile rows (queries) and tile columns (keys) of this launch
    double scale;         // multiplies q . k
    double dropout;       // probability of dropping a weight (0: no dropout)
    u64 seed;             // dropout's counter-based stream
    i64 causal;           // 1: query i sees keys j <= i (top-left aligned, as torch's tril)
    i64 has_mask;         // 1: an additive mask is given
};

struct AttnOperand {
    Strides batch;  // strides of the batch dims (over the Shape `bs`) and the view's offset
    i64 row;        // stride between rows
    i64 col;        // stride between columns (features; L x S positions for the mask)
};

#define ATTN_WARP 32

// Dynamic shared memory, declared as double so that it is aligned for every compute type.
extern __shared__ double attn_smem[];

__device__ __forceinline__ i64 attn_min(i64 a, i64 b) { return a < b ? a : b; }

// Number of the first `s` keys that query i may see: all, or j <= i under the causal rule.
__device__ __forceinline__ i64 attn_visible(const AttnParams& p, i64 i) {
    return p.causal ? attn_min(i + 1, p.s) : p.s;
}

// SplitMix64's finaliser: the CPU kernel's `splitmix`, bit for bit.
__device__ __forceinline__ u64 attn_splitmix(u64 x) {
    u64 z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Dropout's factor for weight (b, i, j): 0 or 1 / (1 - p). The same counter, hash and
// comparison (in double) as the CPU kernel's `keep`, so one seed drops the same weights on
// both devices and the backward regenerates the forward's mask.
__device__ __forceinline__ double attn_keep(const AttnParams& p, i64 b, i64 i, i64 j) {
    if (p.dropout == 0.0) return 1.0;
    u64 n = ((u64)b * (u64)p.l + (u64)i) * (u64)p.s + (u64)j;
    // The top 53 bits as a double in [0, 1): exact, as on the CPU.
    double u = (double)(attn_splitmix(p.seed ^ attn_splitmix(n)) >> 11) / 9007199254740992.0;
    return u < p.dropout ? 0.0 : 1.0 / (1.0 - p.dropout);
}

// Butterfly reductions: every lane of the warp ends with the result.
template <typename A>
__device__ __forceinline__ A attn_warp_max(A v) {
    for (int o = ATTN_WARP / 2; o > 0; o /= 2) {
        A w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}
template <typename A>
__device__ __forceinline__ A attn_warp_sum(A v) {
    for (int o = ATTN_WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Element (r, c) of problem b's view, whose base offset is `base`, in the compute type.
template <typename T>
__device__ __forceinline__ typename Ty<T>::C attn_load(const T* x, const AttnOperand& o, i64 base,
                                                       i64 r, i64 c) {
    return Ty<T>::up(x[base + r * o.row + c * o.col]);
}

// Rows [r0, r0 + rows) of problem b's view into a shared tile of `tile_rows` rows of `n`
// elements with row stride `ld`; rows past `rows` are zero, so stray reads add nothing.
template <typename T, typename A>
__device__ __forceinline__ void attn_load_tile(A* dst, i64 tile_rows, i64 n, i64 ld, const T* x,
                                               const AttnOperand& o, i64 base, i64 r0, i64 rows) {
    for (i64 t = threadIdx.x; t < tile_rows * n; t += blockDim.x) {
        i64 r = t / n, c = t % n;
        dst[r * ld + c] = r < rows ? attn_load(x, o, base, r0 + r, c) : (A)0;
    }
}

// q_i . k_j * scale + mask[i, j] from the shared rows of query i and key j. The caller has
// checked that the causal rule lets query i see key j.
template <typename T, typename A>
__device__ __forceinline__ A attn_score(const AttnParams& p, const A* qrow, const A* krow,
                                        const T* mask, const AttnOperand& mo, i64 mbase, i64 i,
                                        i64 j) {
    A dot = 0;
    for (i64 e = 0; e < p.e; ++e) dot += qrow[e] * krow[e];
    A s = dot * (A)p.scale;
    if (p.has_mask) s += attn_load(mask, mo, mbase, i, j);
    return s;
}

// The backward's two values for query i and key j of problem b (both 0 where the key is
// masked out): the weight after dropout P' = P * keep, with P = exp(score - L_i), and
// dS = P * (keep * dP' - D_i), the gradient of the (scaled, masked) score, where
// dP' = dO_i . v_j is the gradient of P' and D_i = dO_i . O_i.
template <typename T, typename A>
__device__ __forceinline__ void attn_grad_entry(const AttnParams& p, const A* qrow, const A* krow,
                                                const A* grow, const A* vrow, A lse_i, A delta_i,
                                                const T* mask, const AttnOperand& mo, i64 mbase,
                                                i64 b, i64 i, i64 j, A* pv, A* dsv) {
    const A ninf = Lowest<A>::value();
    A s = attn_score<T, A>(p, qrow, krow, mask, mo, mbase, i, j);
    A prob = (s == ninf || lse_i == ninf) ? (A)0 : m_exp(s - lse_i);
    A dp = 0;
    for (i64 e = 0; e < p.ev; ++e) dp += grow[e] * vrow[e];
    A keep = p.dropout > 0.0 ? (A)attn_keep(p, b, i, j) : (A)1;
    *dsv = prob * (keep * dp - delta_i);
    *pv = prob * keep;
}

// ---- forward -------------------------------------------------------------------------------
// Block: problem b, queries i0 .. i0 + BQ. Shared (in A): Q tile [BQ][E], K tile [BK][E + 1],
// V tile [BK][EV], scores / weights [BQ][BK], output accumulator [BQ][EV], and per row the
// running max, the running sum of exp(score - max) and this tile's rescale factor alpha.
// (backend/cuda/attention.rs's `shared_elems` mirrors this layout.)
// out: (BH, L, EV) contiguous; lse: (BH, L), -inf for a row that sees no key (output 0).
template <typename T>
__device__ void attn_fwd_impl(const AttnParams& p, const Shape& bs, const AttnOperand& qo,
                              const AttnOperand& ko, const AttnOperand& vo, const AttnOperand& mo,
                              const T* q, const T* k, const T* v, const T* mask, T* out,
                              typename Ty<T>::C* lse) {
    typedef typename Ty<T>::C A;
    const A ninf = Lowest<A>::value();
    const i64 E = p.e, EV = p.ev, BQ = p.bq, BK = p.bk, LDK = E + 1;
    A* qs = (A*)attn_smem;
    A* ks = qs + BQ * E;
    A* vs = ks + BK * LDK;
    A* sc = vs + BK * EV;
    A* acc = sc + BQ * BK;
    A* row_max = acc + BQ * EV;
    A* row_sum = row_max + BQ;
    A* alpha = row_sum + BQ;

    const i64 tiles = (p.l + BQ - 1) / BQ;
    const i64 b = blockIdx.x / tiles, i0 = (blockIdx.x % tiles) * BQ;
    const i64 rows = attn_min(BQ, p.l - i0);
    const i64 qb = offset_of(bs, qo.batch, b), kb = offset_of(bs, ko.batch, b),
              vb = offset_of(bs, vo.batch, b), mb = p.has_mask ? offset_of(bs, mo.batch, b) : 0;
    const int lane = threadIdx.x % ATTN_WARP, warp = threadIdx.x / ATTN_WARP,
              warps = blockDim.x / ATTN_WARP;

    attn_load_tile<T, A>(qs, BQ, E, E, q, qo, qb, i0, rows);
    for (i64 t = threadIdx.x; t < BQ * EV; t += blockDim.x) acc[t] = 0;
    for (i64 r = threadIdx.x; r < BQ; r += blockDim.x) {
        row_max[r] = ninf;
        row_sum[r] = 0;
        alpha[r] = 0;
    }
    __syncthreads();

    // Key tiles past the last row's visible keys hold nothing for this block.
    const i64 kend = attn_visible(p, i0 + rows - 1);
    for (i64 j0 = 0; j0 < kend; j0 += BK) {
        const i64 cols = attn_min(BK, p.s - j0);
        attn_load_tile<T, A>(ks, BK, E, LDK, k, ko, kb, j0, cols);
        attn_load_tile<T, A>(vs, BK, EV, EV, v, vo, vb, j0, cols);
        __syncthreads();

        // Scores; -inf for masked keys, keys past S and rows past L.
        for (i64 t = threadIdx.x; t < BQ * BK; t += blockDim.x) {
            i64 r = t / BK, c = t % BK, i = i0 + r, j = j0 + c;
            A s = ninf;
            if (r < rows && c < cols && j < attn_visible(p, i))
                s = attn_score<T, A>(p, qs + r * E, ks + c * LDK, mask, mo, mb, i, j);
            sc[t] = s;
        }
        __syncthreads();

        // Online softmax, one warp per row (the loop bound is the same for the warp's lanes,
        // so every lane takes part in the shuffles): new running max, the tile's weights
        // exp(s - max) (times dropout's factor; the sum counts them before dropout, as the
        // softmax's denominator must), and the factor alpha that rescales the older terms.
        for (i64 r = warp; r < rows; r += warps) {
            A* srow = sc + r * BK;
            A mx = ninf;
            for (i64 c = lane; c < cols; c += ATTN_WARP) mx = srow[c] > mx ? srow[c] : mx;
            mx = attn_warp_max(mx);
            const A m_old = row_max[r];
            const A m_new = m_old > mx ? m_old : mx;
            A sum = 0;
            for (i64 c = lane; c < cols; c += ATTN_WARP) {
                A x = srow[c];
                // exp(-inf - -inf) is NaN: a masked score (even in a row masked so far) is 0.
                A pr = x == ninf ? (A)0 : m_exp(x - m_new);
                sum += pr;
                if (p.dropout > 0.0) pr *= (A)attn_keep(p, b, i0 + r, j0 + c);
                srow[c] = pr;
            }
            sum = attn_warp_sum(sum);
            if (lane == 0) {
                A a = m_old == ninf ? (A)0 : m_exp(m_old - m_new);
                alpha[r] = a;
                row_sum[r] = row_sum[r] * a + sum;
                row_max[r] = m_new;
            }
        }
        __syncthreads();

        // acc = acc * alpha + weights @ V (columns past `cols` have weight 0 and V rows 0).
        for (i64 t = threadIdx.x; t < BQ * EV; t += blockDim.x) {
            i64 r = t / EV, e = t % EV;
            if (r >= rows) continue;
            A s = 0;
            for (i64 c = 0; c < cols; ++c) s += sc[r * BK + c] * vs[c * EV + e];
            acc[t] = acc[t] * alpha[r] + s;
        }
        // The next tile overwrites K, V and the scores.
        __syncthreads();
    }

    for (i64 t = threadIdx.x; t < rows * EV; t += blockDim.x) {
        A l = row_sum[t / EV];
        out[(b * p.l + i0) * EV + t] = Ty<T>::down(l > (A)0 ? acc[t] / l : (A)0);
    }
    for (i64 r = threadIdx.x; r < rows; r += blockDim.x) {
        A l = row_sum[r];
        lse[b * p.l + i0 + r] = l > (A)0 ? row_max[r] + m_log(l) : ninf;
    }
}

// ---- backward ------------------------------------------------------------------------------
// D_i = dO_i . O_i for each of the BH * L rows, one warp per row. delta: (BH, L).
template <typename T>
__device__ void attn_bwd_delta_impl(const AttnParams& p, const Shape& bs, const AttnOperand& oo,
                                    const AttnOperand& go, const T* o, const T* g,
                                    typename Ty<T>::C* delta) {
    typedef typename Ty<T>::C A;
    const int lane = threadIdx.x % ATTN_WARP;
    const i64 per_block = blockDim.x / ATTN_WARP;
    const i64 n = p.bh * p.l;
    for (i64 row = (i64)blockIdx.x * per_block + threadIdx.x / ATTN_WARP; row < n;
         row += (i64)gridDim.x * per_block) {
        const i64 b = row / p.l, i = row % p.l;
        const i64 ob = offset_of(bs, oo.batch, b), gb = offset_of(bs, go.batch, b);
        A s = 0;
        for (i64 e = lane; e < p.ev; e += ATTN_WARP)
            s += attn_load(o, oo, ob, i, e) * attn_load(g, go, gb, i, e);
        s = attn_warp_sum(s);
        if (lane == 0) delta[row] = s;
    }
}

// dK and dV. Block: problem b, keys j0 .. j0 + BK, looping over the query tiles that can see
// them (under the causal rule, from the tile holding query j0). Shared (in A): K [BK][E + 1],
// V [BK][EV + 1], dK accumulator [BK][E], dV accumulator [BK][EV], Q tile [BQ][E], dO tile
// [BQ][EV], P' and dS [BQ][BK] each, L and D [BQ] each.
// dV += P'^T dO ; dK += scale * dS^T Q. dk: (BH, S, E), dv: (BH, S, EV), contiguous.
template <typename T>
__device__ void attn_bwd_kv_impl(const AttnParams& p, const Shape& bs, const AttnOperand& qo,
                                 const AttnOperand& ko, const AttnOperand& vo,
                                 const AttnOperand& go, const AttnOperand& mo, const T* q,
                                 const T* k, const T* v, const T* g, const T* mask,
                                 const typename Ty<T>::C* lse, const typename Ty<T>::C* delta,
                                 T* dk, T* dv) {
    typedef typename Ty<T>::C A;
    const i64 E = p.e, EV = p.ev, BQ = p.bq, BK = p.bk, LDK = E + 1, LDV = EV + 1;
    A* ks = (A*)attn_smem;
    A* vs = ks + BK * LDK;
    A* dk_acc = vs + BK * LDV;
    A* dv_acc = dk_acc + BK * E;
    A* qs = dv_acc + BK * EV;
    A* gs = qs + BQ * E;
    A* pt = gs + BQ * EV;
    A* dst = pt + BQ * BK;
    A* lse_s = dst + BQ * BK;
    A* delta_s = lse_s + BQ;

    const i64 tiles = (p.s + BK - 1) / BK;
    const i64 b = blockIdx.x / tiles, j0 = (blockIdx.x % tiles) * BK;
    const i64 cols = attn_min(BK, p.s - j0);
    const i64 qb = offset_of(bs, qo.batch, b), kb = offset_of(bs, ko.batch, b),
              vb = offset_of(bs, vo.batch, b), gb = offset_of(bs, go.batch, b),
              mb = p.has_mask ? offset_of(bs, mo.batch, b) : 0;

    attn_load_tile<T, A>(ks, BK, E, LDK, k, ko, kb, j0, cols);
    attn_load_tile<T, A>(vs, BK, EV, LDV, v, vo, vb, j0, cols);
    for (i64 t = threadIdx.x; t < BK * E; t += blockDim.x) dk_acc[t] = 0;
    for (i64 t = threadIdx.x; t < BK * EV; t += blockDim.x) dv_acc[t] = 0;
    __syncthreads();

    // Query rows before j0 see none of these keys under the causal rule.
    const i64 first = p.causal ? (j0 / BQ) * BQ : 0;
    for (i64 i0 = first; i0 < p.l; i0 += BQ) {
        const i64 rows = attn_min(BQ, p.l - i0);
        attn_load_tile<T, A>(qs, BQ, E, E, q, qo, qb, i0, rows);
        attn_load_tile<T, A>(gs, BQ, EV, EV, g, go, gb, i0, rows);
        for (i64 r = threadIdx.x; r < BQ; r += blockDim.x) {
            lse_s[r] = r < rows ? lse[b * p.l + i0 + r] : (A)0;
            delta_s[r] = r < rows ? delta[b * p.l + i0 + r] : (A)0;
        }
        __syncthreads();

        for (i64 t = threadIdx.x; t < BQ * BK; t += blockDim.x) {
            i64 r = t / BK, c = t % BK, i = i0 + r, j = j0 + c;
            A pv = 0, dsv = 0;
            if (r < rows && c < cols && j < attn_visible(p, i))
                attn_grad_entry<T, A>(p, qs + r * E, ks + c * LDK, gs + r * EV, vs + c * LDV,
                                      lse_s[r], delta_s[r], mask, mo, mb, b, i, j, &pv, &dsv);
            pt[t] = pv;
            dst[t] = dsv;
        }
        __syncthreads();

        for (i64 t = threadIdx.x; t < BK * EV; t += blockDim.x) {
            i64 c = t / EV, e = t % EV;
            if (c >= cols) continue;
            A s = 0;
            for (i64 r = 0; r < rows; ++r) s += pt[r * BK + c] * gs[r * EV + e];
            dv_acc[t] += s;
        }
        for (i64 t = threadIdx.x; t < BK * E; t += blockDim.x) {
            i64 c = t / E, e = t % E;
            if (c >= cols) continue;
            A s = 0;
            for (i64 r = 0; r < rows; ++r) s += dst[r * BK + c] * qs[r * E + e];
            dk_acc[t] += s * (A)p.scale;
        }
        // The next query tile overwrites Q, dO, P' and dS.
        __syncthreads();
    }

    for (i64 t = threadIdx.x; t < cols * E; t += blockDim.x)
        dk[(b * p.s + j0) * E + t] = Ty<T>::down(dk_acc[t]);
    for (i64 t = threadIdx.x; t < cols * EV; t += blockDim.x)
        dv[(b * p.s + j0) * EV + t] = Ty<T>::down(dv_acc[t]);
}

// dQ, in a pass of its own over the query tiles (no atomics: deterministic, and exact for
// every dtype). Block: problem b, queries i0 .. i0 + BQ, looping over the visible key tiles.
// Shared (in A): Q [BQ][E], dO [BQ][EV], dQ accumulator [BQ][E], K [BK][E + 1],
// V [BK][EV + 1], dS [BQ][BK], L and D [BQ] each.
// dQ += scale * dS K. dq: (BH, L, E) contiguous.
template <typename T>
__device__ void attn_bwd_q_impl(const AttnParams& p, const Shape& bs, const AttnOperand& qo,
                                const AttnOperand& ko, const AttnOperand& vo,
                                const AttnOperand& go, const AttnOperand& mo, const T* q,
                                const T* k, const T* v, const T* g, const T* mask,
                                const typename Ty<T>::C* lse, const typename Ty<T>::C* delta,
                                T* dq) {
    typedef typename Ty<T>::C A;
    const i64 E = p.e, EV = p.ev, BQ = p.bq, BK = p.bk, LDK = E + 1, LDV = EV + 1;
    A* qs = (A*)attn_smem;
    A* gs = qs + BQ * E;
    A* dq_acc = gs + BQ * EV;
    A* ks = dq_acc + BQ * E;
    A* vs = ks + BK * LDK;
    A* dst = vs + BK * LDV;
    A* lse_s = dst + BQ * BK;
    A* delta_s = lse_s + BQ;

    const i64 tiles = (p.l + BQ - 1) / BQ;
    const i64 b = blockIdx.x / tiles, i0 = (blockIdx.x % tiles) * BQ;
    const i64 rows = attn_min(BQ, p.l - i0);
    const i64 qb = offset_of(bs, qo.batch, b), kb = offset_of(bs, ko.batch, b),
              vb = offset_of(bs, vo.batch, b), gb = offset_of(bs, go.batch, b),
              mb = p.has_mask ? offset_of(bs, mo.batch, b) : 0;

    attn_load_tile<T, A>(qs, BQ, E, E, q, qo, qb, i0, rows);
    attn_load_tile<T, A>(gs, BQ, EV, EV, g, go, gb, i0, rows);
    for (i64 t = threadIdx.x; t < BQ * E; t += blockDim.x) dq_acc[t] = 0;
    for (i64 r = threadIdx.x; r < BQ; r += blockDim.x) {
        lse_s[r] = r < rows ? lse[b * p.l + i0 + r] : (A)0;
        delta_s[r] = r < rows ? delta[b * p.l + i0 + r] : (A)0;
    }
    __syncthreads();

    const i64 kend = attn_visible(p, i0 + rows - 1);
    for (i64 j0 = 0; j0 < kend; j0 += BK) {
        const i64 cols = attn_min(BK, p.s - j0);
        attn_load_tile<T, A>(ks, BK, E, LDK, k, ko, kb, j0, cols);
        attn_load_tile<T, A>(vs, BK, EV, LDV, v, vo, vb, j0, cols);
        __syncthreads();

        for (i64 t = threadIdx.x; t < BQ * BK; t += blockDim.x) {
            i64 r = t / BK, c = t % BK, i = i0 + r, j = j0 + c;
            A pv = 0, dsv = 0;
            if (r < rows && c < cols && j < attn_visible(p, i))
                attn_grad_entry<T, A>(p, qs + r * E, ks + c * LDK, gs + r * EV, vs + c * LDV,
                                      lse_s[r], delta_s[r], mask, mo, mb, b, i, j, &pv, &dsv);
            dst[t] = dsv;
        }
        __syncthreads();

        for (i64 t = threadIdx.x; t < BQ * E; t += blockDim.x) {
            i64 r = t / E, e = t % E;
            if (r >= rows) continue;
            A s = 0;
            for (i64 c = 0; c < cols; ++c) s += dst[r * BK + c] * ks[c * LDK + e];
            dq_acc[t] += s * (A)p.scale;
        }
        // The next key tile overwrites K, V and dS.
        __syncthreads();
    }

    for (i64 t = threadIdx.x; t < rows * E; t += blockDim.x)
        dq[(b * p.l + i0) * E + t] = Ty<T>::down(dq_acc[t]);
}

#define ATTENTION(T, NAME)                                                                     \
    extern "C" __global__ void attn_fwd_##NAME(AttnParams p, Shape bs, AttnOperand qo,         \
                                               AttnOperand ko, AttnOperand vo, AttnOperand mo, \
                                               const T* q, const T* k, const T* v,             \
                                               const T* mask, T* out, Ty<T>::C* lse) {         \
        attn_fwd_impl<T>(p, bs, qo, ko, vo, mo, q, k, v, mask, out, lse);                      \
    }                                                                                          \
    extern "C" __global__ void attn_bwd_delta_##NAME(AttnParams p, Shape bs, AttnOperand oo,   \
                                                     AttnOperand go, const T* o, const T* g,   \
                                                     Ty<T>::C* delta) {                        \
        attn_bwd_delta_impl<T>(p, bs, oo, go, o, g, delta);                                    \
    }                                                                                          \
    extern "C" __global__ void attn_bwd_kv_##NAME(                                             \
        AttnParams p, Shape bs, AttnOperand qo, AttnOperand ko, AttnOperand vo, AttnOperand go, \
        AttnOperand mo, const T* q, const T* k, const T* v, const T* g, const T* mask,         \
        const Ty<T>::C* lse, const Ty<T>::C* delta, T* dk, T* dv) {                            \
        attn_bwd_kv_impl<T>(p, bs, qo, ko, vo, go, mo, q, k, v, g, mask, lse, delta, dk, dv);  \
    }                                                                                          \
    extern "C" __global__ void attn_bwd_q_##NAME(                                              \
        AttnParams p, Shape bs, AttnOperand qo, AttnOperand ko, AttnOperand vo, AttnOperand go, \
        AttnOperand mo, const T* q, const T* k, const T* v, const T* g, const T* mask,         \
        const Ty<T>::C* lse, const Ty<T>::C* delta, T* dq) {                                   \
        attn_bwd_q_impl<T>(p, bs, qo, ko, vo, go, mo, q, k, v, g, mask, lse, delta, dq);       \
    }
FOR_FLOAT_TYPES(ATTENTION)
