//! Every documented error of the core gives an `Err` (never a panic) of the right kind, whose
//! message names the operation and the offending shapes, dtypes or values.

use tinytorch::{DType, Device, Error, Result, Tensor};

/// Assert that `result` is an error matching `kind` whose message contains every `needle`.
fn assert_err<T: std::fmt::Debug>(result: Result<T>, kind: fn(&Error) -> bool, needles: &[&str]) {
    let err = match result {
        Ok(v) => panic!("expected an error containing {needles:?}, got Ok({v:?})"),
        Err(e) => e,
    };
    assert!(kind(&err), "wrong error kind: {err:?}");
    let msg = err.to_string();
    for n in needles {
        assert!(msg.contains(n), "message {msg:?} does not mention {n:?}");
    }
}

fn shape_err(e: &Error) -> bool {
    matches!(e, Error::Shape { .. })
}
fn index_err(e: &Error) -> bool {
    matches!(e, Error::Index { .. })
}
fn invalid_err(e: &Error) -> bool {
    matches!(e, Error::Invalid { .. })
}
fn dtype_err(e: &Error) -> bool {
    matches!(e, Error::DType { .. })
}
fn autograd_err(e: &Error) -> bool {
    matches!(e, Error::Autograd(_))
}

/// A 2x3 f32 tensor 0..6.
fn m23() -> Tensor {
    Tensor::from_vec(vec![0.0f32, 1., 2., 3., 4., 5.], &[2, 3]).unwrap()
}

fn leaf(values: Vec<f32>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(values, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

// ---- views ------------------------------------------------------------------------------

#[test]
fn view_with_wrong_element_count() {
    assert_err(
        m23().view(&[4, 2]),
        shape_err,
        &["view", "[4, 2]", "[2, 3]"],
    );
    assert_err(
        m23().reshape(&[5]),
        shape_err,
        &["reshape", "[5]", "[2, 3]"],
    );
    assert_err(m23().view(&[-1, 4]), shape_err, &["view", "[-1, 4]"]);
}

#[test]
fn view_with_two_inferred_or_negative_dims() {
    assert_err(
        m23().view(&[-1, -1]),
        invalid_err,
        &["view", "only one dimension can be inferred"],
    );
    assert_err(m23().reshape(&[-2, 3]), invalid_err, &["reshape", "-2"]);
}

#[test]
fn view_of_a_layout_that_cannot_be_viewed() {
    let t = m23().t().unwrap();
    assert_err(
        t.view(&[6]),
        invalid_err,
        &["view", "[3, 2]", "stride", "reshape"],
    );
    // reshape copies instead.
    assert_eq!(
        t.reshape(&[6]).unwrap().to_vec::<f32>().unwrap(),
        vec![0., 3., 1., 4., 2., 5.]
    );
}

#[test]
fn permute_with_bad_dims() {
    assert_err(m23().permute(&[0]), shape_err, &["permute", "[0]", "2"]);
    assert_err(
        m23().permute(&[0, 0]),
        invalid_err,
        &["permute", "repeats dim 0"],
    );
    assert_err(
        m23().permute(&[0, 2]),
        index_err,
        &["permute", "dimension 2 out of range"],
    );
}

#[test]
fn transpose_squeeze_unsqueeze_with_out_of_range_dims() {
    assert_err(
        m23().transpose(0, 2),
        index_err,
        &["transpose", "dimension 2"],
    );
    assert_err(
        m23().transpose(-3, 0),
        index_err,
        &["transpose", "dimension -3"],
    );
    assert_err(m23().squeeze_dim(5), index_err, &["squeeze", "dimension 5"]);
    assert_err(m23().unsqueeze(3), index_err, &["unsqueeze", "dimension 3"]);
    assert_err(
        m23().unsqueeze(-4),
        index_err,
        &["unsqueeze", "dimension -4"],
    );
}

#[test]
fn t_on_more_than_two_dims() {
    let t = Tensor::zeros(&[2, 3, 4], DType::F32, Device::Cpu).unwrap();
    assert_err(t.t(), shape_err, &["t", "3D"]);
}

#[test]
fn flatten_and_unflatten_with_bad_args() {
    let t = Tensor::zeros(&[2, 3, 4], DType::F32, Device::Cpu).unwrap();
    assert_err(
        t.flatten(2, 0),
        invalid_err,
        &["flatten", "start_dim 2", "end_dim 0"],
    );
    assert_err(t.flatten(0, 3), index_err, &["flatten", "dimension 3"]);
    assert_err(t.unflatten(1, &[2, 2]), shape_err, &["unflatten", "[2, 2]"]);
}

#[test]
fn narrow_out_of_range() {
    assert_err(
        m23().narrow(1, 2, 2),
        index_err,
        &["narrow", "2..4", "size 3"],
    );
    assert_err(m23().narrow(0, -3, 1), index_err, &["narrow", "start -3"]);
    assert_err(m23().narrow(2, 0, 1), index_err, &["narrow", "dimension 2"]);
    assert_err(
        Tensor::scalar(1.0f32).narrow(0, 0, 1),
        index_err,
        &["narrow", "0-d"],
    );
}

#[test]
fn select_out_of_range() {
    assert_err(
        m23().select(1, 3),
        index_err,
        &["select", "index 3", "size 3"],
    );
    assert_err(
        m23().select(0, -3),
        index_err,
        &["select", "index -3", "size 2"],
    );
    assert_err(m23().select(2, 0), index_err, &["select", "dimension 2"]);
    assert_err(
        Tensor::scalar(1.0f32).select(0, 0),
        index_err,
        &["select", "0-dim"],
    );
}

#[test]
fn slice_with_bad_step_or_dim() {
    assert_err(
        m23().slice(0, None, None, 0),
        invalid_err,
        &["slice", "step must be positive"],
    );
    assert_err(
        m23().slice(2, None, None, 1),
        index_err,
        &["slice", "dimension 2"],
    );
    assert_err(
        Tensor::scalar(1.0f32).slice(0, None, None, 1),
        index_err,
        &["slice", "0-d"],
    );
}

#[test]
fn expand_to_incompatible_shapes() {
    assert_err(
        m23().expand(&[2, 4]),
        shape_err,
        &["expand", "[2, 3]", "[2, 4]"],
    );
    assert_err(m23().expand(&[3]), shape_err, &["expand", "(1)", "(2)"]);
    assert_err(
        m23().expand(&[-1, 2, 3]),
        invalid_err,
        &["expand", "-1", "leading"],
    );
    assert_err(m23().expand(&[2, -2]), invalid_err, &["expand", "-2"]);
    assert_err(
        m23().broadcast_to(&[4, 3]),
        shape_err,
        &["expand", "[2, 3]", "[4, 3]"],
    );
}

#[test]
fn chunk_and_split_with_bad_sizes() {
    assert_err(m23().chunk(0, 0), invalid_err, &["chunk", "greater than 0"]);
    assert_err(m23().split(0, 1), invalid_err, &["split", "positive"]);
    assert_err(
        m23().split_sizes(&[1, 1], 1),
        shape_err,
        &["split", "[1, 1]", "size 3"],
    );
}

// ---- broadcasting -------------------------------------------------------------------------

#[test]
fn binary_ops_with_shapes_that_do_not_broadcast() {
    let a = m23();
    let b = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
    for (name, r) in [
        ("add", a.add(&b)),
        ("sub", a.sub(&b)),
        ("mul", a.mul(&b)),
        ("div", a.div(&b)),
        ("pow", a.pow(&b)),
        ("maximum", a.maximum(&b)),
        ("minimum", a.minimum(&b)),
        ("lt", a.lt(&b)),
        ("eq", a.eq(&b)),
        ("logical_and", a.logical_and(&b)),
    ] {
        assert_err(
            r,
            shape_err,
            &[name, "[2, 3]", "[2]", "cannot be broadcast"],
        );
    }
    assert_err(&a + &b, shape_err, &["add", "[2, 3]", "[2]"]);
}

#[test]
fn where_and_masked_fill_with_shapes_that_do_not_broadcast() {
    let a = m23();
    let cond = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_err(
        Tensor::where_cond(&cond, &a, &a),
        shape_err,
        &["where", "[2]", "[2, 3]"],
    );
    // The out-of-place masked_fill broadcasts the tensor and the mask together (PyTorch).
    let mask = Tensor::from_vec(vec![true; 4], &[2, 2]).unwrap();
    assert_err(
        a.masked_fill(&mask, 0.0),
        shape_err,
        &["masked_fill", "[2, 2]", "[2, 3]"],
    );
}

#[test]
fn where_with_a_non_bool_condition() {
    let a = m23();
    assert_err(
        Tensor::where_cond(&a, &a, &a),
        dtype_err,
        &["where", "bool", "float32"],
    );
    let ints = Tensor::from_vec(vec![1i64, 0, 1], &[3]).unwrap();
    assert_err(
        Tensor::where_cond(&ints, &a, &a),
        dtype_err,
        &["where", "int64"],
    );
}

// ---- host data ----------------------------------------------------------------------------

#[test]
fn from_vec_with_the_wrong_number_of_elements() {
    assert_err(
        Tensor::from_vec(vec![1.0f32; 5], &[2, 3]),
        shape_err,
        &["from_vec", "5 elements", "[2, 3]"],
    );
    assert_err(
        Tensor::from_vec(vec![1i64; 2], &[]),
        shape_err,
        &["from_vec", "2 elements", "[]"],
    );
}

#[test]
fn to_vec_with_the_wrong_element_type() {
    assert_err(
        m23().to_vec::<f64>(),
        dtype_err,
        &["to_vec", "float32", "float64"],
    );
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert_err(
        ints.to_vec::<f32>(),
        dtype_err,
        &["to_vec", "int64", "float32"],
    );
    assert_err(
        ints.select(0, 0).unwrap().item::<f32>(),
        dtype_err,
        &["to_vec", "int64"],
    );
}

#[test]
fn item_on_a_tensor_with_several_elements() {
    assert_err(
        m23().item::<f32>(),
        shape_err,
        &["item", "6 elements", "[2, 3]"],
    );
    assert_err(m23().item_f64(), shape_err, &["item", "6 elements"]);
    let empty = Tensor::zeros(&[0], DType::F32, Device::Cpu).unwrap();
    assert_err(empty.item_f64(), shape_err, &["item", "0 elements"]);
}

// ---- autograd -----------------------------------------------------------------------------

#[test]
fn requires_grad_on_integer_and_bool_tensors() {
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert_err(
        ints.requires_grad_(true),
        autograd_err,
        &["requires_grad_", "floating point", "int64"],
    );
    let mask = Tensor::from_vec(vec![true], &[1]).unwrap();
    assert_err(
        mask.requires_grad_(true),
        autograd_err,
        &["requires_grad_", "bool"],
    );
    // Turning it off is always allowed.
    assert!(!ints.requires_grad_(false).unwrap().requires_grad());
}

#[test]
fn requires_grad_on_a_non_leaf() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    assert_err(
        y.requires_grad_(false),
        autograd_err,
        &["requires_grad_", "leaf"],
    );
}

#[test]
fn backward_on_a_tensor_that_does_not_require_grad() {
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    assert_err(
        x.sum_all().unwrap().backward(),
        autograd_err,
        &["backward", "does not require grad"],
    );
}

#[test]
fn backward_twice_without_retain_graph() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul(&x).unwrap().sum_all().unwrap();
    y.backward().unwrap();
    assert_err(
        y.backward(),
        autograd_err,
        &["backward", "second time", "retain_graph"],
    );
}

#[test]
fn backward_twice_with_retain_graph_accumulates() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul(&x).unwrap().sum_all().unwrap();
    y.backward_with(None, true).unwrap();
    y.backward_with(None, false).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![4.0, 8.0]);
}

#[test]
fn non_scalar_backward_without_a_gradient() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul_scalar(3.0).unwrap();
    assert_err(
        y.backward(),
        autograd_err,
        &["backward", "scalar outputs", "[2]"],
    );
}

#[test]
fn backward_with_a_gradient_of_the_wrong_shape() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul_scalar(3.0).unwrap();
    let g = Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap();
    assert_err(
        y.backward_with(Some(&g), false),
        shape_err,
        &["backward", "[3]", "[2]"],
    );
}

/// A tensor the system cannot hold is an `OutOfMemory` error naming the bytes asked for,
/// from every creation path, where `Vec::with_capacity` would abort the process (issue 48).
#[test]
fn a_tensor_too_large_for_memory_is_an_error_not_an_abort() {
    let shape = [1_000_000_000_000, 1_000_000]; // 10^18 elements, 4e18 bytes of f32
    let oom = |e: &Error| matches!(e, Error::OutOfMemory { .. });
    let bytes = "you tried to allocate 4000000000000000000 bytes";
    assert_err(
        Tensor::zeros(&shape, DType::F32, Device::Cpu),
        oom,
        &[bytes],
    );
    assert_err(
        Tensor::full(&shape, 2.0, DType::F32, Device::Cpu),
        oom,
        &[bytes],
    );
    assert_err(Tensor::rand(&shape, DType::F32, Device::Cpu), oom, &[bytes]);
    assert_err(
        Tensor::randn(&shape, DType::F32, Device::Cpu),
        oom,
        &[bytes],
    );
    assert_err(
        Tensor::randint(0, 3, &shape, Device::Cpu),
        oom,
        &["8000000000000000000 bytes"],
    );
    // Still usable afterwards.
    assert_eq!(
        Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap().numel(),
        3
    );
}

/// A shape whose element count or byte size overflows is PyTorch's "Storage size
/// calculation overflowed" error, never a wrapped (small) allocation.
#[test]
fn a_shape_whose_size_overflows_is_an_error() {
    for shape in [
        vec![1 << 40, 1 << 40],
        vec![1 << 62, 4],
        vec![usize::MAX, 2],
    ] {
        assert_err(
            Tensor::zeros(&shape, DType::F32, Device::Cpu),
            invalid_err,
            &["overflowed", "full"],
        );
        assert_err(
            Tensor::randn(&shape, DType::F64, Device::Cpu),
            invalid_err,
            &["overflowed"],
        );
    }
    // A zero dim makes any other dims fine: no elements, no memory.
    let empty = Tensor::zeros(&[0, 1 << 40, 1 << 40], DType::F32, Device::Cpu).unwrap();
    assert_eq!(empty.numel(), 0);
}
