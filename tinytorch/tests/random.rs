//! Random tensors: determinism, generator state round-trips, distributions, errors.
//! Only `default_generator_is_seedable` touches the process-wide generator (tests run in
//! parallel); the others use their own `Generator`.

use tinytorch::tensor::{get_rng_state, set_rng_state};
use tinytorch::{manual_seed, DType, Device, Generator, Tensor};

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n)
}

#[test]
fn default_generator_is_seedable() {
    manual_seed(42);
    let a = Tensor::rand(&[5], DType::F32, Device::Cpu)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let state = get_rng_state();
    let b = Tensor::randn(&[5], DType::F32, Device::Cpu)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    manual_seed(42);
    let a2 = Tensor::rand(&[5], DType::F32, Device::Cpu)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(a, a2);
    set_rng_state(&state);
    let b2 = Tensor::randn(&[5], DType::F32, Device::Cpu)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(b, b2);
    let x = Tensor::zeros(&[2, 3], DType::F64, Device::Cpu).unwrap();
    let r = x.rand_like().unwrap();
    assert_eq!((r.shape(), r.dtype()), (&[2usize, 3][..], DType::F64));
    let r = x.randn_like().unwrap();
    assert_eq!((r.shape(), r.dtype()), (&[2usize, 3][..], DType::F64));
    let i = Tensor::randint(0, 10, &[4], Device::Cpu).unwrap();
    assert_eq!(i.dtype(), DType::I64);
    let p = Tensor::full(&[3], 1.0, DType::F32, Device::Cpu).unwrap();
    assert_eq!(
        p.bernoulli().unwrap().to_vec::<f32>().unwrap(),
        vec![1.0; 3]
    );
}

#[test]
fn same_seed_same_stream_and_state_round_trips() {
    let mut g1 = Generator::new(7);
    let mut g2 = Generator::new(7);
    let a = Tensor::randn_with(&[100], DType::F64, Device::Cpu, &mut g1)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let b = Tensor::randn_with(&[100], DType::F64, Device::Cpu, &mut g2)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(a, b);
    let mut g3 = Generator::new(8);
    let c = Tensor::randn_with(&[100], DType::F64, Device::Cpu, &mut g3)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_ne!(a, c);
    // Save mid-stream, draw, restore into a fresh generator, draw again.
    let state = g1.state();
    assert_eq!(state.seed, 7);
    let next = Tensor::rand_with(&[50], DType::F32, Device::Cpu, &mut g1)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let mut restored = Generator::new(0);
    restored.set_state(&state);
    let again = Tensor::rand_with(&[50], DType::F32, Device::Cpu, &mut restored)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(next, again);
    // manual_seed restarts the stream.
    g1.manual_seed(7);
    assert_eq!(g1.initial_seed(), 7);
    let a3 = Tensor::randn_with(&[100], DType::F64, Device::Cpu, &mut g1)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(a, a3);
    // Large tensors are generated in a fixed order too.
    let big1 =
        Tensor::rand_with(&[100_000], DType::F32, Device::Cpu, &mut Generator::new(3)).unwrap();
    let big2 =
        Tensor::rand_with(&[100_000], DType::F32, Device::Cpu, &mut Generator::new(3)).unwrap();
    assert_eq!(big1.to_vec::<f32>().unwrap(), big2.to_vec::<f32>().unwrap());
}

#[test]
fn distributions_have_the_right_moments() {
    let mut g = Generator::new(1);
    let n = 200_000;
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let u = Tensor::rand_with(&[n], dtype, Device::Cpu, &mut g).unwrap();
        assert_eq!(u.dtype(), dtype);
        let v = u.to_vec_f64().unwrap();
        assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)), "{dtype}");
        let (m, var) = mean_var(&v);
        assert!(
            (m - 0.5).abs() < 0.01 && (var - 1.0 / 12.0).abs() < 0.005,
            "{dtype}: {m} {var}"
        );
        let z = Tensor::randn_with(&[n], dtype, Device::Cpu, &mut g)
            .unwrap()
            .to_vec_f64()
            .unwrap();
        let (m, var) = mean_var(&z);
        assert!(
            m.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "{dtype}: {m} {var}"
        );
    }
    let r = Tensor::randint_with(-3, 4, &[n], Device::Cpu, &mut g)
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    assert!(r.iter().all(|&x| (-3..4).contains(&x)));
    for k in -3..4 {
        let frac = r.iter().filter(|&&x| x == k).count() as f64 / n as f64;
        assert!((frac - 1.0 / 7.0).abs() < 0.01, "{k}: {frac}");
    }
    let p = Tensor::from_vec(vec![0.0f32, 1.0, 0.3], &[1, 3])
        .unwrap()
        .expand(&[n as isize, 3])
        .unwrap();
    let b = p.bernoulli_with(&mut g).unwrap();
    assert_eq!((b.shape(), b.dtype()), (&[n, 3][..], DType::F32));
    let s = b.sum(&[0], false).unwrap().to_vec_f64().unwrap();
    assert_eq!(s[0], 0.0);
    assert_eq!(s[1], n as f64);
    assert!((s[2] / n as f64 - 0.3).abs() < 0.01, "{}", s[2]);
}

#[test]
fn shapes_empty_and_scalar() {
    let mut g = Generator::new(2);
    assert_eq!(
        Tensor::rand_with(&[], DType::F32, Device::Cpu, &mut g)
            .unwrap()
            .shape(),
        &[] as &[usize]
    );
    assert_eq!(
        Tensor::randn_with(&[2, 0, 3], DType::F32, Device::Cpu, &mut g)
            .unwrap()
            .numel(),
        0
    );
    assert_eq!(
        Tensor::randint_with(0, 1, &[3], Device::Cpu, &mut g)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![0; 3]
    );
}

#[test]
fn errors() {
    let mut g = Generator::new(2);
    let msg = |r: tinytorch::Result<Tensor>| r.unwrap_err().to_string();
    assert!(msg(Tensor::rand_with(&[2], DType::I64, Device::Cpu, &mut g)).contains("int64"));
    assert!(msg(Tensor::randn_with(&[2], DType::Bool, Device::Cpu, &mut g)).contains("bool"));
    assert!(msg(Tensor::randint_with(3, 3, &[2], Device::Cpu, &mut g)).contains("from=3"));
    let p = Tensor::from_vec(vec![0.5f32, 1.5], &[2]).unwrap();
    assert!(msg(p.bernoulli_with(&mut g)).contains("1.5"));
    let p = Tensor::from_vec(vec![f32::NAN], &[1]).unwrap();
    assert!(p.bernoulli_with(&mut g).is_err());
    let p = Tensor::from_vec(vec![1i64], &[1]).unwrap();
    assert!(msg(p.bernoulli_with(&mut g)).contains("int64"));
}
