//! The NCCL door (`backend::nccl`) on one GPU without MPI: a one-rank communicator made from
//! a fresh unique id, each collective enqueued after the kernel that writes its input (the
//! device's one stream orders them) and read back on the host, every dtype NCCL carries, and
//! the errors for what it does not (a bad id, a dtype it has no type for). With one rank an
//! all-reduce, broadcast, all-gather or reduce-scatter returns its input, so each result is
//! checked exactly; the many-rank arithmetic is `tests/distributed.rs`'s (mpirun, one rank
//! per GPU), which these machines cannot start. Without libnccl or a GPU each test prints
//! that it was skipped.
#![cfg(feature = "nccl")]

mod common;

use std::sync::MutexGuard;
use std::time::{Duration, Instant};
use tinytorch::backend::nccl::{self, NcclComm, NcclDone, NcclOp};
use tinytorch::{DType, Device, Tensor};

const GPU: Device = Device::Cuda(0);

/// Some(guard) when NCCL and a GPU are present; the guard makes the tests take the device
/// in turn.
fn gpu() -> Option<MutexGuard<'static, ()>> {
    common::gpu_turn(nccl::is_available(), " (or no libnccl)")
}

fn one_rank() -> NcclComm {
    let id = nccl::unique_id().unwrap();
    assert_eq!(id.len(), nccl::UNIQUE_ID_BYTES);
    NcclComm::init(0, 0, 1, &id).unwrap()
}

/// Poll until the collective is done (a hang fails the test instead of blocking CI).
fn wait(done: NcclDone) {
    let start = Instant::now();
    while !done.is_complete().unwrap() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "collective not done in 30 s"
        );
        std::thread::yield_now();
    }
}

/// A tensor on the GPU written by a kernel just before the collective (an add on the
/// stream), so a collective that ran ahead of it would read the wrong values.
fn input(n: usize, dtype: DType) -> (Tensor, Vec<f64>) {
    let host: Vec<f64> = (0..n).map(|i| ((i * 37 + 11) % 97) as f64).collect();
    let base = Tensor::from_vec(host.clone(), &[n])
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .to_device(GPU)
        .unwrap();
    let one = Tensor::ones(&[n], dtype, GPU).unwrap();
    let x = base.add(&one).unwrap();
    (x, host.iter().map(|v| v + 1.0).collect())
}

fn host(t: &Tensor) -> Vec<f64> {
    t.to_device(Device::Cpu)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

const CARRIED: [DType; 6] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::BF16,
    DType::I64,
    DType::U8,
];

#[test]
fn one_rank_collectives_return_their_input_in_every_dtype() {
    let Some(_gpu) = gpu() else { return };
    let comm = one_rank();
    assert_eq!(comm.ordinal(), 0);
    // 1 element, an odd count and more than NCCL's one-chunk size (4 MiB of f64).
    for n in [1usize, 1001, 600_000] {
        for dtype in CARRIED {
            let (x, want) = input(n, dtype);
            let what = format!("{n} x {dtype}");
            for op in [NcclOp::Sum, NcclOp::Max] {
                let out = Tensor::zeros(&[n], dtype, GPU).unwrap();
                // SAFETY: both tensors hold n elements of dtype on GPU 0 and outlive `wait`.
                let done = unsafe {
                    comm.all_reduce(x.data_ptr() as u64, out.data_ptr() as u64, n, dtype, op)
                }
                .unwrap();
                wait(done);
                assert_eq!(host(&out), want, "all_reduce {op:?} {what}");
            }
            let out = Tensor::zeros(&[n], dtype, GPU).unwrap();
            // SAFETY: as above.
            let done =
                unsafe { comm.broadcast(x.data_ptr() as u64, out.data_ptr() as u64, n, dtype, 0) }
                    .unwrap();
            wait(done);
            assert_eq!(host(&out), want, "broadcast {what}");

            let out = Tensor::zeros(&[n], dtype, GPU).unwrap();
            // SAFETY: as above (world 1: the output holds n * 1 elements).
            let done =
                unsafe { comm.all_gather(x.data_ptr() as u64, out.data_ptr() as u64, n, dtype) }
                    .unwrap();
            wait(done);
            assert_eq!(host(&out), want, "all_gather {what}");

            let out = Tensor::zeros(&[n], dtype, GPU).unwrap();
            // SAFETY: as above.
            let done = unsafe {
                comm.reduce_scatter(
                    x.data_ptr() as u64,
                    out.data_ptr() as u64,
                    n,
                    dtype,
                    NcclOp::Sum,
                )
            }
            .unwrap();
            wait(done);
            assert_eq!(host(&out), want, "reduce_scatter {what}");
        }
    }
    comm.async_error().unwrap();
}

#[test]
fn in_place_all_reduce_and_a_kernel_after_it_see_its_result() {
    let Some(_gpu) = gpu() else { return };
    let comm = one_rank();
    let (x, want) = input(4096, DType::F32);
    // SAFETY: send and receive are the same live tensor, as DDP's in-place buckets.
    let done = unsafe {
        comm.all_reduce(
            x.data_ptr() as u64,
            x.data_ptr() as u64,
            4096,
            DType::F32,
            NcclOp::Sum,
        )
    }
    .unwrap();
    // No wait: the next kernel is ordered after the collective on the stream.
    let doubled = x.mul_scalar(2.0).unwrap();
    wait(done);
    let want2: Vec<f64> = want.iter().map(|v| v * 2.0).collect();
    assert_eq!(host(&doubled), want2);
    assert_eq!(host(&x), want);
}

#[test]
fn bad_ids_and_uncarried_dtypes_are_errors() {
    let Some(_gpu) = gpu() else { return };
    let e = NcclComm::init(0, 0, 1, &[0u8; 7])
        .err()
        .expect("a short id");
    assert!(e.to_string().contains("128 bytes, got 7"), "{e}");
    let comm = one_rank();
    let x = Tensor::ones(&[4], DType::Bool, GPU).unwrap();
    // SAFETY: never enqueued: the dtype is refused first.
    let e = unsafe {
        comm.all_reduce(
            x.data_ptr() as u64,
            x.data_ptr() as u64,
            4,
            DType::Bool,
            NcclOp::Sum,
        )
    }
    .err()
    .expect("bool is not carried");
    assert!(
        e.to_string().contains("all_reduce") && e.to_string().contains("bool"),
        "{e}"
    );
    assert!(!nccl::carries(DType::Bool));
    comm.async_error().unwrap();
}
