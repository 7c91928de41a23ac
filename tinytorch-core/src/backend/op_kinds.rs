//! The primitive operations that every backend implements, as plain enums. The `ops` layer
//! turns user-facing operations into these; a backend turns these into kernels.

/// Elementwise functions of one tensor. Parameters are carried as f64.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    Neg,
    Abs,
    Sign,
    Exp,
    Log,
    Log2,
    Log1p,
    Expm1,
    Sqrt,
    Rsqrt,
    Square,
    Reciprocal,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Relu,
    /// `x if x > 0 else slope * x`
    LeakyRelu(f64),
    /// `x if x > 0 else alpha * (exp(x) - 1)`
    Elu(f64),
    /// Exact GELU: `x * Φ(x)`
    Gelu,
    /// GELU's tanh approximation.
    GeluTanh,
    Silu,
    /// `log(1 + exp(beta x)) / beta`, linear above `threshold`.
    Softplus {
        beta: f64,
        threshold: f64,
    },
    Erf,
    /// `1 - erf(x)`, computed without cancellation.
    Erfc,
    /// The inverse of `erf`.
    Erfinv,
    /// `log|Gamma(x)|`.
    Lgamma,
    /// `d/dx log Gamma(x)`.
    Digamma,
    /// `d^2/dx^2 log Gamma(x)` (`polygamma(1, x)`).
    Trigamma,
    /// The modified Bessel functions of the first kind `I0`, `I1` and their exponentially
    /// scaled forms `I0(x) e^-|x|`, `I1(x) e^-|x|`.
    I0,
    I0e,
    I1,
    I1e,
    Floor,
    Ceil,
    /// Round half to even, as `torch.round`.
    Round,
    /// `x + s`
    AddScalar(f64),
    /// `x * s`
    MulScalar(f64),
    /// `x ^ s`
    PowScalar(f64),
    /// `s ^ x`
    ScalarPow(f64),
    /// `min(max(x, lo), hi)`; either bound may be absent.
    Clamp(Option<f64>, Option<f64>),
}

/// Elementwise functions of two tensors of the same dtype; the output has that dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
}

/// Elementwise predicates of two tensors of the same dtype; the output is bool.
/// The logical ones treat non-zero as true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Xor,
}

/// Reductions over a set of dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    /// True when every element is non-zero (output bool).
    All,
    /// True when any element is non-zero (output bool).
    Any,
}

/// Reductions along one dimension that return an index (output i64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgReduceOp {
    ArgMax,
    ArgMin,
}

/// Inclusive scans along one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanOp {
    CumSum,
    CumProd,
    /// Suffix sums, `out[i] = sum_{j >= i} x[j]` (the backward of `CumSum`).
    RevCumSum,
}
