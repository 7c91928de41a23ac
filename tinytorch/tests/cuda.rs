//! The CUDA backend end to end: device moves, errors, the caching allocator, index errors,
//! index ops in every dtype, tensors past 2^26 elements, two threads at once, training steps
//! (f32 and bf16 autocast) and a `create_graph` Hessian-vector product against the CPU. Without a GPU only the error paths run; the rest print
//! that they were skipped.
//!
//! The tests share the device's error flag and allocation counter, so each GPU test holds
//! one lock for its whole run (they run one at a time), except the two-thread test, which
//! uses the device from two threads on purpose, inside its own turn.
#![cfg(feature = "cuda")]

mod common;
use common::{assert_close_slices, max_diff_slices, Tol};

use std::sync::MutexGuard;
use tinytorch::backend::cuda;
use tinytorch::models::{seed_cnn, ImageShape};
use tinytorch::nn::{Module, Sequential};
use tinytorch::optim::{SgdOptions, SGD};
use tinytorch::{manual_seed, DType, Device, Tensor};

const GPU: Device = Device::Cuda(0);

/// The turn of a GPU test (`None`, after printing why, where no GPU is present).
fn gpu() -> Option<MutexGuard<'static, ()>> {
    common::gpu_turn(cuda::is_available(), "")
}

/// The values of `t` (any device) as f64.
fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec_f64().unwrap()
}

/// A seed-cnn for 28x28 images seeded with `seed` on the CPU and a copy of it on the GPU,
/// each with its own SGD (lr 0.05).
fn seed_cnn_on_both(seed: u64) -> (Sequential, Sequential, SGD, SGD) {
    manual_seed(seed);
    let shape = ImageShape {
        channels: 1,
        height: 28,
        width: 28,
    };
    let cpu_model = seed_cnn(shape, 10).unwrap();
    let gpu_model = seed_cnn(shape, 10).unwrap();
    gpu_model
        .load_state_dict(&cpu_model.state_dict().into_iter().collect(), true)
        .unwrap();
    gpu_model.to_device(GPU).unwrap();
    let opts = SgdOptions {
        lr: 0.05,
        ..Default::default()
    };
    let cpu_opt = SGD::new(cpu_model.parameters(), opts).unwrap();
    let gpu_opt = SGD::new(gpu_model.parameters(), opts).unwrap();
    (cpu_model, gpu_model, cpu_opt, gpu_opt)
}

/// One training step of `model` on `(x, y)`; the loss.
fn sgd_step(model: &dyn Module, opt: &mut SGD, x: &Tensor, y: &Tensor) -> f64 {
    tinytorch::train::train_step(model, opt, x, y).unwrap().0
}

/// Every parameter of the GPU model within `tol` (absolute) of the CPU model's.
fn assert_parameters_close(cpu: &dyn Module, gpu: &dyn Module, tol: f64) {
    for ((name, c), (_, g)) in cpu.named_parameters().iter().zip(gpu.named_parameters()) {
        let (c, g) = (vals(c), vals(&g));
        let worst = max_diff_slices(&c, &g);
        assert!(worst < tol, "{name}: max difference {worst}");
    }
}

#[test]
fn no_gpu_gives_an_error_not_a_panic() {
    if cuda::is_available() {
        return;
    }
    let err = Tensor::zeros(&[2, 3], DType::F32, GPU)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no CUDA device"), "{err}");
    let err = Tensor::from_slice(&[1.0f32, 2.0])
        .cuda()
        .unwrap_err()
        .to_string();
    assert!(err.contains("CUDA"), "{err}");
}

#[test]
fn device_strings_parse_like_pytorch() {
    assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
    assert_eq!("cuda".parse::<Device>().unwrap(), Device::Cuda(0));
    assert_eq!("cuda:3".parse::<Device>().unwrap(), Device::Cuda(3));
    assert!("gpu"
        .parse::<Device>()
        .unwrap_err()
        .to_string()
        .contains("gpu"));
}

#[test]
fn round_trip_keeps_values_of_every_dtype() {
    let Some(_turn) = gpu() else { return };
    let x = Tensor::arange(-5.0, 7.0, 1.0, DType::F64, Device::Cpu).unwrap();
    for dt in DType::ALL {
        let host = x.to_dtype(dt).unwrap();
        let back = host.cuda().unwrap().cpu().unwrap();
        assert_eq!(
            back.to_vec_f64().unwrap(),
            host.to_vec_f64().unwrap(),
            "{dt}"
        );
        // A transposed view goes through the strided copy kernel.
        let t = host.reshape(&[3, 4]).unwrap().t().unwrap();
        let dev = host.reshape(&[3, 4]).unwrap().cuda().unwrap().t().unwrap();
        assert_eq!(
            dev.contiguous().unwrap().to_vec_f64().unwrap(),
            t.to_vec_f64().unwrap()
        );
    }
}

#[test]
fn mixing_devices_is_a_clear_error() {
    let Some(_turn) = gpu() else { return };
    let a = Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap();
    let b = a.cuda().unwrap();
    let err = a.add(&b).unwrap_err().to_string();
    assert!(err.contains("cpu") && err.contains("cuda:0"), "{err}");
}

#[test]
fn out_of_range_index_is_reported_at_synchronisation() {
    let Some(_turn) = gpu() else { return };
    let x = Tensor::ones(&[4, 2], DType::F32, GPU).unwrap();
    let idx = Tensor::from_slice(&[0i64, 9]).cuda().unwrap();
    let err = x
        .index_select(0, &idx)
        .and_then(|y| y.to_vec_f64())
        .unwrap_err()
        .to_string();
    assert!(err.contains("out of range"), "{err}");
    // The flag is cleared: the next op works.
    assert_eq!(x.sum_all().unwrap().item_f64().unwrap(), 8.0);
}

#[test]
fn training_step_matches_the_cpu_and_reuses_memory() {
    let Some(_turn) = gpu() else { return };
    let (cpu_model, gpu_model, mut cpu_opt, mut gpu_opt) = seed_cnn_on_both(0);
    let x = Tensor::rand(&[8, 1, 28, 28], DType::F32, Device::Cpu).unwrap();
    let y = Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5, 6, 7]);
    let (xg, yg) = (x.cuda().unwrap(), y.cuda().unwrap());
    let dev = cuda::device::get(0).unwrap();
    let mut allocations = Vec::new();
    for _ in 0..4 {
        let lc = sgd_step(&cpu_model, &mut cpu_opt, &x, &y);
        let lg = sgd_step(&gpu_model, &mut gpu_opt, &xg, &yg);
        assert!(
            (lc - lg).abs() < 1e-4 * lc.abs().max(1.0),
            "loss cpu {lc} vs cuda {lg}"
        );
        allocations.push(dev.allocation_count());
    }
    // After the first steps fill the cache, a step takes no new device memory.
    assert_eq!(
        allocations[3], allocations[2],
        "allocations per step: {allocations:?}"
    );
    assert_parameters_close(&cpu_model, &gpu_model, 1e-4);
}

#[test]
fn index_accumulation_in_half_and_byte_dtypes_matches_the_cpu() {
    let Some(_turn) = gpu() else { return };
    // Repeated indices make the atomics meet on one element.
    let index = Tensor::from_slice(&[0i64, 2, 2, 1, 0, 2]);
    for dt in [DType::F16, DType::BF16, DType::U8, DType::F32, DType::I64] {
        let base = Tensor::arange(0.0, 12.0, 1.0, DType::F64, Device::Cpu)
            .unwrap()
            .reshape(&[3, 4])
            .unwrap()
            .to_dtype(dt)
            .unwrap();
        let src = Tensor::arange(1.0, 25.0, 1.0, DType::F64, Device::Cpu)
            .unwrap()
            .reshape(&[6, 4])
            .unwrap()
            .to_dtype(dt)
            .unwrap();
        let want = base.index_add(0, &index, &src).unwrap();
        let got = base
            .cuda()
            .unwrap()
            .index_add(0, &index.cuda().unwrap(), &src.cuda().unwrap())
            .unwrap();
        assert_close_slices(
            &vals(&got),
            &vals(&want),
            Tol::scaled(1e-2).equal_nan(),
            &format!("index_add {dt}"),
        );
        // scatter_add along dim 1 with a (3, 6) index into (3, 4).
        let sidx = Tensor::from_vec(
            vec![0i64, 3, 3, 1, 0, 2, 1, 1, 1, 2, 3, 0, 2, 2, 0, 0, 3, 1],
            &[3, 6],
        )
        .unwrap();
        let ssrc = src.reshape(&[3, 8]).unwrap().narrow(1, 0, 6).unwrap();
        let want = base.scatter_add(1, &sidx, &ssrc).unwrap();
        let got = base
            .cuda()
            .unwrap()
            .scatter_add(1, &sidx.cuda().unwrap(), &ssrc.cuda().unwrap())
            .unwrap();
        assert_close_slices(
            &vals(&got),
            &vals(&want),
            Tol::scaled(1e-2).equal_nan(),
            &format!("scatter_add {dt}"),
        );
    }
}

#[test]
fn out_of_range_indices_of_gather_scatter_and_index_add_are_reported() {
    let Some(_turn) = gpu() else { return };
    let x = Tensor::ones(&[3, 4], DType::F32, GPU).unwrap();
    let bad = Tensor::from_vec(vec![0i64, 7, 1, 2], &[1, 4])
        .unwrap()
        .cuda()
        .unwrap();
    let src = Tensor::ones(&[1, 4], DType::F32, GPU).unwrap();
    let one = Tensor::from_slice(&[5i64]).cuda().unwrap();
    let row = Tensor::ones(&[1, 4], DType::F32, GPU).unwrap();
    // Each op runs and synchronises before the next starts: the device's error flag is
    // reported (and cleared) by the first synchronisation after it was raised.
    type Launch<'a> = Box<dyn Fn() -> tinytorch::Result<Tensor> + 'a>;
    let ops: [(&str, Launch); 4] = [
        ("gather", Box::new(|| x.gather(0, &bad))),
        ("scatter", Box::new(|| x.scatter(0, &bad, &src))),
        ("scatter_add", Box::new(|| x.scatter_add(0, &bad, &src))),
        ("index_add", Box::new(|| x.index_add(0, &one, &row))),
    ];
    for (op, launch) in ops {
        let err = launch()
            .and_then(|y| y.to_vec_f64())
            .unwrap_err()
            .to_string();
        assert!(err.contains("out of range"), "{op}: {err}");
        // Reported once: the device works on.
        assert_eq!(x.sum_all().unwrap().item_f64().unwrap(), 12.0, "{op}");
    }
}

#[test]
fn tensors_past_two_to_the_26_elements_take_every_path() {
    let Some(_turn) = gpu() else { return };
    // 2^26 + 3 elements (256 MiB in f32): past any 32-bit-per-thread indexing shortcut and
    // past the grid-stride loop's first sweep.
    let n = (1usize << 26) + 3;
    let host =
        Tensor::from_vec((0..n).map(|i| (i % 1000) as f32).collect::<Vec<_>>(), &[n]).unwrap();
    let dev = host.cuda().unwrap();
    // Elementwise: values come back exactly.
    let y = dev.mul_scalar(2.0).unwrap().add_scalar(1.0).unwrap();
    let back = vals(&y);
    for i in [0, 1, n / 2, n - 2, n - 1] {
        assert_eq!(back[i], ((i % 1000) * 2 + 1) as f64, "element {i}");
    }
    // Reduction: the sum of (i mod 1000), exact in f64.
    let total = dev
        .to_dtype(DType::F64)
        .unwrap()
        .sum_all()
        .unwrap()
        .item_f64()
        .unwrap();
    let want: f64 = (0..n).map(|i| (i % 1000) as f64).sum();
    assert_eq!(total, want);
    // Strided copy: a transposed (2, n/2) view made contiguous.
    let m = (n - 3) / 2;
    let t = dev
        .narrow(0, 0, 2 * m)
        .unwrap()
        .reshape(&[2, m as isize])
        .unwrap()
        .t()
        .unwrap();
    let c = vals(&t.contiguous().unwrap());
    for r in [0, 1, m / 3, m - 1] {
        assert_eq!(c[2 * r], (r % 1000) as f64, "row {r}");
        assert_eq!(c[2 * r + 1], ((m + r) % 1000) as f64, "row {r}");
    }
}

#[test]
fn two_threads_use_the_device_at_once() {
    let Some(_turn) = gpu() else { return };
    let work = |seed: u64| {
        move || {
            let x = Tensor::arange(0.0, 4096.0, 1.0, DType::F32, Device::Cpu)
                .unwrap()
                .add_scalar(seed as f64)
                .unwrap()
                .reshape(&[64, 64])
                .unwrap();
            let want = vals(&x.matmul(&x.t().unwrap()).unwrap().sum(&[1], false).unwrap());
            let g = x.cuda().unwrap();
            for _ in 0..50 {
                let got = vals(&g.matmul(&g.t().unwrap()).unwrap().sum(&[1], false).unwrap());
                assert_close_slices(
                    &got,
                    &want,
                    Tol::scaled(1e-5).equal_nan(),
                    &format!("thread {seed}"),
                );
            }
        }
    };
    let a = std::thread::spawn(work(1));
    let b = std::thread::spawn(work(2));
    a.join().expect("thread 1");
    b.join().expect("thread 2");
}

#[test]
fn f64_to_half_casts_round_through_f32_like_pytorch() {
    let Some(_turn) = gpu() else { return };
    // Just above half-way between two f16 (and bf16) neighbours, by less than f32 keeps:
    // PyTorch rounds to f32 first, landing exactly on the half-way point, which then goes to
    // even (torch.tensor(f16_case, dtype=torch.float64).half() is 1.0 on CPU and CUDA).
    let f16_case = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
    let bf16_case = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
    let x = Tensor::from_slice(&[f16_case, bf16_case, -f16_case, 65519.0, 1e300, f64::NAN]);
    for (dt, first_two) in [(DType::F16, [1.0, 1.00390625]), (DType::BF16, [1.0, 1.0])] {
        let want = vals(&x.to_dtype(dt).unwrap());
        assert_eq!(want[..2], first_two, "{dt} on the CPU");
        let got = vals(&x.cuda().unwrap().to_dtype(dt).unwrap());
        assert_close_slices(&got, &want, Tol::EXACT.equal_nan(), &format!("f64 -> {dt}"));
    }
}

/// The fused Adam/AdamW kernel (kernels/adam.cu) takes the same steps as the CPU's fused
/// update: f32 and f64, L2 and decoupled decay, maximize and AMSGrad, a parameter large enough
/// for many blocks and one that starts inside its buffer (a row of a matrix).
#[test]
fn fused_adam_on_cuda_matches_the_cpu() {
    use tinytorch::optim::{Adam, AdamOptions, AdamW, Optimizer};
    let Some(_turn) = gpu() else { return };
    for dtype in [DType::F32, DType::F64] {
        for (decoupled, maximize, amsgrad) in [(false, false, false), (true, true, true)] {
            let opts = AdamOptions {
                lr: 1e-2,
                weight_decay: 0.1,
                maximize,
                amsgrad,
                ..Default::default()
            };
            let make = |params: Vec<Tensor>| -> Box<dyn Optimizer> {
                match decoupled {
                    true => Box::new(AdamW::new(params, opts).unwrap()),
                    false => Box::new(Adam::new(params, opts).unwrap()),
                }
            };
            manual_seed(3);
            let big = Tensor::randn(&[70_000], dtype, Device::Cpu).unwrap();
            let matrix = Tensor::randn(&[3, 50], dtype, Device::Cpu).unwrap();
            let leaves = |d: Device| -> Vec<Tensor> {
                let row = matrix.to_device(d).unwrap().select(0, 1).unwrap();
                vec![big.to_device(d).unwrap(), row]
                    .into_iter()
                    .map(|t| t.detach().requires_grad_(true).unwrap())
                    .collect()
            };
            let (cpu, gpu_params) = (leaves(Device::Cpu), leaves(GPU));
            let (mut cpu_opt, mut gpu_opt) = (make(cpu.clone()), make(gpu_params.clone()));
            for step in 0..3 {
                for (c, g) in cpu.iter().zip(&gpu_params) {
                    let grad = c
                        .detach()
                        .sin()
                        .unwrap()
                        .mul_scalar(step as f64 + 1.0)
                        .unwrap();
                    c.set_grad(Some(grad.clone()));
                    g.set_grad(Some(grad.to_device(GPU).unwrap()));
                }
                cpu_opt.step().unwrap();
                gpu_opt.step().unwrap();
            }
            let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
            for (c, g) in cpu.iter().zip(&gpu_params) {
                let what = format!("{dtype:?} decoupled={decoupled} amsgrad={amsgrad}");
                assert_close_slices(&vals(g), &vals(c), Tol::scaled(tol).equal_nan(), &what);
            }
        }
    }
}

/// The fused cross-entropy kernel (kernels/cross_entropy.cu) gives the CPU kernel's losses
/// and gradients: f32 and f64, every reduction, class weights, label smoothing, an ignored
/// target, long rows (many threads per row) and a `(N, C, d)` input; an out-of-range target
/// is an error, not a wrong loss.
#[test]
fn fused_cross_entropy_on_cuda_matches_the_cpu() {
    use tinytorch::ops::loss::{cross_entropy, Reduction};
    let Some(_turn) = gpu() else { return };
    for dtype in [DType::F32, DType::F64] {
        for (shape, classes) in [
            (vec![7usize, 10], 10usize),
            (vec![3, 5000], 5000),
            (vec![2, 6, 3], 6),
        ] {
            for reduction in [Reduction::None, Reduction::Mean, Reduction::Sum] {
                for smoothing in [0.0, 0.2] {
                    manual_seed(11);
                    let x = Tensor::randn(&shape, dtype, Device::Cpu)
                        .unwrap()
                        .mul_scalar(3.0)
                        .unwrap();
                    let mut tshape = shape.clone();
                    tshape.remove(1);
                    let t = Tensor::randint(0, classes as i64, &tshape, Device::Cpu).unwrap();
                    let mut tv = t.to_vec::<i64>().unwrap();
                    tv[0] = -100; // ignored
                    let t = Tensor::from_vec(tv, &tshape).unwrap();
                    let w = Tensor::rand(&[classes], dtype, Device::Cpu).unwrap();
                    let run = |d: Device| {
                        // detach: on the CPU to_device returns the same handle, whose
                        // requires_grad_ would otherwise carry over to the CUDA run.
                        let x = x
                            .detach()
                            .to_device(d)
                            .unwrap()
                            .requires_grad_(true)
                            .unwrap();
                        let (t, w) = (t.to_device(d).unwrap(), w.to_device(d).unwrap());
                        let loss =
                            cross_entropy(&x, &t, Some(&w), -100, reduction, smoothing).unwrap();
                        loss.sum_all().unwrap().backward().unwrap();
                        (vals(&loss), vals(&x.grad().unwrap()))
                    };
                    let ((lc, gc), (lg, gg)) = (run(Device::Cpu), run(GPU));
                    let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
                    let what = format!("{dtype:?} {shape:?} {reduction:?} smoothing={smoothing}");
                    assert_close_slices(
                        &lg,
                        &lc,
                        Tol::scaled(tol).equal_nan(),
                        &format!("{what} loss"),
                    );
                    assert_close_slices(
                        &gg,
                        &gc,
                        Tol::scaled(tol).equal_nan(),
                        &format!("{what} grad"),
                    );
                }
            }
        }
    }
    let x = Tensor::randn(&[2, 3], DType::F32, GPU).unwrap();
    let t = Tensor::from_slice(&[0i64, 3]).cuda().unwrap();
    let err = cross_entropy(&x, &t, None, -100, Reduction::Mean, 0.0)
        .and_then(|l| l.to_vec_f64())
        .unwrap_err()
        .to_string();
    assert!(err.contains("out of range"), "{err}");
}

/// Higher-order gradients on the device: an MLP's Hessian-vector product (linear, tanh, GELU,
/// cross-entropy; `create_graph`, then the gradient of `<grad, v>`) in f64 gives the CPU's
/// values, which tests/higher_order.rs checks against PyTorch.
#[test]
fn create_graph_hessian_vector_product_matches_the_cpu() {
    use tinytorch::autograd::{grad, grad_with_options, BackwardOptions};
    use tinytorch::nn::functional::{cross_entropy, linear};
    use tinytorch::nn::Reduction;
    let Some(_turn) = gpu() else { return };
    manual_seed(5);
    let shapes: [&[usize]; 4] = [&[5, 6], &[5], &[3, 5], &[3]];
    let randn = |s: &[usize]| Tensor::randn(s, DType::F64, Device::Cpu).unwrap();
    let params: Vec<Tensor> = shapes.iter().map(|s| randn(s)).collect();
    let vs: Vec<Tensor> = shapes.iter().map(|s| randn(s)).collect();
    let x = randn(&[4, 6]);
    let y = Tensor::from_slice(&[0i64, 2, 1, 2]);
    let run = |d: Device| {
        let p: Vec<Tensor> = params
            .iter()
            .map(|t| {
                t.detach()
                    .to_device(d)
                    .unwrap()
                    .requires_grad_(true)
                    .unwrap()
            })
            .collect();
        let (x, y) = (x.to_device(d).unwrap(), y.to_device(d).unwrap());
        let h = linear(&x, &p[0], Some(&p[1])).unwrap().tanh().unwrap();
        let h = h.gelu().unwrap();
        let logits = linear(&h, &p[2], Some(&p[3])).unwrap();
        let loss = cross_entropy(&logits, &y, None, -100, Reduction::Mean, 0.0).unwrap();
        let grads = grad_with_options(&loss, None, &p, BackwardOptions::create_graph()).unwrap();
        let grads: Vec<Tensor> = grads.into_iter().map(Option::unwrap).collect();
        let mut dot: Option<Tensor> = None;
        for (g, v) in grads.iter().zip(&vs) {
            assert!(
                g.requires_grad(),
                "a create_graph gradient is in the graph on {d:?}"
            );
            let term = g.mul(&v.to_device(d).unwrap()).unwrap().sum_all().unwrap();
            dot = Some(match dot {
                Some(s) => s.add(&term).unwrap(),
                None => term,
            });
        }
        let hv = grad(&dot.unwrap(), None, &p, false).unwrap();
        let flat = |ts: Vec<Tensor>| ts.iter().flat_map(vals).collect::<Vec<f64>>();
        (
            flat(grads),
            flat(hv.into_iter().map(Option::unwrap).collect()),
        )
    };
    let ((gc, hc), (gg, hg)) = (run(Device::Cpu), run(GPU));
    assert_close_slices(&gg, &gc, Tol::scaled(1e-10).equal_nan(), "first gradient");
    assert_close_slices(
        &hg,
        &hc,
        Tol::scaled(1e-10).equal_nan(),
        "Hessian-vector product",
    );
}

/// bf16 autocast training on the device (what `train --amp bf16 --device cuda` runs): four
/// seed-cnn steps under `autocast(BF16)` follow the CPU's autocast steps within bf16's
/// precision, and the parameters stay f32.
#[test]
fn bf16_autocast_training_steps_follow_the_cpu() {
    use tinytorch::amp::autocast;
    let Some(_turn) = gpu() else { return };
    let (cpu_model, gpu_model, mut cpu_opt, mut gpu_opt) = seed_cnn_on_both(3);
    let x = Tensor::rand(&[16, 1, 28, 28], DType::F32, Device::Cpu).unwrap();
    let y = Tensor::from_vec((0..16i64).map(|i| i % 10).collect::<Vec<_>>(), &[16]).unwrap();
    let (xg, yg) = (x.cuda().unwrap(), y.cuda().unwrap());
    for step in 0..4 {
        let _amp = autocast(DType::BF16).unwrap();
        let lc = sgd_step(&cpu_model, &mut cpu_opt, &x, &y);
        let lg = sgd_step(&gpu_model, &mut gpu_opt, &xg, &yg);
        assert!(lg.is_finite(), "step {step}: loss {lg} on cuda");
        assert!(
            (lc - lg).abs() < 2e-2 * lc.abs().max(1.0),
            "step {step}: loss cpu {lc} vs cuda {lg} under bf16 autocast"
        );
    }
    for (name, p) in gpu_model.named_parameters() {
        assert_eq!(p.dtype(), DType::F32, "{name} stays f32 under autocast");
    }
    assert_parameters_close(&cpu_model, &gpu_model, 2e-2);
}

/// Whole-tensor and few-output reductions over long rows, which the device cuts into slices
/// (a first pass per slice, a second over the slices' partial results), against the CPU in
/// every dtype: sum, prod, max (with a NaN), min, mean, all and any, on contiguous,
/// transposed and sliced inputs.
#[test]
fn reductions_of_long_rows_in_slices_match_the_cpu() {
    let Some(_turn) = gpu() else { return };
    let n = 3 * 4096 + 77; // long enough to be sliced, not a multiple of a slice
    let base = Tensor::from_vec(
        (0..2 * n)
            .map(|i| ((i * 37) % 101) as f32 / 10.0 - 5.0)
            .collect::<Vec<_>>(),
        &[2, n],
    )
    .unwrap();
    let views = [
        base.clone(),
        base.t().unwrap().contiguous().unwrap().t().unwrap(),
        base.narrow(1, 5, n - 9).unwrap(),
    ];
    for dtype in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::U8,
        DType::Bool,
    ] {
        for (v, host) in views.iter().enumerate() {
            let host = host.to_dtype(dtype).unwrap();
            let dev = host.cuda().unwrap();
            // Sums of 12,000 terms in another order: f32 and half round differently.
            let tol = match dtype {
                DType::F16 | DType::BF16 => 2e-2,
                DType::F32 => 1e-3,
                _ => 1e-12,
            };
            let close = |what: &str, a: &Tensor, b: &Tensor| {
                assert_eq!(a.dtype(), b.dtype(), "{what} {dtype:?} view {v}");
                let (a, b) = (vals(a), vals(b));
                assert_close_slices(
                    &a,
                    &b,
                    Tol::scaled(tol),
                    &format!("{what} {dtype:?} view {v}"),
                );
            };
            close("sum", &host.sum_all().unwrap(), &dev.sum_all().unwrap());
            close(
                "sum dim 1",
                &host.sum(&[1], false).unwrap(),
                &dev.sum(&[1], false).unwrap(),
            );
            close("max", &host.max_all().unwrap(), &dev.max_all().unwrap());
            close("min", &host.min_all().unwrap(), &dev.min_all().unwrap());
            close("all", &host.all().unwrap(), &dev.all().unwrap());
            close("any", &host.any().unwrap(), &dev.any().unwrap());
            if dtype.is_float() {
                close("mean", &host.mean_all().unwrap(), &dev.mean_all().unwrap());
                // Factors near 1, so that the product of 12,000 stays finite.
                let near_one = host.mul_scalar(1e-4).unwrap().add_scalar(1.0).unwrap();
                let p = |t: &Tensor| t.prod(&[1], false).unwrap();
                close("prod dim 1", &p(&near_one), &p(&near_one.cuda().unwrap()));
            }
        }
    }
    // Column sums (a bias gradient): outputs unit-stride in the input, one thread each, the
    // rows cut into slices and combined by a second pass.
    let (rows, cols) = (5000, 300);
    let m = Tensor::from_vec(
        (0..rows * cols)
            .map(|i| ((i * 53) % 97) as f32 / 10.0 - 4.0)
            .collect::<Vec<_>>(),
        &[rows, cols],
    )
    .unwrap();
    for dtype in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::Bool,
    ] {
        let host = m.to_dtype(dtype).unwrap();
        let dev = host.cuda().unwrap();
        let tol = if matches!(dtype, DType::F16 | DType::BF16) {
            2e-2
        } else {
            1e-3
        };
        for (what, f) in [
            (
                "sum dim 0",
                (|t: &Tensor| t.sum(&[0], false)) as fn(&Tensor) -> _,
            ),
            ("max dim 0", |t: &Tensor| t.amax(&[0], false)),
            ("sum dims 0 of (50, 100, 300)", |t: &Tensor| {
                t.reshape(&[50, 100, 300]).unwrap().sum(&[0, 1], true)
            }),
        ] {
            let (a, b) = (f(&host).unwrap(), f(&dev).unwrap());
            assert_eq!(a.shape(), b.shape(), "{what} {dtype:?}");
            assert_close_slices(
                &vals(&b),
                &vals(&a),
                Tol::scaled(tol),
                &format!("{what} {dtype:?}"),
            );
        }
    }
    // A NaN anywhere wins max and min, as on the CPU.
    let mut v = vec![1.0f32; n];
    v[n - 3] = f32::NAN;
    let dev = Tensor::from_vec(v, &[n]).unwrap().cuda().unwrap();
    assert!(dev.max_all().unwrap().item_f64().unwrap().is_nan());
    assert!(dev.min_all().unwrap().item_f64().unwrap().is_nan());
}

/// A training step on the device makes no copy between host and device, and the host waits
/// for the device once: for the one `loss.item()` of the step. Each model runs two steps
/// first (kernels compiled, buffers cached, optimizer state made), then one counted step.
#[test]
fn a_training_step_waits_for_the_device_only_for_its_loss() {
    use tinytorch::models::gpt::{Gpt, GptConfig};
    use tinytorch::models::ModelKind;
    use tinytorch::optim::{AdamOptions, AdamW, Optimizer};
    let Some(_turn) = gpu() else { return };
    let dev = cuda::device::get(0).unwrap();
    let counted = |what: &str, step: &mut dyn FnMut() -> f64| {
        step();
        step();
        let before = dev.traffic();
        let loss = step();
        let made = dev.traffic() - before;
        assert!(loss.is_finite(), "{what}: loss {loss}");
        assert_eq!(
            made,
            cuda::Traffic {
                to_device: 0,
                to_host: 1,
                waits: 1
            },
            "{what}: one training step"
        );
    };
    for (kind, shape) in [
        ("mlp", ImageShape::MNIST),
        ("seed-cnn", ImageShape::MNIST),
        ("resnet20", ImageShape::CIFAR),
    ] {
        manual_seed(0);
        let mut model = kind.parse::<ModelKind>().unwrap().build(shape, 10).unwrap();
        model.to_device(GPU).unwrap();
        model.train();
        let opts = SgdOptions {
            lr: 0.05,
            momentum: 0.9,
            ..Default::default()
        };
        let mut opt = SGD::new(model.parameters(), opts).unwrap();
        let x = Tensor::rand(
            &[8, shape.channels, shape.height, shape.width],
            DType::F32,
            GPU,
        )
        .unwrap();
        let y = Tensor::randint(0, 10, &[8], GPU).unwrap();
        counted(kind, &mut || sgd_step(&*model, &mut opt, &x, &y));
    }
    let c = GptConfig {
        vocab_size: 128,
        block_size: 32,
        n_layer: 2,
        n_head: 2,
        n_embd: 64,
        dropout: 0.0,
        bias: true,
    };
    manual_seed(0);
    let gpt = Gpt::new(c).unwrap();
    gpt.to_device(GPU).unwrap();
    let opts = AdamOptions {
        lr: 3e-4,
        weight_decay: 0.1,
        ..Default::default()
    };
    let mut opt = AdamW::new(gpt.parameters(), opts).unwrap();
    let x = Tensor::randint(0, 128, &[4, 32], GPU).unwrap();
    let y = Tensor::randint(0, 128, &[4, 32], GPU).unwrap();
    counted("gpt", &mut || {
        opt.zero_grad();
        let loss = gpt.loss(&x, &y).unwrap().0;
        loss.backward().unwrap();
        opt.step().unwrap();
        loss.item_f64().unwrap()
    });
}

/// rand, randn and bernoulli (dropout's masks) are drawn by a kernel: no copy between host
/// and device, the moments of their distributions, the same values again after the same
/// seed, and a probability outside [0, 1] reported at the next synchronisation.
#[test]
fn random_tensors_are_drawn_on_the_device() {
    let Some(_turn) = gpu() else { return };
    let dev = cuda::device::get(0).unwrap();
    let n = 1 << 20;
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        manual_seed(5);
        let before = dev.traffic();
        let u = Tensor::rand(&[n], dtype, GPU).unwrap();
        let z = Tensor::randn(&[n], dtype, GPU).unwrap();
        let keep = Tensor::full(&[n], 0.3, dtype, GPU)
            .unwrap()
            .bernoulli()
            .unwrap();
        let made = dev.traffic() - before;
        assert_eq!((made.to_device, made.to_host), (0, 0), "{dtype:?}");
        let (u, z, keep) = (vals(&u), vals(&z), vals(&keep));
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(
            u.iter().all(|&x| (0.0..1.0).contains(&x)),
            "{dtype:?}: rand outside [0, 1)"
        );
        assert!(
            (mean(&u) - 0.5).abs() < 5e-3,
            "{dtype:?}: rand mean {}",
            mean(&u)
        );
        let var = mean(&z.iter().map(|x| x * x).collect::<Vec<_>>());
        assert!(
            mean(&z).abs() < 5e-3 && (var - 1.0).abs() < 1e-2,
            "{dtype:?}: randn {} {var}",
            mean(&z)
        );
        assert!(keep.iter().all(|&x| x == 0.0 || x == 1.0));
        assert!(
            (mean(&keep) - 0.3).abs() < 5e-3,
            "{dtype:?}: bernoulli mean {}",
            mean(&keep)
        );
        manual_seed(5);
        assert_eq!(
            vals(&Tensor::rand(&[n], dtype, GPU).unwrap()),
            u,
            "{dtype:?}: reseeded"
        );
    }
    let bad = Tensor::full(&[4], 1.5, DType::F32, GPU).unwrap();
    let err = bad
        .bernoulli()
        .and_then(|t| t.to_vec_f64())
        .unwrap_err()
        .to_string();
    assert!(err.contains("bernoulli"), "{err}");
}
