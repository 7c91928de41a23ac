//! The fused CPU layer/RMS norm against the composite form it replaces: outputs and the
//! gradients of input, weight and bias, for every float dtype, with and without parameters,
//! non-contiguous inputs, several trailing dims, and rows enough for the threaded path. The
//! reference is the composite in f64 on the same (rounded) values: the fused kernel computes
//! half types in f32 and rounds once, so it is closer to it than the composite in f16 is.

use super::{layer_norm, layer_norm_composite, rms_norm, rms_norm_composite};
use crate::tensor::{DType, Device, Tensor};

/// Relative + absolute tolerance of a dtype.
fn tol(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => 1e-12,
        DType::F32 => 2e-5,
        DType::F16 => 1e-2,
        _ => 5e-2,
    }
}

fn assert_close(got: &Tensor, want: &Tensor, tol: f64, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_vec_f64().unwrap(), want.to_vec_f64().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{i}]: fused {a} vs composite {b}"
        );
    }
}

/// A leaf of `shape` and `dtype` with smooth, varied values (offset so the mean is not 0).
fn leaf(shape: &[usize], dtype: DType, seed: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| (i as f64 * 0.731 + seed).sin() * 1.7 + 0.4)
        .collect();
    Tensor::from_vec(v, shape)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// A norm applied to (x, weight, bias, residual).
type NormFn<'a> = &'a dyn Fn(&Tensor, Option<&Tensor>, Option<&Tensor>, Option<&Tensor>) -> Tensor;

/// Run `f` on fresh leaves of `dtype` (x and optional weight/bias/residual), backpropagate a fixed
/// upstream gradient (rounded to `x`'s dtype first), return the output and the gradients.
fn run(x: &Tensor, params: &[Option<Tensor>], dtype: DType, f: NormFn) -> Vec<Tensor> {
    let fresh = |t: &Tensor| {
        t.detach()
            .to_dtype(dtype)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    let x_dtype = x.dtype();
    let x = fresh(x);
    let ps: Vec<Option<Tensor>> = params.iter().map(|p| p.as_ref().map(fresh)).collect();
    let residual = ps.get(2).and_then(|r| r.as_ref());
    let y = f(&x, ps[0].as_ref(), ps[1].as_ref(), residual);
    assert_eq!(y.dtype(), dtype);
    let g = leaf(y.shape(), x_dtype, 3.0)
        .detach()
        .to_dtype(dtype)
        .unwrap();
    y.mul(&g).unwrap().sum_all().unwrap().backward().unwrap();
    let mut out = vec![y.detach(), x.grad().unwrap()];
    out.extend(ps.iter().flatten().map(|p| p.grad().unwrap()));
    out
}

#[test]
fn fused_layer_and_rms_norm_match_the_composite_form() {
    // (input shape, normalized shape, transpose the input's first two dims first)
    let cases: &[(&[usize], &[usize], bool)] = &[
        (&[2, 3, 4], &[4], false),
        (&[3, 2, 5], &[2, 5], false),
        (&[4, 3, 6], &[6], true),
        (&[7], &[7], false),
        (&[300, 257], &[257], false),
        (&[80, 16, 128], &[128], true),
    ];
    for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16] {
        for &(shape, norm_shape, transpose) in cases {
            let mut x = leaf(shape, dtype, 0.0);
            if transpose {
                x = x.transpose(0, 1).unwrap();
            }
            let dims: Vec<isize> = (1..=norm_shape.len() as isize).map(|i| -i).collect();
            for (with_w, with_b) in [(true, true), (true, false), (false, true), (false, false)] {
                let params = [
                    with_w.then(|| leaf(norm_shape, dtype, 1.0)),
                    with_b.then(|| leaf(norm_shape, dtype, 2.0)),
                ];
                let what =
                    format!("{dtype} {shape:?}/{norm_shape:?} t={transpose} w={with_w} b={with_b}");
                let fused = run(&x, &params, dtype, &|x, w, b, _| {
                    layer_norm(x, norm_shape, w, b, 1e-5).unwrap()
                });
                let comp = run(&x, &params, DType::F64, &|x, w, b, _| {
                    layer_norm_composite(x, &dims, w, b, 1e-5).unwrap()
                });
                for (i, (f, c)) in fused.iter().zip(&comp).enumerate() {
                    assert_close(f, c, tol(dtype), &format!("layer_norm {what} #{i}"));
                }
                let params = [params[0].clone(), None];
                let fused = run(&x, &params, dtype, &|x, w, _, _| {
                    rms_norm(x, norm_shape, w, Some(1e-6)).unwrap()
                });
                let comp = run(&x, &params, DType::F64, &|x, w, _, _| {
                    rms_norm_composite(x, &dims, w, 1e-6).unwrap()
                });
                for (i, (f, c)) in fused.iter().zip(&comp).enumerate() {
                    assert_close(f, c, tol(dtype), &format!("rms_norm {what} #{i}"));
                }
            }
        }
    }
    // The fused op is what the CPU runs: its node carries the op's name.
    let y = layer_norm(&leaf(&[2, 4], DType::F32, 0.0), &[4], None, None, 1e-5).unwrap();
    assert_eq!(y.grad_fn_name(), Some("layer_norm"));
    assert_eq!(y.device(), Device::Cpu);
}

#[test]
fn fused_batch_norm_matches_the_composite_form() {
    use super::{batch_norm, batch_norm_add_relu, batch_norm_composite, batch_norm_relu};
    // (input shape, transpose the input's first two dims first): (N, C), (N, C, L), NCHW
    // with a lane tail, non-contiguous, and large enough for the threaded path; each also
    // with the fused ReLU against the composite followed by `relu`.
    let cases: &[(&[usize], bool)] = &[
        (&[6, 3], false),
        (&[4, 3, 5], false),
        (&[2, 3, 4, 5], false),
        (&[5, 4, 3, 3], true),
        (&[16, 8, 17, 19], false),
    ];
    for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16] {
        for &(shape, transpose) in cases {
            let mut x = leaf(shape, dtype, 0.0);
            if transpose {
                x = x.transpose(0, 1).unwrap();
            }
            let c = x.shape()[1];
            for (with_w, with_b) in [(true, true), (true, false), (false, true), (false, false)] {
                let params = [
                    with_w.then(|| leaf(&[c], dtype, 1.0)),
                    with_b.then(|| leaf(&[c], dtype, 2.0)),
                ];
                for relu in [false, true] {
                    let what = format!(
                        "{dtype} {shape:?} t={transpose} w={with_w} b={with_b} relu={relu}"
                    );
                    let fused = run(&x, &params, dtype, &|x, w, b, _| {
                        let op = if relu { batch_norm_relu } else { batch_norm };
                        op(x, None, None, w, b, true, 0.1, 1e-5).unwrap()
                    });
                    let comp = run(&x, &params, DType::F64, &|x, w, b, _| {
                        let y = batch_norm_composite(x, w, b, 1e-5).unwrap().0;
                        if relu {
                            y.relu().unwrap()
                        } else {
                            y
                        }
                    });
                    for (i, (f, c)) in fused.iter().zip(&comp).enumerate() {
                        assert_close(f, c, tol(dtype), &format!("batch_norm {what} #{i}"));
                    }
                }
            }
        }
    }
    // relu(bn(x) + r) against the composite, with the residual's gradient too (r transposed
    // like x where x is).
    for dtype in [DType::F64, DType::F32, DType::F16, DType::BF16] {
        for &(shape, transpose) in cases {
            let (mut x, mut r) = (leaf(shape, dtype, 0.0), leaf(shape, dtype, 5.0));
            if transpose {
                (x, r) = (x.transpose(0, 1).unwrap(), r.transpose(0, 1).unwrap());
            }
            let c = x.shape()[1];
            let params = [
                Some(leaf(&[c], dtype, 1.0)),
                Some(leaf(&[c], dtype, 2.0)),
                Some(r),
            ];
            let fused = run(&x, &params, dtype, &|x, w, b, r| {
                let r = r.expect("given");
                let y = batch_norm_add_relu(x, r, None, None, w, b, true, 0.1, 1e-5).unwrap();
                assert_eq!(y.grad_fn_name(), Some("batch_norm"));
                y
            });
            let comp = run(&x, &params, DType::F64, &|x, w, b, r| {
                let y = batch_norm_composite(x, w, b, 1e-5).unwrap().0;
                y.add(r.expect("given")).unwrap().relu().unwrap()
            });
            let ys = fused[0].to_vec_f64().unwrap();
            assert!(ys.contains(&0.0) && ys.iter().any(|&v| v > 0.0));
            for (i, (f, c)) in fused.iter().zip(&comp).enumerate() {
                let what = format!("batch_norm_add_relu {dtype} {shape:?} t={transpose} #{i}");
                assert_close(f, c, tol(dtype), &what);
            }
        }
    }
    // The running statistics see the batch mean and the unbiased variance.
    let x = leaf(&[4, 2, 3], DType::F32, 0.0);
    let (rm, rv) = (
        Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap(),
        Tensor::ones(&[2], DType::F32, Device::Cpu).unwrap(),
    );
    let y = batch_norm(&x, Some(&rm), Some(&rv), None, None, true, 0.1, 1e-5).unwrap();
    assert_eq!(y.grad_fn_name(), Some("batch_norm"));
    let (_, mean, var) = batch_norm_composite(&x, None, None, 1e-5).unwrap();
    let unbiased = var.mul_scalar(12.0 / 11.0).unwrap();
    let want_rm = mean.mul_scalar(0.1).unwrap();
    let want_rv = unbiased.mul_scalar(0.1).unwrap().add_scalar(0.9).unwrap();
    assert_close(&rm, &want_rm, 1e-6, "running_mean");
    assert_close(&rv, &want_rv, 1e-6, "running_var");
}
