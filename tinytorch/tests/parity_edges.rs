//! PyTorch's behaviour on the edges (issue 19): empty views at a storage offset, gradients at
//! singular points, promotion with 0-d tensors and Python-style scalars, zero-size backward,
//! and the semantics PyTorch gives softmax, masked_fill, pad and pow. Each expected value was
//! computed with torch 2.15 and is written next to the check; each test failed (or panicked)
//! before the fix it covers. The randomized differential suite (`tests/op_random.rs`) replays
//! thousands more cases of this kind.

mod common;
use common::{assert_close_slices, backward_sum, Tol};

use tinytorch::ops::PadMode;
use tinytorch::{DType, Device, Scalar, Tensor};

fn t64(data: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}
fn vals(x: &Tensor) -> Vec<f64> {
    x.to_vec_f64().unwrap()
}
fn leaf(data: &[f64], shape: &[usize]) -> Tensor {
    t64(data, shape).requires_grad_(true).unwrap()
}
fn grad(x: &Tensor) -> Vec<f64> {
    vals(&x.grad().expect("a gradient"))
}
// ---- empty views at a non-zero storage offset -----------------------------------------------

#[test]
fn empty_views_at_an_offset_copy_reshape_and_stack() {
    // x = torch.zeros(2, 0, 3); v = x.select(0, 1): shape [0, 3], storage offset 3 (PyTorch
    // strides count an empty dim as 1), past the end of an empty storage.
    let x = Tensor::zeros(&[2, 0, 3], DType::F32, Device::Cpu).unwrap();
    let v = x.select(0, 1).unwrap();
    assert_eq!(v.shape(), &[0, 3]);
    assert!(v.storage_offset() > 0);
    assert_eq!(v.contiguous().unwrap().shape(), &[0, 3]);
    assert_eq!(v.reshape(&[3, 0]).unwrap().shape(), &[3, 0]);
    assert_eq!(v.reshape(&[-1]).unwrap().shape(), &[0]);
    assert_eq!(Tensor::vstack(&[&v, &v]).unwrap().shape(), &[0, 3]);
    assert!(v.to_vec::<f32>().unwrap().is_empty());
    assert!(v.to_vec_f64().unwrap().is_empty());
    assert_eq!(v.to_dtype(DType::F64).unwrap().shape(), &[0, 3]);
    // Every dtype takes the same path.
    for dt in DType::ALL {
        let v = Tensor::zeros(&[3, 0], dt, Device::Cpu)
            .unwrap()
            .select(0, 2)
            .unwrap();
        assert_eq!(v.contiguous_copy().unwrap().numel(), 0, "{dt}");
    }
}

// ---- gradients at singular points ---------------------------------------------------------

#[test]
fn pow_gradient_is_zero_where_the_exponent_is_zero() {
    // a = [0, 0, 2, 0], b = [0, 1, 0, 2]; (a ** b).sum().backward()
    let (a, b) = (leaf(&[0., 0., 2., 0.], &[4]), leaf(&[0., 1., 0., 2.], &[4]));
    a.pow(&b).unwrap().sum_all().unwrap().backward().unwrap();
    assert_close_slices(
        &grad(&a),
        &[0.0, 1.0, 0.0, 0.0],
        Tol::scaled(1e-12),
        "grad(&a)",
    );
    assert_close_slices(
        &grad(&b),
        &[0.0, 0.0, std::f64::consts::LN_2, 0.0],
        Tol::scaled(1e-12),
        "grad(&b)",
    );
    // x ** 0 and x ** 0.0: zero gradient, also at x = 0.
    for e in [Scalar::Int(0), Scalar::Float(0.0)] {
        let x = leaf(&[0., 1.5, -2.], &[3]);
        backward_sum(x.pow_scalar(e));
        assert_close_slices(&grad(&x), &[0.0, 0.0, 0.0], Tol::scaled(1e-12), "grad(&x)");
    }
}

#[test]
fn std_gradient_is_zero_where_the_deviation_is_zero() {
    // x = [[1, 1, 1], [1, 2, 3]]; x.std(1).sum().backward()
    let x = leaf(&[1., 1., 1., 1., 2., 3.], &[2, 3]);
    backward_sum(x.std(&[1], 1.0, false));
    assert_close_slices(
        &grad(&x),
        &[0., 0., 0., -0.5, 0., 0.5],
        Tol::scaled(1e-12),
        "grad(&x)",
    );
}

#[test]
fn p_norm_gradients_over_zeros_follow_pytorch() {
    // x = [[0, 0, 0], [0, 3, -4]]; torch.linalg.vector_norm(x, p, 1).sum().backward()
    let cases: [(f64, f64, [f64; 2]); 3] = [
        (
            0.5,
            13.928203230275509,
            [2.154700538379252, -1.8660254037844386],
        ),
        (
            1.5,
            5.584250376480029,
            [0.7329564758289748, -0.8463452372482761],
        ),
        (
            3.0,
            4.497941445275415,
            [0.4448513517305356, -0.7908468475209521],
        ),
    ];
    for (p, norm, g) in cases {
        let x = leaf(&[0., 0., 0., 0., 3., -4.], &[2, 3]);
        let y = x.norm(p, &[1], false).unwrap();
        assert_close_slices(&vals(&y), &[0.0, norm], Tol::scaled(1e-12), "vals(&y)");
        y.sum_all().unwrap().backward().unwrap();
        assert_close_slices(
            &grad(&x),
            &[0., 0., 0., 0., g[0], g[1]],
            Tol::scaled(1e-12),
            "grad(&x)",
        );
    }
}

// ---- type promotion with 0-d tensors and scalars -------------------------------------------

#[test]
fn zero_dim_tensors_promote_only_across_categories() {
    let f32_2d = Tensor::ones(&[3, 4], DType::F32, Device::Cpu).unwrap();
    let f64_0d = Tensor::scalar(2.0f64);
    let i64_1d = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    let f32_0d = Tensor::scalar(0.5f32);
    let u8_1d = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    let i64_0d = Tensor::scalar(300i64);
    // torch: f32[3,4] + f64 0-d -> float32; i64[3] * f32 0-d -> float32; u8[2] + i64 0-d ->
    // uint8 (wrapping: 1 + 300 = 45).
    assert_eq!(f32_2d.add(&f64_0d).unwrap().dtype(), DType::F32);
    assert_eq!(f64_0d.add(&f32_2d).unwrap().dtype(), DType::F32);
    assert_eq!(i64_1d.mul(&f32_0d).unwrap().dtype(), DType::F32);
    let wrapped = u8_1d.add(&i64_0d).unwrap();
    assert_eq!(
        (wrapped.dtype(), vals(&wrapped)),
        (DType::U8, vec![45., 46.])
    );
    assert_eq!(f32_2d.maximum(&f64_0d).unwrap().dtype(), DType::F32);
    assert_eq!(f32_2d.minimum(&f64_0d).unwrap().dtype(), DType::F32);
    assert_eq!(f32_2d.lt(&f64_0d).unwrap().dtype(), DType::Bool);
    let cond = Tensor::from_vec(vec![true, false, true, false], &[4]).unwrap();
    assert_eq!(
        Tensor::where_cond(&cond, &f32_2d, &f64_0d).unwrap().dtype(),
        DType::F32
    );
    // Both 0-d: ordinary promotion.
    assert_eq!(f32_0d.add(&f64_0d).unwrap().dtype(), DType::F64);
    // Gradients still reach the 0-d input in its own dtype.
    let s = Tensor::scalar(2.0f64).requires_grad_(true).unwrap();
    f32_2d
        .mul(&s)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(s.grad().unwrap().dtype(), DType::F64);
    assert_eq!(vals(&s.grad().unwrap()), vec![12.0]);
}

#[test]
fn integer_tensors_and_float_scalars_promote_as_in_python() {
    let x = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    // torch: x * 2.0 -> float32 [2, 4, 6]; x * 2 -> int64; x + 0.5 -> float32
    let y = x.mul_scalar(2.0).unwrap();
    assert_eq!((y.dtype(), vals(&y)), (DType::F32, vec![2., 4., 6.]));
    assert_eq!(x.mul_scalar(2).unwrap().dtype(), DType::I64);
    assert_eq!(vals(&x.add_scalar(0.5).unwrap()), vec![1.5, 2.5, 3.5]);
    // The operators take both kinds too.
    assert_eq!((&x * 2.0).unwrap().dtype(), DType::F32);
    assert_eq!((&x * 2).unwrap().dtype(), DType::I64);
    assert_eq!((1 - &x).unwrap().to_vec::<i64>().unwrap(), vec![0, -1, -2]);
    // torch: bool + 1 -> int64, bool * True -> bool, x.eq(1.5) compares in float.
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(b.add_scalar(1).unwrap().dtype(), DType::I64);
    assert_eq!(b.mul_scalar(true).unwrap().dtype(), DType::Bool);
    assert_eq!(vals(&x.eq_scalar(1.5).unwrap()), vec![0., 0., 0.]);
    // torch.clamp(x, 0.5, 3) -> float32 [1, 2, 3]; clamp(x, 0, 2) stays int64.
    let c = x.clamp(Some(0.5), Some(3.0)).unwrap();
    assert_eq!((c.dtype(), vals(&c)), (DType::F32, vec![1., 2., 3.]));
    assert_eq!(x.clamp(Some(0), Some(2)).unwrap().dtype(), DType::I64);
    // In place, the result must fit: x.mul_(2.5) is an error, x.mul_(2) is not.
    let e = x.mul_scalar_(2.5).unwrap_err().to_string();
    assert!(e.contains("Float") && e.contains("Long"), "{e}");
    assert_eq!(vals(&x.mul_scalar_(2).unwrap()), vec![2., 4., 6.]);
    // Integer scalars convert exactly, wrapping as a cast: masked_fill(-1) in u8 is 255.
    let u = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    let m = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(vals(&u.masked_fill(&m, -1).unwrap()), vec![255., 2.]);
    // torch: tensor([1, 2]) ** -1 is an error; ** -1.0 is float.
    assert!(x.pow_scalar(-1).is_err());
    assert_eq!(x.pow_scalar(-1.0).unwrap().dtype(), DType::F32);
}

#[test]
fn bool_subtraction_is_refused_as_in_pytorch() {
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    for r in [b.sub(&b), b.sub_scalar(1), b.rsub_scalar(1), b.pow(&b)] {
        assert!(r.is_err());
    }
    let e = b.sub(&b).unwrap_err().to_string();
    assert!(e.contains("sub") && e.contains("bool"), "{e}");
}

// ---- zero-size backward --------------------------------------------------------------------

#[test]
fn batched_matmul_backward_with_an_empty_inner_or_outer_dim() {
    for (ash, bsh) in [([2, 3, 0], [0, 4]), ([2, 3, 4], [4, 0])] {
        let a = Tensor::zeros(&ash, DType::F64, Device::Cpu)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let b = Tensor::zeros(&bsh, DType::F64, Device::Cpu)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let y = a.matmul(&b).unwrap();
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(a.grad().unwrap().shape(), &ash);
        assert_eq!(b.grad().unwrap().shape(), &bsh);
        assert!(vals(&a.grad().unwrap()).iter().all(|&v| v == 0.0));
    }
}

#[test]
fn chunk_of_an_empty_dim_gives_that_many_empty_pieces() {
    // torch.empty(2, 0).chunk(3, 1): three [2, 0] tensors; split(2, 1) gives one.
    let x = Tensor::zeros(&[2, 0], DType::F32, Device::Cpu).unwrap();
    let parts = x.chunk(3, 1).unwrap();
    assert_eq!(parts.len(), 3);
    assert!(parts.iter().all(|p| p.shape() == [2, 0]));
    assert_eq!(x.split(2, 1).unwrap().len(), 1);
    // A 0-d tensor has no dim to cut (torch: "chunk expects at least a 1-dimensional tensor").
    let s = Tensor::scalar(1.0f32);
    assert!(s.chunk(2, 0).is_err());
    assert!(s.split(1, 0).is_err());
}

// ---- semantics -----------------------------------------------------------------------------

#[test]
fn softmax_refuses_integers_and_gives_nan_for_a_lone_minus_infinity() {
    let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(i.softmax(0).is_err());
    assert!(i.log_softmax(0).is_err());
    // torch.tensor(-inf).softmax(0) and .log_softmax(0) are nan; a finite 0-d gives 1 and 0.
    let x = Tensor::scalar(f64::NEG_INFINITY);
    assert!(x.softmax(0).unwrap().item_f64().unwrap().is_nan());
    assert!(x.log_softmax(0).unwrap().item_f64().unwrap().is_nan());
    assert_eq!(
        Tensor::scalar(3.0f32)
            .softmax(0)
            .unwrap()
            .item_f64()
            .unwrap(),
        1.0
    );
    assert_eq!(
        Tensor::scalar(3.0f32)
            .log_softmax(-1)
            .unwrap()
            .item_f64()
            .unwrap(),
        0.0
    );
}

#[test]
fn out_of_place_masked_fill_broadcasts_the_tensor_to_the_mask() {
    // torch.zeros(3).masked_fill(tensor([[True, False, True], [False, False, False]]), 1.0)
    let x = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    let m = Tensor::from_vec(vec![true, false, true, false, false, false], &[2, 3]).unwrap();
    let y = x.masked_fill(&m, 1.0).unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(vals(&y), vec![1., 0., 1., 0., 0., 0.]);
    // The gradient reaches x summed over the broadcast dim.
    let x = leaf(&[1., 2., 3.], &[3]);
    backward_sum(x.masked_fill(&m, 0.0));
    assert_close_slices(&grad(&x), &[1., 2., 1.], Tol::scaled(1e-12), "grad(&x)");
    // A non-bool mask is refused, as PyTorch does.
    let im = Tensor::from_vec(vec![1i64, 0, 1], &[3]).unwrap();
    assert!(x.masked_fill(&im, 0.0).is_err());
}

#[test]
fn negative_pads_crop() {
    let x = t64(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let pad = |p: &[isize], m: PadMode| x.pad(p, m).map(|y| (y.shape().to_vec(), vals(&y)));
    let c = PadMode::Constant(0.0);
    // F.pad(x, (-1, -2)) -> [2, 0]; (1, 1, -1, 0) -> [[0, 3, 4, 5, 0]]; (-3, 1) -> zeros [2, 1]
    assert_eq!(pad(&[-1, -2], c).unwrap(), (vec![2, 0], vec![]));
    assert_eq!(
        pad(&[1, 1, -1, 0], c).unwrap(),
        (vec![1, 5], vec![0., 3., 4., 5., 0.])
    );
    assert_eq!(pad(&[-3, 1], c).unwrap(), (vec![2, 1], vec![0., 0.]));
    // reflect (-1, 0) -> [[1, 2], [4, 5]]; replicate (-1, 2) -> [[1, 2, 2, 2], [4, 5, 5, 5]]
    assert_eq!(
        pad(&[-1, 0], PadMode::Reflect).unwrap(),
        (vec![2, 2], vec![1., 2., 4., 5.])
    );
    assert_eq!(
        pad(&[-1, 2], PadMode::Replicate).unwrap().1,
        vec![1., 2., 2., 2., 4., 5., 5., 5.]
    );
    // (-2, -2) leaves a negative size: an error naming the op.
    let e = pad(&[-2, -2], c).unwrap_err().to_string();
    assert!(e.contains("pad") && e.contains("negative"), "{e}");
    // Gradients of a crop land in the kept part only.
    let x = leaf(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    backward_sum(x.pad(&[-1, 1], c));
    assert_close_slices(
        &grad(&x),
        &[0., 1., 1., 0., 1., 1.],
        Tol::scaled(1e-12),
        "grad(&x)",
    );
}

// ---- casts keep the strides of a permuted dense tensor (preserve_format) --------------------

#[test]
fn a_cast_of_a_permuted_tensor_keeps_its_strides() {
    // torch.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).to(torch.bfloat16).stride() is
    // (1, 12, 4); .contiguous() values are the same either way.
    let x = t64(&(0..24).map(f64::from).collect::<Vec<_>>(), &[2, 3, 4])
        .permute(&[2, 0, 1])
        .unwrap();
    for dtype in [DType::BF16, DType::F16, DType::F32] {
        let y = x.to_dtype(dtype).unwrap();
        assert_eq!(y.dtype(), dtype);
        assert_eq!(y.layout().strides(), &[1, 12, 4], "{dtype:?}");
        assert_eq!(vals(&y), vals(&x), "{dtype:?}");
    }
    // A transposed weight, as autocast casts it, and the gradient through the cast.
    let w = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let wt = w.t().unwrap().to_dtype(DType::F32).unwrap();
    assert_eq!(wt.layout().strides(), &[1, 3]);
    let g = t64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])
        .to_dtype(DType::F32)
        .unwrap();
    wt.mul(&g).unwrap().sum_all().unwrap().backward().unwrap();
    // d/dw of sum(w^T * g) = g^T.
    assert_close_slices(
        &grad(&w),
        &[1.0, 3.0, 5.0, 2.0, 4.0, 6.0],
        Tol::scaled(1e-12),
        "grad(&w)",
    );
    // Overlapping (expanded) and sliced layouts are not dense: a row-major copy.
    let e = t64(&[1.0, 2.0], &[2, 1]).expand(&[2, 3]).unwrap();
    assert!(e.to_dtype(DType::F32).unwrap().is_contiguous());
    let s = t64(&(0..12).map(f64::from).collect::<Vec<_>>(), &[3, 4])
        .narrow(1, 1, 2)
        .unwrap()
        .t()
        .unwrap();
    let c = s.to_dtype(DType::F32).unwrap();
    assert!(c.is_contiguous());
    assert_eq!(vals(&c), vec![1.0, 5.0, 9.0, 2.0, 6.0, 10.0]);
}
