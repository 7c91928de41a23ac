//! The CUDA backend end to end: device moves, errors, the caching allocator, index errors
//! and a training step against the CPU. Without a GPU only the error paths run; the rest
//! print that they were skipped.
#![cfg(feature = "cuda")]

use tinytorch::backend::cuda;
use tinytorch::models::{seed_cnn, ImageShape};
use tinytorch::nn::Module;
use tinytorch::optim::{SgdOptions, SGD};
use tinytorch::{manual_seed, DType, Device, Tensor};

const GPU: Device = Device::Cuda(0);

fn gpu() -> bool {
    let ok = cuda::is_available();
    if !ok {
        println!("skipped: no CUDA device");
    }
    ok
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
    if !gpu() {
        return;
    }
    let x = Tensor::arange(-5.0, 7.0, 1.0, DType::F64, Device::Cpu).unwrap();
    for dt in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
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
    if !gpu() {
        return;
    }
    let a = Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap();
    let b = a.cuda().unwrap();
    let err = a.add(&b).unwrap_err().to_string();
    assert!(err.contains("cpu") && err.contains("cuda:0"), "{err}");
}

#[test]
fn out_of_range_index_is_reported_at_synchronisation() {
    if !gpu() {
        return;
    }
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
    if !gpu() {
        return;
    }
    manual_seed(0);
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
    let x = Tensor::rand(&[8, 1, 28, 28], DType::F32, Device::Cpu).unwrap();
    let y = Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5, 6, 7]);
    let step = |m: &dyn Module, opt: &mut SGD, x: &Tensor, y: &Tensor| -> f64 {
        tinytorch::train::train_step(m, opt, x, y).unwrap().0
    };
    let opts = SgdOptions {
        lr: 0.05,
        ..Default::default()
    };
    let mut cpu_opt = SGD::new(cpu_model.parameters(), opts).unwrap();
    let mut gpu_opt = SGD::new(gpu_model.parameters(), opts).unwrap();
    let (xg, yg) = (x.cuda().unwrap(), y.cuda().unwrap());
    let dev = cuda::device::get(0).unwrap();
    let mut allocations = Vec::new();
    for _ in 0..4 {
        let lc = step(&cpu_model, &mut cpu_opt, &x, &y);
        let lg = step(&gpu_model, &mut gpu_opt, &xg, &yg);
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
    for ((name, c), (_, g)) in cpu_model
        .named_parameters()
        .iter()
        .zip(gpu_model.named_parameters())
    {
        let (c, g) = (c.to_vec_f64().unwrap(), g.to_vec_f64().unwrap());
        let worst = c
            .iter()
            .zip(&g)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-4, "{name}: max difference {worst}");
    }
}
