//! `parallel::use_current_thread`: the calling thread becomes compute thread 0 of rayon's
//! global pool. Alone in its test binary, since the global pool is built once per process.

use tinytorch::{DType, Device, Tensor};

#[test]
fn the_calling_thread_joins_the_pool_and_ops_from_it_match_a_pool_thread() {
    // Three threads whatever the machine: with one, the call declines (see its docs).
    std::env::set_var("RAYON_NUM_THREADS", "3");
    assert_eq!(rayon::current_thread_index(), None);
    assert!(tinytorch::parallel::use_current_thread().unwrap());
    assert_eq!(rayon::current_num_threads(), 3);
    assert_eq!(rayon::current_thread_index(), Some(0));
    // Parallel kernels (a split matmul, an elementwise op above the threshold) called from
    // this thread give what they give on another compute thread.
    let a = Tensor::randn(&[300, 200], DType::F32, Device::Cpu).unwrap();
    let b = Tensor::randn(&[200, 150], DType::F32, Device::Cpu).unwrap();
    let here = a
        .matmul(&b)
        .unwrap()
        .relu()
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let other = std::thread::scope(|s| {
        s.spawn(|| {
            tinytorch::parallel::run(|| a.matmul(&b).unwrap().relu().unwrap())
                .to_vec::<f32>()
                .unwrap()
        })
        .join()
        .unwrap()
    });
    assert_eq!(here, other);
    // A second call cannot rebuild the pool and says so.
    let err = tinytorch::parallel::use_current_thread().unwrap_err();
    assert!(err.to_string().contains("use_current_thread"), "{err}");
}
