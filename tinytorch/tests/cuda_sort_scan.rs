//! The CUDA sort (bitonic, kernels/index.cu) and scans (kernels/reduce.cu) against the CPU
//! backend as the oracle: sort, argsort and topk must give exactly the CPU's values and
//! indices (torch.sort's stable order: NaN above every number, ties in input order,
//! descending the reverse); cumsum and cumprod the CPU's results (integers exactly, floats
//! within a tolerance: the parallel scan adds in another order), forward and backward.
//! Each kernel path is reached: rows sorted in shared memory (up to 2048 elements) and
//! longer ones in global memory, a row of 300,000 elements, scans by one thread, one warp
//! or one block per row; inner dims, transposed and offset views; every dtype. Without a
//! GPU each test prints that it was skipped.
#![cfg(feature = "cuda")]

mod common;
use common::{assert_close_same_dtype, Tol};

use std::sync::MutexGuard;
use tinytorch::backend::cuda;
use tinytorch::{DType, Device, Tensor};

const GPU: Device = Device::Cuda(0);

/// Some(guard) when a GPU is present; the guard makes the tests take the device in turn.
fn gpu() -> Option<MutexGuard<'static, ()>> {
    common::gpu_turn(cuda::is_available(), "")
}

/// Deterministic pseudo-random numbers (splitmix64), so both devices get the same input and
/// a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An integer in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A uniform number in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` values to sort: few distinct ones (many ties), and for float dtypes also NaN, ±inf and
/// ±0, as a CPU tensor of `shape` and dtype `dt`.
fn sort_input(rng: &mut Rng, shape: &[usize], dt: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0];
    let v: Vec<f64> = (0..n)
        .map(|_| {
            if dt.is_float() && rng.below(8) == 0 {
                special[rng.below(special.len() as u64) as usize]
            } else if dt == DType::U8 {
                rng.below(40) as f64
            } else {
                // Multiples of 1/4 in [-10, 10]: exact in every float dtype; integer dtypes
                // truncate them to many equal values.
                (rng.below(81) as f64 - 40.0) / 4.0
            }
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dt).unwrap()
}

/// Values to scan: small integers for cumsum, numbers near 1 (and a few zeros) for cumprod
/// so that long products stay finite.
fn scan_input(rng: &mut Rng, shape: &[usize], dt: DType, prod: bool) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            if prod && dt.is_float() {
                if rng.below(50) == 0 {
                    0.0
                } else {
                    0.999 + 0.002 * rng.unit()
                }
            } else if prod {
                // Integer products wrap (exactly, on both devices).
                rng.below(7) as f64 - 3.0
            } else if dt == DType::U8 {
                rng.below(256) as f64
            } else {
                rng.below(41) as f64 - 20.0
            }
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dt).unwrap()
}

/// The elements of `t` as f64 bit patterns (NaN payloads and the sign of zero included).
fn bits(t: &Tensor) -> Vec<u64> {
    t.to_vec_f64()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

/// `got` equals `want` exactly, with the same dtype and shape.
fn assert_same(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (bits(got), bits(want));
    if let Some(i) = (0..w.len()).find(|&i| g[i] != w[i]) {
        panic!(
            "{what}: element {i} is {}, the CPU gives {}",
            f64::from_bits(g[i]),
            f64::from_bits(w[i])
        );
    }
}

/// Tolerance of a scan result of dtype `dt` (a few units in the last place).
fn scan_tol(dt: DType) -> f64 {
    match dt {
        DType::F64 => 1e-10,
        DType::F32 => 1e-5,
        DType::F16 => 4e-3,
        DType::BF16 => 2e-2,
        _ => 0.0,
    }
}

/// sort of `x` (a CPU tensor) and of the same view of it on the GPU along `dim`, both ways,
/// compared exactly; `view` turns the stored tensor into the one sorted.
fn check_sort(what: &str, x: &Tensor, view: impl Fn(&Tensor) -> Tensor, dim: isize) {
    let (cpu, dev) = (view(x), view(&x.cuda().unwrap()));
    for descending in [false, true] {
        let (wv, wi) = cpu.sort(dim, descending).unwrap();
        let (gv, gi) = dev.sort(dim, descending).unwrap();
        let what = format!("{what} {} dim {dim} descending {descending}", x.dtype());
        assert_same(&format!("{what} values"), &gv, &wv);
        assert_same(&format!("{what} indices"), &gi, &wi);
    }
}

/// Row lengths around the shared-memory path's limit (2048) and past it.
const LENGTHS: [usize; 11] = [1, 2, 3, 17, 100, 1000, 2047, 2048, 2049, 4096, 5000];

#[test]
fn sort_matches_the_cpu_for_every_dtype_and_row_length() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(1);
    for dt in DType::ALL {
        for n in LENGTHS {
            let x = sort_input(&mut rng, &[3, n], dt);
            check_sort(&format!("(3, {n})"), &x, |t| t.clone(), 1);
            check_sort(&format!("(3, {n})"), &x, |t| t.clone(), -1);
        }
    }
}

#[test]
fn sort_of_a_long_row_matches_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(2);
    for dt in [DType::F32, DType::F64, DType::BF16, DType::I64, DType::U8] {
        let x = sort_input(&mut rng, &[300_000], dt);
        check_sort("(300000)", &x, |t| t.clone(), 0);
    }
    // Two long rows of a transposed view (the sorted dim has stride 2).
    let x = sort_input(&mut rng, &[150_001, 2], DType::F32);
    check_sort("(150001, 2).t()", &x, |t| t.t().unwrap(), 1);
}

#[test]
fn sort_along_inner_dims_and_of_strided_views_matches_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(3);
    for dt in [DType::F32, DType::F16, DType::I64, DType::Bool] {
        for n in [5, 2048, 2049] {
            // A middle dim and the first dim of a contiguous tensor.
            let x = sort_input(&mut rng, &[4, n, 3], dt);
            check_sort(&format!("(4, {n}, 3)"), &x, |t| t.clone(), 1);
            check_sort(&format!("(4, {n}, 3)"), &x, |t| t.clone(), 0);
            // A transposed matrix along both dims.
            let x = sort_input(&mut rng, &[n, 6], dt);
            check_sort(&format!("({n}, 6).t()"), &x, |t| t.t().unwrap(), 1);
            check_sort(&format!("({n}, 6).t()"), &x, |t| t.t().unwrap(), 0);
            // A permuted 3-d view that starts at an offset.
            let x = sort_input(&mut rng, &[3, n + 2, 5], dt);
            let view = |t: &Tensor| {
                t.narrow(1, 1, n)
                    .unwrap()
                    .permute(&[2, 0, 1])
                    .unwrap()
                    .narrow(0, 1, 3)
                    .unwrap()
            };
            check_sort(&format!("(3, {n}+2, 5) view"), &x, view, 2);
            check_sort(&format!("(3, {n}+2, 5) view"), &x, view, 1);
        }
    }
}

#[test]
fn sort_of_many_rows_and_of_edge_shapes_matches_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(4);
    // Many short rows: several rows per block, more blocks than one launch has.
    for shape in [[70_000, 3], [3_000, 40], [700, 700], [40, 3_000]] {
        let x = sort_input(&mut rng, &shape, DType::F32);
        check_sort(&format!("{shape:?}"), &x, |t| t.clone(), 1);
    }
    // Every element its own row (dim of size 1), a 0-d tensor and empty tensors.
    let x = sort_input(&mut rng, &[5, 1, 7], DType::F64);
    check_sort("(5, 1, 7)", &x, |t| t.clone(), 1);
    let x = Tensor::from_vec(vec![2.5f32], &[]).unwrap();
    check_sort("0-d", &x, |t| t.clone(), 0);
    for shape in [[0, 5], [5, 0]] {
        let x = Tensor::zeros(&shape, DType::F32, Device::Cpu).unwrap();
        check_sort(&format!("{shape:?}"), &x, |t| t.clone(), 1);
        check_sort(&format!("{shape:?}"), &x, |t| t.clone(), 0);
    }
}

#[test]
fn argsort_and_topk_match_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(5);
    for dt in DType::ALL {
        for n in [7, 2049, 5000] {
            let x = sort_input(&mut rng, &[3, n], dt);
            let xg = x.cuda().unwrap();
            for descending in [false, true] {
                let what = format!("argsort {dt} n {n} descending {descending}");
                assert_same(
                    &what,
                    &xg.argsort(1, descending).unwrap(),
                    &x.argsort(1, descending).unwrap(),
                );
            }
            for k in [1, 5, n] {
                for largest in [false, true] {
                    let what = format!("topk {dt} n {n} k {k} largest {largest}");
                    let (wv, wi) = x.topk(k, 1, largest, true).unwrap();
                    let (gv, gi) = xg.topk(k, 1, largest, true).unwrap();
                    assert_same(&format!("{what} values"), &gv, &wv);
                    assert_same(&format!("{what} indices"), &gi, &wi);
                }
            }
        }
    }
    // topk along the first dim of a transposed view.
    let x = sort_input(&mut rng, &[6, 3000], DType::F32);
    let (wv, wi) = x.t().unwrap().topk(4, 0, true, true).unwrap();
    let (gv, gi) = x
        .cuda()
        .unwrap()
        .t()
        .unwrap()
        .topk(4, 0, true, true)
        .unwrap();
    assert_same("topk of a transposed view: values", &gv, &wv);
    assert_same("topk of a transposed view: indices", &gi, &wi);
}

/// The gradient of sum(f(x) * w) with respect to x on `device`, for a CPU tensor `x` and a
/// CPU weight `w` of f(x)'s shape.
fn grad_of(x: &Tensor, w: &Tensor, device: Device, f: impl Fn(&Tensor) -> Tensor) -> Tensor {
    let leaf = x
        .to_device(device)
        .unwrap()
        .detach()
        .requires_grad_(true)
        .unwrap();
    let y = f(&leaf);
    y.mul(&w.to_device(device).unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    leaf.grad().expect("a gradient").cpu().unwrap()
}

#[test]
fn sort_and_topk_gradients_match_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(6);
    for dt in [DType::F32, DType::F64] {
        for n in [9, 3000] {
            // Distinct values would do, but ties must route the gradient like the CPU too.
            let x = sort_input(&mut rng, &[4, n], dt);
            let w = scan_input(&mut rng, &[4, n], dt, false);
            let sort = |t: &Tensor| t.sort(1, true).unwrap().0;
            assert_same(
                &format!("sort backward {dt} n {n}"),
                &grad_of(&x, &w, GPU, sort),
                &grad_of(&x, &w, Device::Cpu, sort),
            );
            let w = scan_input(&mut rng, &[4, 3], dt, false);
            let topk = |t: &Tensor| t.topk(3, 1, false, true).unwrap().0;
            assert_same(
                &format!("topk backward {dt} n {n}"),
                &grad_of(&x, &w, GPU, topk),
                &grad_of(&x, &w, Device::Cpu, topk),
            );
        }
    }
}

/// cumsum and cumprod of the same view of `x` on both devices along `dim`.
fn check_scans(
    what: &str,
    rng: &mut Rng,
    shape: &[usize],
    dt: DType,
    view: impl Fn(&Tensor) -> Tensor,
    dim: isize,
) {
    for prod in [false, true] {
        let x = scan_input(rng, shape, dt, prod);
        let (cpu, dev) = (view(&x), view(&x.cuda().unwrap()));
        let (want, got) = if prod {
            (cpu.cumprod(dim).unwrap(), dev.cumprod(dim).unwrap())
        } else {
            (cpu.cumsum(dim).unwrap(), dev.cumsum(dim).unwrap())
        };
        let op = if prod { "cumprod" } else { "cumsum" };
        assert_close_same_dtype(
            &got,
            &want,
            Tol::scaled(scan_tol(dt)).equal_nan(),
            &format!("{op} {what} {dt} dim {dim}"),
        );
    }
}

#[test]
fn scans_match_the_cpu_for_every_dtype_and_row_length() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(7);
    for dt in DType::ALL {
        for n in [1, 5, 8, 9, 100, 256, 1025, 2049, 5000] {
            for dim in [1, 0] {
                check_scans(
                    &format!("(3, {n})"),
                    &mut rng,
                    &[3, n],
                    dt,
                    |t| t.clone(),
                    dim,
                );
            }
        }
    }
}

#[test]
fn scans_of_long_rows_many_rows_and_views_match_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(8);
    for dt in [
        DType::F32,
        DType::F64,
        DType::BF16,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
        // A block per row.
        check_scans("(2, 300000)", &mut rng, &[2, 300_000], dt, |t| t.clone(), 1);
    }
    for dt in [DType::F32, DType::I64] {
        // One thread per row (many rows), then a warp per row.
        check_scans("(70000, 12)", &mut rng, &[70_000, 12], dt, |t| t.clone(), 1);
        check_scans("(3000, 700)", &mut rng, &[3_000, 700], dt, |t| t.clone(), 1);
        // Inner dims, transposed and offset views.
        check_scans(
            "(4, 3000, 3)",
            &mut rng,
            &[4, 3000, 3],
            dt,
            |t| t.clone(),
            1,
        );
        for dim in [1, 0] {
            check_scans(
                "(3000, 6).t()",
                &mut rng,
                &[3000, 6],
                dt,
                |t| t.t().unwrap(),
                dim,
            );
        }
        let view = |t: &Tensor| t.narrow(1, 2, 2500).unwrap().permute(&[1, 0, 2]).unwrap();
        check_scans("(3, 2503, 4) view", &mut rng, &[3, 2503, 4], dt, view, 0);
        check_scans("(3, 2503, 4) view", &mut rng, &[3, 2503, 4], dt, view, 2);
    }
    // A 0-d tensor and empty tensors.
    for dt in [DType::F32, DType::U8] {
        check_scans("0-d", &mut rng, &[], dt, |t| t.clone(), 0);
        check_scans("(0, 4)", &mut rng, &[0, 4], dt, |t| t.clone(), 1);
        check_scans("(4, 0)", &mut rng, &[4, 0], dt, |t| t.clone(), 1);
    }
}

#[test]
fn scan_gradients_match_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let mut rng = Rng(9);
    for dt in [DType::F32, DType::F64] {
        for shape in [[5, 7], [3, 3000], [2, 70_000]] {
            let w = scan_input(&mut rng, &shape, dt, false);
            let x = scan_input(&mut rng, &shape, dt, false);
            let cumsum = |t: &Tensor| t.cumsum(1).unwrap();
            assert_close_same_dtype(
                &grad_of(&x, &w, GPU, cumsum),
                &grad_of(&x, &w, Device::Cpu, cumsum),
                Tol::scaled(scan_tol(dt)).equal_nan(),
                &format!("cumsum backward {dt} {shape:?}"),
            );
            // Numbers near 1 with a few zeros: the rule's paths before, at and after the
            // first zero of a row.
            let x = scan_input(&mut rng, &shape, dt, true);
            let cumprod = |t: &Tensor| t.cumprod(1).unwrap();
            assert_close_same_dtype(
                &grad_of(&x, &w, GPU, cumprod),
                &grad_of(&x, &w, Device::Cpu, cumprod),
                Tol::scaled(scan_tol(dt) * 10.0).equal_nan(),
                &format!("cumprod backward {dt} {shape:?}"),
            );
            // Along the first dim of a transposed view.
            let cumsum_t = |t: &Tensor| t.t().unwrap().cumsum(0).unwrap();
            let wt = w.t().unwrap().contiguous().unwrap();
            assert_close_same_dtype(
                &grad_of(&x, &wt, GPU, cumsum_t),
                &grad_of(&x, &wt, Device::Cpu, cumsum_t),
                Tol::scaled(scan_tol(dt)).equal_nan(),
                &format!("cumsum backward, transposed, {dt} {shape:?}"),
            );
        }
    }
}
