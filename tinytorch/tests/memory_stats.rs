//! The memory statistics (`tensor::memory`): live tensor bytes per device and their
//! high-water mark, counted exactly, through views, in-place ops, autograd and resets. One
//! test in its own binary, so no other test's tensors move the counters.

use tinytorch::tensor::memory::{max_memory_allocated, memory_allocated, reset_peak_memory_stats};
use tinytorch::{DType, Device, Tensor};

const CPU: Device = Device::Cpu;

#[test]
fn live_bytes_and_the_high_water_mark_are_exact() {
    let base = memory_allocated(CPU);
    reset_peak_memory_stats(CPU);
    assert_eq!(max_memory_allocated(CPU), base);

    let a = Tensor::zeros(&[1000], DType::F32, CPU).unwrap(); // 4,000 bytes
    assert_eq!(memory_allocated(CPU), base + 4000);
    // Views and clones share the buffer: nothing new.
    let view = a.narrow(0, 10, 100).unwrap();
    let handle = a.clone();
    assert_eq!(memory_allocated(CPU), base + 4000);
    // A new buffer of f64: 8,000 bytes more; in-place ops write into their own buffer.
    let b = Tensor::ones(&[1000], DType::F64, CPU).unwrap();
    b.add_scalar_(1.0).unwrap();
    assert_eq!(memory_allocated(CPU), base + 12_000);
    drop(b);
    assert_eq!(memory_allocated(CPU), base + 4000);
    // The peak also saw add_'s scalar operand, an f64 0-d tensor, while it lived.
    assert_eq!(max_memory_allocated(CPU), base + 12_008);
    // The mark starts again from what is live now.
    reset_peak_memory_stats(CPU);
    assert_eq!(max_memory_allocated(CPU), base + 4000);
    // A backward pass: the graph's saved tensors and the gradient count while they live.
    let w = Tensor::ones(&[1000], DType::F32, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let loss = w.mul(&a).unwrap().sum_all().unwrap();
    loss.backward().unwrap();
    drop(loss);
    assert!(w.grad().is_some());
    // w (4,000) and its gradient (4,000) stay; the product (4,000) and the loss are gone.
    assert_eq!(memory_allocated(CPU), base + 12_000);
    assert!(max_memory_allocated(CPU) >= base + 16_000);
    drop((w, view, handle, a));
    assert_eq!(memory_allocated(CPU), base);

    // A linear layer's weight gradient comes out of the product as a view (the transpose
    // of `w.t()`'s gradient): it becomes `.grad` as it is, never copied, so the backward's
    // peak holds it once. x (8, 16), w (32, 16): the gradient is 2,048 bytes, the upstream
    // gradient of the sum 1,024.
    let x = Tensor::ones(&[8, 16], DType::F32, CPU).unwrap();
    let w = Tensor::ones(&[32, 16], DType::F32, CPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let loss = x.matmul(&w.t().unwrap()).unwrap().sum_all().unwrap();
    let before = memory_allocated(CPU);
    reset_peak_memory_stats(CPU);
    loss.backward().unwrap();
    let grad = w.grad().unwrap();
    assert!(grad.view_base().is_none(), ".grad is no view");
    assert_eq!(grad.shape(), &[32, 16]);
    let peak = max_memory_allocated(CPU) - before;
    assert!(
        peak < 2 * 2048,
        "backward peaked at {peak} bytes: the gradient was copied"
    );
    drop((grad, loss, w, x));
    assert_eq!(memory_allocated(CPU), base);
}
