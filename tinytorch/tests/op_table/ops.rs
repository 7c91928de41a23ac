//! The op table: one record per TinyTorch op that the PyTorch fixtures exercise. The name is
//! the `op` of the fixture cases (see `scripts/fixtures/gen_fixtures.py`), `run` calls the TinyTorch
//! method with the case's inputs and keyword arguments.
//!
//! To add an op: add its cases to `scripts/fixtures/gen_fixtures.py` (inputs, domain, dtypes, variants
//! with broadcasting, 0-d and empty shapes), regenerate the fixture file, and add a record
//! below whose `dtypes` are exactly the dtypes of its cases (the consistency test checks this).
//!
//! Families land in `main` one at a time; fixture cases whose op has no record here are
//! reported as pending by `op_table::every_fixture_op_is_in_the_table`, not failed.

// Shared by the op-table and random-case test binaries; each uses a part of it.
#![allow(dead_code)]

use super::fixture::Kwargs;
use tinytorch::nn::functional::{
    batch_norm, cross_entropy, interpolate, layer_norm, InterpolateMode,
};
use tinytorch::nn::Reduction;
use tinytorch::ops::ConvPadding;
use tinytorch::ops::PadMode;
use tinytorch::{DType, Result, Tensor};

/// Runs an op on the case's inputs; multi-output ops return every output in order.
pub type RunFn = fn(&[Tensor], &Kwargs) -> Result<Vec<Tensor>>;

/// One op of the table.
pub struct OpInfo {
    /// The fixture op name.
    pub name: &'static str,
    /// Number of tensor inputs (0: any number, e.g. `cat`).
    pub arity: usize,
    /// The dtypes of the cases it must pass (a case's dtype is its name's last part).
    pub dtypes: &'static [DType],
    /// Whether gradients are compared with PyTorch's and gradchecked.
    pub grad: bool,
    /// Results may depend on the order of a floating-point accumulation (sums, products),
    /// so non-contiguous inputs are held to the tolerance rather than to bit equality.
    pub order_sensitive: bool,
    pub run: RunFn,
}

use DType::{Bool, BF16, F16, F32, F64, I64, U8};

pub const ALL: &[DType] = &[Bool, U8, I64, F16, BF16, F32, F64];
pub const NO_BOOL: &[DType] = &[U8, I64, F16, BF16, F32, F64];
pub const FLOATS: &[DType] = &[F16, BF16, F32, F64];

fn one(t: Result<Tensor>) -> Result<Vec<Tensor>> {
    t.map(|t| vec![t])
}

macro_rules! op {
    ($name:expr, $arity:expr, $dtypes:expr, grad, |$x:ident, $k:ident| $body:expr) => {
        op!(@make $name, $arity, $dtypes, true, false, |$x, $k| $body)
    };
    ($name:expr, $arity:expr, $dtypes:expr, grad_ordered, |$x:ident, $k:ident| $body:expr) => {
        op!(@make $name, $arity, $dtypes, true, true, |$x, $k| $body)
    };
    ($name:expr, $arity:expr, $dtypes:expr, nograd, |$x:ident, $k:ident| $body:expr) => {
        op!(@make $name, $arity, $dtypes, false, false, |$x, $k| $body)
    };
    (@make $name:expr, $arity:expr, $dtypes:expr, $grad:expr, $ordered:expr, |$x:ident, $k:ident| $body:expr) => {
        OpInfo {
            name: $name,
            arity: $arity,
            dtypes: $dtypes,
            grad: $grad,
            order_sensitive: $ordered,
            run: {
                #[allow(unused_variables)]
                fn run($x: &[Tensor], $k: &Kwargs) -> Result<Vec<Tensor>> {
                    $body
                }
                run
            },
        }
    };
}

/// The records of several ops of one form, each named as its method and sharing its dtypes
/// and gradient kind: `binary` ops compute `x[0].method(&x[1])`, `scalar` ops
/// `x[0].method(k.scalar("value")?)`.
macro_rules! ops_of {
    (binary $dtypes:expr, $grad:ident: $($method:ident),+) => {
        vec![$(op!(stringify!($method), 2, $dtypes, $grad, |x, k| one(x[0].$method(&x[1])))),+]
    };
    (scalar $dtypes:expr, $grad:ident: $($method:ident),+) => {
        vec![$(op!(stringify!($method), 1, $dtypes, $grad, |x, k| one(
            x[0].$method(k.scalar("value")?)
        ))),+]
    };
}

/// The records of `groups`, one after another.
fn concat<const N: usize>(groups: [Vec<OpInfo>; N]) -> Vec<OpInfo> {
    groups.into_iter().flatten().collect()
}

/// Every op of the table.
pub fn table() -> Vec<OpInfo> {
    let mut t = Vec::new();
    t.extend(views());
    t.extend(binary());
    t.extend(compare());
    t.extend(reductions());
    t.extend(unary());
    t.extend(index_shape());
    t.extend(matmul());
    t.extend(inplace());
    t.extend(attention());
    t.extend(nn_ops());
    t.extend(nn_layers());
    t
}

fn views() -> Vec<OpInfo> {
    vec![
        op!(
            "view",
            1,
            &[F32, F64, F16, BF16, I64, U8, Bool],
            grad,
            |x, k| one(x[0].view(&k.ints("shape")?))
        ),
        op!("reshape", 1, &[F32, F64, I64], grad, |x, k| one(
            x[0].reshape(&k.ints("shape")?)
        )),
        op!("permute", 1, &[F32, F64, I64, Bool], grad, |x, k| one(
            x[0].permute(&k.ints("dims")?)
        )),
        op!("transpose", 1, &[F32, F64, U8], grad, |x, k| one(
            x[0].transpose(k.i("d0")?, k.i("d1")?)
        )),
        op!("t", 1, &[F32, F64], grad, |x, k| one(x[0].t())),
        op!("squeeze", 1, &[F32, F64], grad, |x, k| one(x[0].squeeze())),
        op!("squeeze_dim", 1, &[F32, F64], grad, |x, k| one(
            x[0].squeeze_dim(k.i("dim")?)
        )),
        op!("unsqueeze", 1, &[F32, F64, I64], grad, |x, k| one(
            x[0].unsqueeze(k.i("dim")?)
        )),
        op!("flatten", 1, &[F32, F64], grad, |x, k| one(
            x[0].flatten(k.i("start")?, k.i("end")?)
        )),
        op!("unflatten", 1, &[F32, F64], grad, |x, k| one(
            x[0].unflatten(k.i("dim")?, &k.ints("sizes")?)
        )),
        op!("expand", 1, &[F32, F64, I64], grad, |x, k| one(
            x[0].expand(&k.ints("shape")?)
        )),
        op!("broadcast_to", 1, &[F32, F64], grad, |x, k| one(
            x[0].broadcast_to(&k.usizes("shape")?)
        )),
        op!("narrow", 1, &[F32, F64, I64], grad, |x, k| one(
            x[0].narrow(k.i("dim")?, k.i("start")?, k.u("length")?)
        )),
        op!("slice", 1, &[F32, F64, Bool], grad, |x, k| {
            one(x[0].slice(
                k.i("dim")?,
                k.opt_i("start")?,
                k.opt_i("end")?,
                k.u("step")?,
            ))
        }),
        op!("select", 1, &[F32, F64, I64], grad, |x, k| one(
            x[0].select(k.i("dim")?, k.i("index")?)
        )),
        op!("chunk", 1, &[F32, F64], grad, |x, k| x[0]
            .chunk(k.u("chunks")?, k.i("dim")?)),
        op!("split", 1, &[F32, F64], grad, |x, k| x[0]
            .split(k.u("size")?, k.i("dim")?)),
        op!("split_sizes", 1, &[F32, F64], grad, |x, k| x[0]
            .split_sizes(&k.usizes("sizes")?, k.i("dim")?)),
        op!("contiguous_copy", 1, ALL, grad, |x, k| one(
            x[0].contiguous_copy()
        )),
        op!("to_dtype_bool", 1, ALL, grad, |x, k| one(
            x[0].to_dtype(Bool)
        )),
        op!("to_dtype_u8", 1, ALL, grad, |x, k| one(x[0].to_dtype(U8))),
        op!("to_dtype_i64", 1, ALL, grad, |x, k| one(x[0].to_dtype(I64))),
        op!("to_dtype_f16", 1, ALL, grad, |x, k| one(x[0].to_dtype(F16))),
        op!("to_dtype_bf16", 1, ALL, grad, |x, k| one(
            x[0].to_dtype(BF16)
        )),
        op!("to_dtype_f32", 1, ALL, grad, |x, k| one(x[0].to_dtype(F32))),
        op!("to_dtype_f64", 1, ALL, grad, |x, k| one(x[0].to_dtype(F64))),
    ]
}

fn binary() -> Vec<OpInfo> {
    concat([
        ops_of!(binary ALL, grad: add, mul, div, maximum, minimum),
        ops_of!(binary NO_BOOL, grad: sub, pow),
        ops_of!(scalar NO_BOOL, grad: add_scalar, sub_scalar, rsub_scalar, mul_scalar),
        ops_of!(scalar NO_BOOL, grad: div_scalar, rdiv_scalar, pow_scalar),
        ops_of!(scalar &[F32, F64, F16, BF16, I64], grad: rpow_scalar),
    ])
}

fn compare() -> Vec<OpInfo> {
    concat([
        ops_of!(binary ALL, nograd: lt, le, gt, ge, eq, ne, logical_and, logical_or, logical_xor),
        ops_of!(scalar ALL, nograd: lt_scalar, le_scalar, gt_scalar),
        ops_of!(scalar ALL, nograd: ge_scalar, eq_scalar, ne_scalar),
        vec![
            op!(
                "logical_not",
                1,
                ALL,
                nograd,
                |x, k| one(x[0].logical_not())
            ),
            op!("where", 3, ALL, grad, |x, k| one(Tensor::where_cond(
                &x[0], &x[1], &x[2]
            ))),
            op!("masked_fill", 2, ALL, grad, |x, k| one(
                x[0].masked_fill(&x[1], k.scalar("value")?)
            )),
        ],
    ])
}

const RED: &[DType] = &[F16, BF16, F32, F64, I64, U8];

fn reductions() -> Vec<OpInfo> {
    vec![
        op!("sum", 1, ALL, grad_ordered, |x, k| one(
            x[0].sum(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!("sum_all", 1, ALL, grad_ordered, |x, k| one(x[0].sum_all())),
        op!("mean", 1, FLOATS, grad_ordered, |x, k| one(
            x[0].mean(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!("mean_all", 1, FLOATS, grad_ordered, |x, k| one(
            x[0].mean_all()
        )),
        op!("prod", 1, UNARY, grad_ordered, |x, k| one(
            x[0].prod(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!("max_all", 1, RED, grad, |x, k| one(x[0].max_all())),
        op!("min_all", 1, RED, grad, |x, k| one(x[0].min_all())),
        op!("amax", 1, RED, grad, |x, k| one(
            x[0].amax(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!("amin", 1, RED, grad, |x, k| one(
            x[0].amin(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!("max_dim", 1, UNARY, grad, |x, k| pair(
            x[0].max_dim(k.i("dim")?, k.b("keepdim")?)
        )),
        op!("min_dim", 1, UNARY, grad, |x, k| pair(
            x[0].min_dim(k.i("dim")?, k.b("keepdim")?)
        )),
        op!("argmax", 1, UNARY, nograd, |x, k| one(
            x[0].argmax(k.opt_i("dim")?, k.b("keepdim")?)
        )),
        op!("argmin", 1, UNARY, nograd, |x, k| one(
            x[0].argmin(k.opt_i("dim")?, k.b("keepdim")?)
        )),
        op!("var", 1, FLOATS, grad_ordered, |x, k| {
            one(x[0].var(&k.ints("dims")?, k.f("correction")?, k.b("keepdim")?))
        }),
        op!("std", 1, FLOATS, grad_ordered, |x, k| {
            one(x[0].std(&k.ints("dims")?, k.f("correction")?, k.b("keepdim")?))
        }),
        op!("logsumexp", 1, FLOATS, grad_ordered, |x, k| one(
            x[0].logsumexp(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!("norm", 1, FLOATS, grad_ordered, |x, k| {
            one(x[0].norm(k.f("p")?, &k.ints("dims")?, k.b("keepdim")?))
        }),
        op!("all", 1, &[Bool, F32, I64], nograd, |x, k| one(x[0].all())),
        op!("any", 1, &[Bool, F32, I64], nograd, |x, k| one(x[0].any())),
        op!("all_dims", 1, &[Bool, F32], nograd, |x, k| one(
            x[0].all_dims(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!("any_dims", 1, &[Bool, F32], nograd, |x, k| one(
            x[0].any_dims(&k.ints("dims")?, k.b("keepdim")?)
        )),
        op!(
            "cumsum",
            1,
            &[F16, BF16, F32, F64, I64, Bool],
            grad_ordered,
            |x, k| one(x[0].cumsum(k.i("dim")?))
        ),
        op!("cumprod", 1, UNARY, grad_ordered, |x, k| one(
            x[0].cumprod(k.i("dim")?)
        )),
        op!("softmax", 1, FLOATS, grad_ordered, |x, k| one(
            x[0].softmax(k.i("dim")?)
        )),
        op!("log_softmax", 1, FLOATS, grad_ordered, |x, k| one(
            x[0].log_softmax(k.i("dim")?)
        )),
    ]
}

/// Float functions and integer-preserving ones both run on i64 (see `gen_fixtures.py`).
const UNARY: &[DType] = &[F16, BF16, F32, F64, I64];

fn unary() -> Vec<OpInfo> {
    let mut ops = vec![
        op!("neg", 1, UNARY, grad, |x, k| one(x[0].neg())),
        op!("abs", 1, UNARY, grad, |x, k| one(x[0].abs())),
        op!("sign", 1, UNARY, grad, |x, k| one(x[0].sign())),
        op!("exp", 1, UNARY, grad, |x, k| one(x[0].exp())),
        op!("log", 1, UNARY, grad, |x, k| one(x[0].log())),
        op!("log2", 1, UNARY, grad, |x, k| one(x[0].log2())),
        op!("log1p", 1, UNARY, grad, |x, k| one(x[0].log1p())),
        op!("expm1", 1, UNARY, grad, |x, k| one(x[0].expm1())),
        op!("sqrt", 1, UNARY, grad, |x, k| one(x[0].sqrt())),
        op!("rsqrt", 1, UNARY, grad, |x, k| one(x[0].rsqrt())),
        op!("square", 1, UNARY, grad, |x, k| one(x[0].square())),
        op!("reciprocal", 1, UNARY, grad, |x, k| one(x[0].reciprocal())),
        op!("sin", 1, UNARY, grad, |x, k| one(x[0].sin())),
        op!("cos", 1, UNARY, grad, |x, k| one(x[0].cos())),
        op!("tan", 1, UNARY, grad, |x, k| one(x[0].tan())),
        op!("tanh", 1, UNARY, grad, |x, k| one(x[0].tanh())),
        op!("sigmoid", 1, UNARY, grad, |x, k| one(x[0].sigmoid())),
        op!("relu", 1, UNARY, grad, |x, k| one(x[0].relu())),
        op!("leaky_relu", 1, FLOATS, grad, |x, k| one(
            x[0].leaky_relu(k.f("slope")?)
        )),
        op!("elu", 1, FLOATS, grad, |x, k| one(x[0].elu(k.f("alpha")?))),
        op!("gelu", 1, FLOATS, grad, |x, k| one(x[0].gelu())),
        op!("gelu_tanh", 1, FLOATS, grad, |x, k| one(x[0].gelu_tanh())),
        op!("silu", 1, FLOATS, grad, |x, k| one(x[0].silu())),
        op!("softplus", 1, FLOATS, grad, |x, k| one(
            x[0].softplus(k.f("beta")?, k.f("threshold")?)
        )),
        op!("erf", 1, UNARY, grad, |x, k| one(x[0].erf())),
        op!("floor", 1, UNARY, grad, |x, k| one(x[0].floor())),
        op!("ceil", 1, UNARY, grad, |x, k| one(x[0].ceil())),
        op!("round", 1, UNARY, grad, |x, k| one(x[0].round())),
        op!("clamp", 1, UNARY, grad, |x, k| one(
            x[0].clamp(k.opt_scalar("min")?, k.opt_scalar("max")?)
        )),
    ];
    ops.extend(ops_of!(scalar FLOATS, grad: clamp_min, clamp_max));
    ops
}

/// The inputs as the slice of references that `cat`/`stack` take.
fn refs(x: &[Tensor]) -> Vec<&Tensor> {
    x.iter().collect()
}

fn pair(r: Result<(Tensor, Tensor)>) -> Result<Vec<Tensor>> {
    r.map(|(a, b)| vec![a, b])
}

const FI: &[DType] = &[F32, F64, I64];
const SORTABLE: &[DType] = &[F32, F64, F16, BF16, I64];

fn index_shape() -> Vec<OpInfo> {
    vec![
        op!("cat", 0, ALL, grad, |x, k| one(Tensor::cat(
            &refs(x),
            k.i("dim")?
        ))),
        op!("stack", 0, ALL, grad, |x, k| one(Tensor::stack(
            &refs(x),
            k.i("dim")?
        ))),
        op!("hstack", 0, &[F32, F64], grad, |x, k| one(Tensor::hstack(
            &refs(x)
        ))),
        op!("vstack", 0, &[F32, F64], grad, |x, k| one(Tensor::vstack(
            &refs(x)
        ))),
        op!("index_select", 2, ALL, grad, |x, k| one(
            x[0].index_select(k.i("dim")?, &x[1])
        )),
        op!("gather", 2, ALL, grad, |x, k| one(
            x[0].gather(k.i("dim")?, &x[1])
        )),
        op!("scatter", 3, FI, grad, |x, k| one(x[0].scatter(
            k.i("dim")?,
            &x[1],
            &x[2]
        ))),
        op!("scatter_value", 2, &[F32, F64], grad, |x, k| {
            one(x[0].scatter_value(k.i("dim")?, &x[1], k.scalar("value")?))
        }),
        op!("scatter_add", 3, FI, grad_ordered, |x, k| one(
            x[0].scatter_add(k.i("dim")?, &x[1], &x[2])
        )),
        op!("index_add", 3, FI, grad_ordered, |x, k| one(
            x[0].index_add(k.i("dim")?, &x[1], &x[2])
        )),
        op!("masked_select", 2, ALL, grad, |x, k| one(
            x[0].masked_select(&x[1])
        )),
        op!("nonzero", 1, &[F32, I64, Bool], nograd, |x, k| one(
            x[0].nonzero()
        )),
        op!("topk", 1, SORTABLE, grad, |x, k| {
            pair(x[0].topk(k.u("k")?, k.i("dim")?, k.b("largest")?, k.b("sorted")?))
        }),
        op!("sort", 1, SORTABLE, grad, |x, k| pair(
            x[0].sort(k.i("dim")?, k.b("descending")?)
        )),
        op!("argsort", 1, FI, nograd, |x, k| one(
            x[0].argsort(k.i("dim")?, k.b("descending")?)
        )),
        op!(
            "flip",
            1,
            ALL,
            grad,
            |x, k| one(x[0].flip(&k.ints("dims")?))
        ),
        op!("roll", 1, ALL, grad, |x, k| one(
            x[0].roll(&k.ints("shifts")?, &k.ints("dims")?)
        )),
        op!("repeat", 1, ALL, grad, |x, k| one(
            x[0].repeat(&k.usizes("repeats")?)
        )),
        op!("repeat_interleave", 1, FI, grad, |x, k| {
            one(x[0].repeat_interleave(k.u("repeats")?, k.opt_i("dim")?))
        }),
        op!("pad_constant", 1, &[F32, F64], grad, |x, k| {
            one(x[0].pad(&k.ints("pads")?, PadMode::Constant(k.f("value")?)))
        }),
        op!("pad_reflect", 1, &[F32, F64], grad, |x, k| one(
            x[0].pad(&k.ints("pads")?, PadMode::Reflect)
        )),
        op!("pad_replicate", 1, &[F32, F64], grad, |x, k| one(
            x[0].pad(&k.ints("pads")?, PadMode::Replicate)
        )),
        op!("tril", 1, ALL, grad, |x, k| one(
            x[0].tril(k.i("diagonal")? as i64)
        )),
        op!("triu", 1, ALL, grad, |x, k| one(
            x[0].triu(k.i("diagonal")? as i64)
        )),
        op!("one_hot", 1, &[I64], nograd, |x, k| one(
            x[0].one_hot(k.i("num_classes")? as i64)
        )),
    ]
}

const MATMUL: &[DType] = &[F32, F64, F16, BF16, I64];

fn matmul() -> Vec<OpInfo> {
    ops_of!(binary MATMUL, grad_ordered: matmul, mm, bmm, outer, dot)
}

/// In-place ops write into their first input (a fresh tensor per run, strided in the
/// non-contiguous rerun) and return it.
fn inplace() -> Vec<OpInfo> {
    concat([
        ops_of!(binary FI, nograd: add_, sub_, mul_),
        ops_of!(binary &[F32, F64], nograd: div_),
        ops_of!(binary &[F32, F64, I64, Bool], nograd: copy_),
        ops_of!(scalar &[F32, F64], nograd: add_scalar_, mul_scalar_, fill_),
        vec![
            op!("zero_", 1, &[F32, I64], nograd, |x, k| one(x[0].zero_())),
            op!("clamp_", 1, &[F32, F64], nograd, |x, k| one(
                x[0].clamp_(k.opt_scalar("min")?, k.opt_scalar("max")?)
            )),
        ],
    ])
}

fn attention() -> Vec<OpInfo> {
    vec![
        op!("sdpa", 3, FLOATS, grad_ordered, |x, k| one(x[0]
            .scaled_dot_product_attention(
                &x[1],
                &x[2],
                None,
                0.0,
                k.b("is_causal")?,
                k.opt_f("scale")?
            ))),
        op!("sdpa_bool_mask", 4, &[F32, F64], grad_ordered, |x, k| one(
            x[0].scaled_dot_product_attention(&x[1], &x[2], Some(&x[3]), 0.0, false, None)
        )),
        op!("sdpa_float_mask", 4, &[F32, F64], grad_ordered, |x, k| one(
            x[0].scaled_dot_product_attention(&x[1], &x[2], Some(&x[3]), 0.0, false, None)
        )),
    ]
}

/// The ops of `nn.functional` and `torch.einsum` built from the ones above (views, index_select,
/// pooling windows, bmm).
fn nn_ops() -> Vec<OpInfo> {
    vec![
        op!("einsum", 0, MATMUL, grad_ordered, |x, k| one(
            Tensor::einsum(&k.s("equation")?, &refs(x))
        )),
        op!("diagonal", 1, &[F32, F64, I64, Bool], grad, |x, k| one(x
            [0]
        .diagonal(k.i("offset")?, k.i("dim1")?, k.i("dim2")?))),
        op!("max_pool1d", 1, FLOATS, grad, |x, k| {
            one(x[0].max_pool1d(
                k.u("kernel_size")?,
                k.opt_i("stride")?.map(|s| s as usize),
                k.u("padding")?,
                k.u("dilation")?,
                k.b("ceil_mode")?,
            ))
        }),
        op!("avg_pool1d", 1, &[F32, F64], grad_ordered, |x, k| {
            one(x[0].avg_pool1d(
                k.u("kernel_size")?,
                k.opt_i("stride")?.map(|s| s as usize),
                k.u("padding")?,
                k.b("count_include_pad")?,
            ))
        }),
        op!("adaptive_max_pool2d", 1, FLOATS, grad, |x, k| {
            let o = k.usizes("output_size")?;
            let size: [usize; 2] = o.try_into().map_err(|o| {
                tinytorch::Error::invalid("op_table", format!("output_size {o:?} is not a pair"))
            })?;
            one(x[0].adaptive_max_pool2d(size))
        }),
        op!("pixel_shuffle", 1, ALL, grad, |x, k| one(
            x[0].pixel_shuffle(k.u("upscale_factor")?)
        )),
        op!("pixel_unshuffle", 1, ALL, grad, |x, k| one(
            x[0].pixel_unshuffle(k.u("downscale_factor")?)
        )),
        op!("interpolate", 1, FLOATS, grad_ordered, |x, k| {
            one(interpolate(
                &x[0],
                k.opt_usizes("size")?.as_deref(),
                k.opt_floats("scale_factor")?.as_deref(),
                InterpolateMode::parse(&k.s("mode")?)?,
                k.opt_b("align_corners")?,
                k.opt_b("recompute_scale_factor")?,
            ))
        }),
    ]
}

/// A two-element size keyword (stride, padding, dilation) of a case.
fn size2(k: &Kwargs, key: &str) -> Result<[usize; 2]> {
    let v = k.usizes(key)?;
    Ok([v[0], v[1]])
}

/// The layers' ops whose cases are in `tests/fixtures/ops_nn.safetensors`
/// (`scripts/fixtures/gen_nn_op_fixtures.py`): convolution, layer and batch norm (training
/// statistics, and `batch_norm_eval` with running statistics given as kwargs, which PyTorch
/// does not differentiate), cross-entropy with class-index targets.
fn nn_layers() -> Vec<OpInfo> {
    vec![
        op!("conv2d", 3, &[F32, F64], grad_ordered, |x, k| {
            let [ph, pw] = size2(k, "padding")?;
            one(x[0].conv2d(
                &x[1],
                Some(&x[2]),
                size2(k, "stride")?,
                ConvPadding::Explicit(ph, pw),
                size2(k, "dilation")?,
                k.u("groups")?,
            ))
        }),
        op!("layer_norm", 3, &[F32, F64], grad_ordered, |x, k| one(
            layer_norm(
                &x[0],
                &k.usizes("normalized_shape")?,
                Some(&x[1]),
                Some(&x[2]),
                k.f("eps")?
            )
        )),
        op!("batch_norm", 3, &[F32, F64], grad_ordered, |x, k| one(
            batch_norm(
                &x[0],
                None,
                None,
                Some(&x[1]),
                Some(&x[2]),
                true,
                0.1,
                k.f("eps")?
            )
        )),
        op!("batch_norm_eval", 3, &[F32, F64], grad_ordered, |x, k| {
            let stat = |key: &str| -> Result<Tensor> {
                let values = k.opt_floats(key)?.unwrap_or_default();
                let dtype = match x[0].dtype() {
                    d if d.is_float() => d,
                    _ => DType::F32,
                };
                Tensor::from_vec(values.clone(), &[values.len()])?
                    .to_dtype(dtype)?
                    .to_device(x[0].device())
            };
            one(batch_norm(
                &x[0],
                Some(&stat("running_mean")?),
                Some(&stat("running_var")?),
                Some(&x[1]),
                Some(&x[2]),
                false,
                0.1,
                k.f("eps")?,
            ))
        }),
        op!("cross_entropy", 2, &[F32, F64], grad_ordered, |x, k| {
            let reduction = match k.s("reduction")?.as_str() {
                "none" => Reduction::None,
                "sum" => Reduction::Sum,
                _ => Reduction::Mean,
            };
            one(cross_entropy(
                &x[0],
                &x[1],
                None,
                k.i("ignore_index")? as i64,
                reduction,
                k.f("label_smoothing")?,
            ))
        }),
    ]
}
