//! Tensors over memory another library owns (`Tensor::from_foreign_cpu`, behind
//! `torch.from_numpy`): shared both ways, strided, held alive by their owner, never handed to
//! the caching allocator, and refused when misaligned or holding invalid bools.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tinytorch::{DType, Tensor};

/// Memory owned outside TinyTorch: records when its last holder lets go.
struct Owner {
    data: Vec<f64>,
    dropped: Arc<AtomicBool>,
}
impl Drop for Owner {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

fn owned(data: Vec<f64>) -> (Box<Owner>, *mut u8, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let mut owner = Box::new(Owner {
        data,
        dropped: dropped.clone(),
    });
    let ptr = owner.data.as_mut_ptr().cast::<u8>();
    (owner, ptr, dropped)
}

#[test]
fn a_foreign_tensor_shares_memory_both_ways_and_keeps_its_owner_alive() {
    let (owner, ptr, dropped) = owned((0..12).map(f64::from).collect());
    // Rows 0 and 2 of a 3x4 matrix, every other column: shape (2, 2), strides (8, 2).
    let t = unsafe { Tensor::from_foreign_cpu("test", ptr, DType::F64, &[2, 2], &[8, 2], owner) }
        .unwrap();
    assert_eq!(t.stride(), &[8, 2]);
    assert_eq!(t.data_ptr(), ptr as usize);
    assert_eq!(t.to_vec_f64().unwrap(), vec![0.0, 2.0, 8.0, 10.0]);
    let sum = t.sum_all().unwrap();
    assert_eq!(sum.item_f64().unwrap(), 20.0);
    // An in-place write lands in the owner's memory.
    t.mul_scalar_(10.0).unwrap();
    let seen = unsafe { std::slice::from_raw_parts(ptr.cast::<f64>(), 12) }.to_vec();
    assert_eq!(seen[..4], [0.0, 1.0, 20.0, 3.0]);
    assert_eq!(seen[8..], [80.0, 9.0, 100.0, 11.0]);
    // A view keeps the owner alive after the tensor it came from is gone.
    let view = t.select(0, 1).unwrap();
    drop(t);
    drop(sum);
    assert!(!dropped.load(Ordering::SeqCst));
    assert_eq!(view.to_vec_f64().unwrap(), vec![80.0, 100.0]);
    drop(view);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the last view lets the owner go"
    );
}

#[test]
fn a_large_foreign_buffer_goes_back_to_its_owner_not_to_the_cache() {
    // Above the caching allocator's threshold: it must not keep (and later free) this memory.
    let n = 1 << 18;
    let (owner, ptr, dropped) = owned(vec![1.0; n]);
    let t =
        unsafe { Tensor::from_foreign_cpu("test", ptr, DType::F64, &[n], &[1], owner) }.unwrap();
    let cached = tinytorch::backend::cpu::allocator::cached_bytes();
    drop(t);
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(tinytorch::backend::cpu::allocator::cached_bytes(), cached);
}

#[test]
fn misaligned_or_invalid_foreign_memory_is_refused() {
    let (owner, ptr, _) = owned(vec![0.0; 4]);
    let e = unsafe {
        Tensor::from_foreign_cpu("from_numpy", ptr.add(1), DType::F32, &[2], &[1], owner)
    }
    .unwrap_err()
    .to_string();
    assert!(e.contains("from_numpy") && e.contains("not aligned"), "{e}");
    let mut bytes = vec![0u8, 1, 2];
    let p = bytes.as_mut_ptr();
    let e = unsafe {
        Tensor::from_foreign_cpu("from_numpy", p, DType::Bool, &[3], &[1], Box::new(bytes))
    }
    .unwrap_err()
    .to_string();
    assert!(e.contains("byte 2"), "{e}");
    let (owner, ptr, _) = owned(vec![0.0; 4]);
    let e =
        unsafe { Tensor::from_foreign_cpu("from_numpy", ptr, DType::F64, &[2, 2], &[1], owner) }
            .unwrap_err()
            .to_string();
    assert!(e.contains("1 strides for shape [2, 2]"), "{e}");
    // Empty: no element is read, so any address will do.
    let t = unsafe {
        Tensor::from_foreign_cpu(
            "test",
            std::ptr::null_mut(),
            DType::F32,
            &[0, 3],
            &[3, 1],
            Box::new(()),
        )
    }
    .unwrap();
    assert_eq!(t.shape(), &[0, 3]);
}
