//! Distributed training over MPI, on 2 ranks of this machine: each test launches this test
//! binary under `mpirun -np 2`, running one `#[ignore]`d worker test per rank (the workers
//! only make sense inside such a job). Needs Open MPI (`mpirun`), which CI installs.

#![cfg(feature = "mpi")]

mod common;
use common::max_scaled_diff_named;

use std::process::Command;
use std::time::{Duration, Instant};
use tinytorch::distributed::{
    convert_sync_batchnorm, init_process_group, init_process_group_with, Backend, DdpOptions,
    DistributedDataParallel, ProcessGroup, ReduceOp,
};
use tinytorch::nn::{
    AdaptiveAvgPool2d, BatchNorm, Conv2d, Flatten, Linear, Module, ReLU, Sequential,
};
use tinytorch::ops::ConvPadding;
use tinytorch::optim::{Optimizer, SgdOptions, SGD};
use tinytorch::{manual_seed, DType, Device, Tensor};

/// The longest a job may take: past it, mpirun is killed and the test fails with what the
/// job printed, instead of hanging the suite (every job here takes seconds).
const JOB_LIMIT: Duration = Duration::from_secs(90);

/// Run worker test `name` on `ranks` processes under mpirun; its output (stdout, then
/// stderr), whether it succeeded, and how long it took.
fn mpirun(ranks: usize, name: &str) -> (bool, String, Duration) {
    let exe = std::env::current_exe().expect("the test binary");
    let log = |stream: &str| {
        std::env::temp_dir().join(format!("tinytorch-{name}-{}.{stream}", std::process::id()))
    };
    let (out_path, err_path) = (log("out"), log("err"));
    let started = Instant::now();
    let mut job = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &ranks.to_string(),
        ])
        .arg(exe)
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        // One compute thread per rank: the ranks share this machine's cores.
        .env("RAYON_NUM_THREADS", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("mpirun (Open MPI) must be installed: apt-get install openmpi-bin libopenmpi-dev");
    let status = loop {
        if let Some(status) = job.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > JOB_LIMIT {
            let _ = job.kill();
            let _ = job.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut text = String::new();
    for path in [&out_path, &err_path] {
        text += &std::fs::read_to_string(path).unwrap_or_default();
        let _ = std::fs::remove_file(path);
    }
    if status.is_none() {
        text += &format!("\n[killed: mpirun ran past {JOB_LIMIT:?}]");
    }
    (status.is_some_and(|s| s.success()), text, started.elapsed())
}

/// Launch `worker` on 2 ranks and require both to pass.
fn run_on_two_ranks(worker: &str) {
    let (ok, text, _) = mpirun(2, worker);
    assert!(ok, "mpirun -np 2 {worker} failed:\n{text}");
    // libtest's own summary lines interleave between the ranks ("test result: okok."), so
    // each worker prints one line of its own when it gets to its end.
    for rank in 0..2 {
        assert!(
            text.contains(&finished(worker, rank)),
            "rank {rank} must run {worker} to its end:\n{text}"
        );
    }
}

/// The line a worker prints when it reached its end on `rank`.
fn finished(worker: &str, rank: usize) -> String {
    format!("{worker} finished on rank {rank}")
}

fn group() -> ProcessGroup {
    init_process_group_with(Backend::Mpi, Duration::from_secs(60)).expect("init")
}

// ---- collectives ----------------------------------------------------------------------

#[test]
fn collectives_match_their_definitions_on_two_ranks() {
    run_on_two_ranks("worker_collectives");
}

/// Rank r's input to a collective: `1 + i + 10 r` (small integers, exact in every dtype).
fn input(rank: usize, shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (1 + i % 7 + 10 * rank) as f64).collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

/// Every collective on every dtype against its definition, on `g`'s device and any number
/// of ranks (inputs: [`input`] of each rank).
fn check_collectives(g: &ProcessGroup) {
    let (rank, world, device) = (g.rank(), g.world_size(), g.device());
    // A tensor on the group's device with its own storage (the collectives write in place).
    let own = |t: &Tensor| t.contiguous_copy().unwrap().to_device(device).unwrap();
    for dtype in DType::ALL {
        for shape in [&[3usize, 4][..], &[5], &[], &[0, 3]] {
            let inputs: Vec<Tensor> = (0..world).map(|r| input(r, shape, dtype)).collect();
            let f64s: Vec<Vec<f64>> = inputs.iter().map(|t| t.to_vec_f64().unwrap()).collect();
            let n = f64s[0].len();
            let sum: Vec<f64> = (0..n).map(|i| f64s.iter().map(|v| v[i]).sum()).collect();
            let max: Vec<f64> = (0..n)
                .map(|i| f64s.iter().map(|v| v[i]).fold(f64::MIN, f64::max))
                .collect();
            // Sum: bool is a logical or, u8 wraps as PyTorch's does.
            let t = own(&inputs[rank]);
            g.all_reduce(&t, ReduceOp::Sum).unwrap();
            let want: Vec<f64> = match dtype {
                DType::Bool => max.clone(),
                DType::U8 => sum.iter().map(|s| (*s as u64 % 256) as f64).collect(),
                _ => sum.clone(),
            };
            assert_eq!(
                t.to_vec_f64().unwrap(),
                want,
                "all_reduce sum {dtype} {shape:?}"
            );
            assert_eq!(t.shape(), shape);
            assert_eq!(t.dtype(), dtype);
            let t = own(&inputs[rank]);
            g.all_reduce(&t, ReduceOp::Max).unwrap();
            assert_eq!(
                t.to_vec_f64().unwrap(),
                max,
                "all_reduce max {dtype} {shape:?}"
            );
            if dtype.is_float() {
                let t = own(&inputs[rank]);
                g.all_reduce(&t, ReduceOp::Avg).unwrap();
                let avg: Vec<f64> = sum.iter().map(|s| s / world as f64).collect();
                assert_eq!(
                    t.to_vec_f64().unwrap(),
                    avg,
                    "all_reduce avg {dtype} {shape:?}"
                );
            } else {
                let e = g
                    .all_reduce(&own(&inputs[rank]), ReduceOp::Avg)
                    .unwrap_err();
                assert!(e.to_string().contains("Avg needs a floating dtype"), "{e}");
            }
            // Broadcast from the last rank.
            let t = own(&inputs[rank]);
            g.broadcast(&t, world - 1).unwrap();
            assert_eq!(
                t.to_vec_f64().unwrap(),
                f64s[world - 1],
                "broadcast {dtype} {shape:?}"
            );
            // All-gather: every rank's tensor, in rank order.
            let parts = g.all_gather(&own(&inputs[rank])).unwrap();
            assert_eq!(parts.len(), world);
            for (r, p) in parts.iter().enumerate() {
                assert_eq!(p.shape(), shape);
                assert_eq!(p.dtype(), dtype);
                assert_eq!(
                    p.to_vec_f64().unwrap(),
                    f64s[r],
                    "all_gather {dtype} {shape:?}"
                );
            }
        }
        // Reduce-scatter: rank r gets rows [2r, 2r + 2) of the sum (2 rows, 6 elements).
        let shape = [2 * world, 3];
        let out = g
            .reduce_scatter(&own(&input(rank, &shape, dtype)), ReduceOp::Sum)
            .unwrap();
        let all: Vec<Vec<f64>> = (0..world)
            .map(|r| input(r, &shape, dtype).to_vec_f64().unwrap())
            .collect();
        let want: Vec<f64> = (6 * rank..6 * rank + 6)
            .map(|i| match dtype {
                DType::Bool => all.iter().map(|v| v[i]).fold(0.0, f64::max),
                _ => all.iter().map(|v| v[i]).sum(),
            })
            .collect();
        assert_eq!(out.shape(), &[2, 3]);
        assert_eq!(out.to_vec_f64().unwrap(), want, "reduce_scatter {dtype}");
    }
    // A non-contiguous input is reduced in place through its strides.
    let base = own(&input(rank, &[3, 4], DType::F32));
    let t = base.transpose(0, 1).unwrap();
    g.all_reduce(&t, ReduceOp::Sum).unwrap();
    let want: Vec<f64> = (0..world)
        .map(|r| input(r, &[3, 4], DType::F32).to_vec_f64().unwrap())
        .fold(vec![0.0; 12], |acc, v| {
            acc.iter().zip(v).map(|(a, b)| a + b).collect()
        });
    assert_eq!(base.to_vec_f64().unwrap(), want);
    g.barrier().unwrap();
}

#[test]
#[ignore = "a worker: run by collectives_match_their_definitions_on_two_ranks under mpirun"]
fn worker_collectives() {
    let g = group();
    let rank = g.rank();
    assert_eq!(g.world_size(), 2);
    check_collectives(&g);

    // Mistakes: an error on every rank that names both ranks' calls, not a hang.
    let shape: &[usize] = if rank == 0 { &[4, 3] } else { &[4, 2] };
    let e = g
        .all_reduce(
            &Tensor::zeros(shape, DType::F32, Device::Cpu).unwrap(),
            ReduceOp::Sum,
        )
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("all_reduce")
            && msg.contains("rank 0: float32 [4, 3], op Sum")
            && msg.contains("rank 1: float32 [4, 2], op Sum"),
        "{msg}"
    );
    let dtype = if rank == 0 { DType::F32 } else { DType::F64 };
    let e = g
        .broadcast(&Tensor::zeros(&[2], dtype, Device::Cpu).unwrap(), 0)
        .unwrap_err();
    assert!(e.to_string().contains("rank 1: float64 [2], src 0"), "{e}");
    let e = g
        .broadcast(&Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap(), 2)
        .unwrap_err();
    assert!(e.to_string().contains("rank 2 is out of range"), "{e}");
    let e = g
        .reduce_scatter(
            &Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap(),
            ReduceOp::Sum,
        )
        .unwrap_err();
    assert!(e.to_string().contains("does not split into 2"), "{e}");
    // The group still works after the refused calls.
    let t = Tensor::ones(&[2], DType::F32, Device::Cpu).unwrap();
    g.all_reduce(&t, ReduceOp::Sum).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
    println!("{}", finished("worker_collectives", rank));
}

// ---- DDP ------------------------------------------------------------------------------

#[test]
fn ddp_on_two_ranks_of_batch_32_equals_one_rank_of_batch_64() {
    run_on_two_ranks("worker_ddp_equivalence");
}

fn mlp() -> Box<dyn Module> {
    Box::new(Sequential::new(vec![
        Box::new(Flatten::default()),
        Box::new(Linear::new(144, 32, true).unwrap()),
        Box::new(ReLU::new()),
        Box::new(Linear::new(32, 10, true).unwrap()),
    ]))
}

/// The seed CNN's layers (narrower, for a quick test) with BatchNorm after each convolution.
fn cnn_with_batch_norm() -> Box<dyn Module> {
    let conv = |cin, cout| {
        Conv2d::new(
            cin,
            cout,
            [5, 5],
            [1, 1],
            ConvPadding::Explicit(2, 2),
            [1, 1],
            1,
            true,
        )
        .unwrap()
    };
    Box::new(Sequential::new(vec![
        Box::new(conv(1, 8)),
        Box::new(BatchNorm::new(8).unwrap()),
        Box::new(ReLU::new()),
        Box::new(conv(8, 16)),
        Box::new(BatchNorm::new(16).unwrap()),
        Box::new(ReLU::new()),
        Box::new(AdaptiveAvgPool2d::new([1, 1])),
        Box::new(Flatten::default()),
        Box::new(Linear::new(16, 32, true).unwrap()),
        Box::new(ReLU::new()),
        Box::new(Linear::new(32, 10, true).unwrap()),
    ]))
}

fn sgd(model: &dyn Module) -> SGD {
    let opts = SgdOptions {
        lr: 0.05,
        momentum: 0.9,
        ..Default::default()
    };
    SGD::new(model.parameters(), opts).unwrap()
}

/// Global batch `step` of 64 images 1x12x12 and labels, the same on every rank.
fn batch(step: u64) -> (Tensor, Tensor) {
    manual_seed(1000 + step);
    let x = Tensor::randn(&[64, 1, 12, 12], DType::F32, Device::Cpu).unwrap();
    let y = Tensor::randint(0, 10, &[64], Device::Cpu).unwrap();
    (x, y)
}

fn step(model: &dyn Module, opt: &mut SGD, x: &Tensor, y: &Tensor) {
    opt.zero_grad();
    let loss = tinytorch::nn::functional::cross_entropy(
        &model.forward(x).unwrap(),
        y,
        None,
        -100,
        tinytorch::nn::Reduction::Mean,
        0.0,
    )
    .unwrap();
    loss.backward().unwrap();
    opt.step().unwrap();
}

fn check_equivalence(g: &ProcessGroup, build: fn() -> Box<dyn Module>, what: &str) {
    let rank = g.rank();
    // The reference: one process, the whole batch of 64, from rank 0's initial weights.
    manual_seed(7);
    let reference = build();
    // Each rank starts from different weights: DDP must broadcast rank 0's.
    manual_seed(7 + rank as u64);
    let model = convert_sync_batchnorm(build(), g);
    let ddp = DistributedDataParallel::new(model, g, DdpOptions::default()).unwrap();
    let (mut opt, mut ref_opt) = (sgd(&ddp), sgd(reference.as_ref()));
    for s in 0..20 {
        let (x, y) = batch(s);
        step(reference.as_ref(), &mut ref_opt, &x, &y);
        let mine = |t: &Tensor| t.narrow(0, 32 * rank as isize, 32).unwrap();
        step(&ddp, &mut opt, &mine(&x), &mine(&y));
    }
    let params = max_scaled_diff_named(
        &ddp.module().named_parameters(),
        &reference.named_parameters(),
    );
    let buffers = max_scaled_diff_named(&ddp.module().named_buffers(), &reference.named_buffers());
    println!("rank {rank} {what}: largest parameter difference {params:.2e}, buffer {buffers:.2e}");
    assert!(params < 1e-4, "{what}: parameters differ by {params}");
    assert!(buffers < 1e-4, "{what}: buffers differ by {buffers}");
}

#[test]
#[ignore = "a worker: run by ddp_on_two_ranks_of_batch_32_equals_one_rank_of_batch_64 under mpirun"]
fn worker_ddp_equivalence() {
    let g = group();
    check_equivalence(&g, mlp, "mlp");
    check_equivalence(&g, cnn_with_batch_norm, "cnn with SyncBatchNorm");
    println!("{}", finished("worker_ddp_equivalence", g.rank()));
}

#[test]
fn ddp_no_sync_buckets_and_misuse_on_two_ranks() {
    run_on_two_ranks("worker_ddp_edges");
}

#[test]
#[ignore = "a worker: run by ddp_no_sync_buckets_and_misuse_on_two_ranks under mpirun"]
fn worker_ddp_edges() {
    let g = group();
    let rank = g.rank();
    // Tiny buckets: one per parameter, started last layer first.
    manual_seed(3);
    let ddp = DistributedDataParallel::new(
        mlp(),
        &g,
        DdpOptions {
            bucket_cap_mb: 1e-6,
            ..Default::default()
        },
    )
    .unwrap();
    let names = ddp.buckets();
    assert_eq!(names.len(), 4);
    assert_eq!(names[0], vec!["3.bias".to_string()]);
    assert_eq!(names[3], vec!["1.weight".to_string()]);

    // no_sync: two local backward passes accumulate, the third (synchronised) averages all.
    let (x, y) = batch(0);
    let mine = |t: &Tensor| t.narrow(0, 32 * rank as isize, 32).unwrap();
    let loss = |m: &dyn Module| {
        tinytorch::nn::functional::cross_entropy(
            &m.forward(&mine(&x)).unwrap(),
            &mine(&y),
            None,
            -100,
            tinytorch::nn::Reduction::Mean,
            0.0,
        )
        .unwrap()
    };
    ddp.zero_grad();
    {
        let _local = ddp.no_sync();
        loss(&ddp).backward().unwrap();
        loss(&ddp).backward().unwrap();
    }
    let local = ddp.module().named_parameters()[0].1.grad().unwrap();
    // Each rank's accumulated gradient differs from the other's before the synchronised step.
    let both = g.all_gather(&local.contiguous().unwrap()).unwrap();
    assert!(
        max_scaled_diff_named(
            &[("g".into(), both[0].clone())],
            &[("g".into(), both[1].clone())]
        ) > 0.0
    );
    loss(&ddp).backward().unwrap();
    let synced = ddp.module().named_parameters()[0].1.grad().unwrap();
    let both = g.all_gather(&synced.contiguous().unwrap()).unwrap();
    assert_eq!(
        both[0].to_vec::<f32>().unwrap(),
        both[1].to_vec::<f32>().unwrap(),
        "averaged gradients are equal on every rank"
    );

    // A parameter left out of the loss: the next forward says which.
    manual_seed(3);
    let ddp = DistributedDataParallel::new(mlp(), &g, DdpOptions::default()).unwrap();
    let w = ddp.module().named_parameters()[0].1.clone();
    w.sum_all().unwrap().backward().unwrap();
    let e = ddp.forward(&mine(&x)).unwrap_err().to_string();
    assert!(
        e.contains("finished reduction") && e.contains("1.bias") && e.contains("3.weight"),
        "{e}"
    );

    // Different models on the two ranks: an error on both, not a hang.
    let model: Box<dyn Module> = if rank == 0 {
        mlp()
    } else {
        Box::new(Linear::new(3, 2, true).unwrap())
    };
    let e = DistributedDataParallel::new(model, &g, DdpOptions::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("different models")
            && e.contains("rank 0: 4 parameters")
            && e.contains("rank 1: 2 parameters"),
        "{e}"
    );
    println!("{}", finished("worker_ddp_edges", rank));
}

// ---- a rank that leaves ---------------------------------------------------------------

#[test]
fn a_rank_that_leaves_early_gives_the_others_an_error_not_a_hang() {
    let (ok, text, _) = mpirun(2, "worker_early_exit");
    // The error comes when the 3-second timeout runs out, not later. (How long mpirun then
    // takes to end the job is Open MPI's: once, under load, its own shutdown deadlocked in
    // PMIx_server_finalize after both ranks had exited; JOB_LIMIT ends that.)
    assert!(
        text.contains("rank 0 got the error: all_reduce: distributed error: timed out after 3."),
        "{text}"
    );
    assert!(!ok, "the job ends in failure:\n{text}");
}

#[test]
#[ignore = "a worker: run by a_rank_that_leaves_early_gives_the_others_an_error_not_a_hang under mpirun"]
fn worker_early_exit() {
    let g = init_process_group_with(Backend::Mpi, Duration::from_secs(3)).unwrap();
    if g.rank() == 1 {
        return; // leaves without joining the collective (and finalises MPI)
    }
    let t = Tensor::ones(&[4], DType::F32, Device::Cpu).unwrap();
    let e = g.all_reduce(&t, ReduceOp::Sum).unwrap_err();
    println!("rank 0 got the error: {e}");
    let again = g.barrier().unwrap_err().to_string();
    assert!(again.contains("unusable"), "{again}");
}

#[test]
fn a_rank_that_crashes_ends_the_job_instead_of_hanging() {
    let (mut ok, mut text, mut took) = mpirun(2, "worker_crash");
    if took >= JOB_LIMIT {
        // Killed at the limit: once more, since Open MPI's mpirun itself can (rarely)
        // deadlock while shutting down (see the test above); a hang of ours would repeat.
        (ok, text, took) = mpirun(2, "worker_crash");
    }
    assert!(!ok, "{text}");
    assert!(took < Duration::from_secs(60), "took {took:?}:\n{text}");
}

#[test]
#[ignore = "a worker: run by a_rank_that_crashes_ends_the_job_instead_of_hanging under mpirun"]
fn worker_crash() {
    let g = init_process_group(Backend::Mpi).unwrap();
    if g.rank() == 1 {
        std::process::exit(3); // dies without finalising MPI
    }
    let t = Tensor::ones(&[4], DType::F32, Device::Cpu).unwrap();
    let _ = g.all_reduce(&t, ReduceOp::Sum);
    std::thread::sleep(Duration::from_secs(120));
}

// ---- NCCL ---------------------------------------------------------------------------------

/// Without libnccl or a GPU, joining an NCCL group is a clear error (before MPI starts); with
/// them, the collectives run on CUDA tensors under mpirun, one rank per GPU (up to 2).
#[cfg(feature = "nccl")]
#[test]
fn nccl_collectives_on_the_gpus_or_a_clear_error_without_them() {
    if !tinytorch::backend::nccl::is_available() {
        let e = init_process_group(Backend::Nccl)
            .err()
            .expect("no NCCL here");
        assert!(e.to_string().contains("libnccl"), "{e}");
        return;
    }
    let ranks = tinytorch::backend::cuda::device::device_count().min(2);
    let (ok, text, _) = mpirun(ranks, "worker_nccl_collectives");
    assert!(
        ok,
        "mpirun -np {ranks} worker_nccl_collectives failed:\n{text}"
    );
    for rank in 0..ranks {
        assert!(
            text.contains(&finished("worker_nccl_collectives", rank)),
            "{text}"
        );
    }
}

#[cfg(feature = "nccl")]
#[test]
#[ignore = "a worker: run by nccl_collectives_on_the_gpus_or_a_clear_error_without_them under mpirun"]
fn worker_nccl_collectives() {
    let g = init_process_group_with(Backend::Nccl, Duration::from_secs(60)).unwrap();
    assert!(g.device().is_cuda());
    check_collectives(&g);
    println!("{}", finished("worker_nccl_collectives", g.rank()));
}
