//! Module hooks (forward pre-hooks, forward hooks, full backward hooks, removable handles)
//! fired through `Module::call`, on their own and inside containers and models; and the
//! module tree (`named_children`, `named_modules`, `apply`). Expected values are PyTorch's
//! semantics worked by hand (y = x W^T + b, so grad_input = grad_output W).

mod common;
use common::{backward_sum, TINY_GPT};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tinytorch::models::gpt::Gpt;
use tinytorch::nn::{Linear, Module, ModuleHooks, ReLU, Sequential};
use tinytorch::{no_grad, DType, Device, Tensor};

fn linear(w: &[f32], b: &[f32], out: usize, inp: usize) -> Linear {
    let l = Linear::new(inp, out, true).unwrap();
    let _g = no_grad();
    l.weight
        .copy_(&Tensor::from_vec(w.to_vec(), &[out, inp]).unwrap())
        .unwrap();
    l.bias
        .as_ref()
        .unwrap()
        .copy_(&Tensor::from_vec(b.to_vec(), &[out]).unwrap())
        .unwrap();
    l
}

fn vals(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn forward_pre_and_forward_hooks_replace_input_and_output_and_can_be_removed() {
    let l = linear(&[1.0, 2.0], &[0.5], 1, 2);
    let x = Tensor::from_vec(vec![1.0f32, 1.0], &[1, 2]).unwrap();
    assert_eq!(vals(&l.call(&x).unwrap()), vec![3.5]);
    let pre = l
        .register_forward_pre_hook(|_, x| Ok(Some(x.mul_scalar(2.0)?)))
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let fwd = l
        .register_forward_hook(move |m, x, y| {
            s.lock()
                .unwrap()
                .push((vals(x), vals(y), m.num_parameters()));
            Ok(Some(y.add_scalar(100.0)?))
        })
        .unwrap();
    // (2 + 4 + 0.5) + 100; the forward hook saw the replaced input.
    assert_eq!(vals(&l.call(&x).unwrap()), vec![106.5]);
    assert_eq!(*seen.lock().unwrap(), vec![(vec![2.0, 2.0], vec![6.5], 3)]);
    // `forward` itself runs no hooks.
    assert_eq!(vals(&l.forward(&x).unwrap()), vec![3.5]);
    pre.remove();
    assert_eq!(vals(&l.call(&x).unwrap()), vec![103.5]);
    fwd.remove();
    fwd.remove();
    assert_eq!(vals(&l.call(&x).unwrap()), vec![3.5]);
}

#[test]
fn hooks_fire_on_children_of_a_sequential() {
    let seq = Sequential::new(vec![
        Box::new(linear(&[1.0, -1.0, 2.0, 0.0], &[0.0, 0.0], 2, 2)),
        Box::new(ReLU::new()),
    ]);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let relu = seq.get(1).unwrap();
    let h = relu
        .register_forward_hook(move |_, x, _| {
            c.fetch_add(1, Ordering::SeqCst);
            // Replace ReLU's output by its input: the identity.
            Ok(Some(x.clone()))
        })
        .unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2]).unwrap();
    assert_eq!(vals(&seq.call(&x).unwrap()), vec![-1.0, 2.0]);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    h.remove();
    assert_eq!(vals(&seq.call(&x).unwrap()), vec![0.0, 2.0]);
}

#[test]
fn full_backward_hook_sees_grad_input_and_grad_output_and_can_replace_grad_input() {
    let l = linear(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[0.0, 0.0], 2, 3);
    let x = Tensor::from_vec(vec![1.0f32, 0.0, -1.0], &[1, 3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let h = l
        .register_full_backward_hook(move |gi, go| {
            s.lock().unwrap().push((gi.map(vals), vals(go)));
            Ok(Some(gi.unwrap().mul_scalar(10.0)?))
        })
        .unwrap();
    // loss = sum(y * [1, 2]): grad_output [1, 2], grad_input [1, 2] W = [9, 12, 15].
    let c = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2]).unwrap();
    backward_sum(l.call(&x).unwrap().mul(&c));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(Some(vec![9.0, 12.0, 15.0]), vec![1.0, 2.0])]
    );
    assert_eq!(vals(&x.grad().unwrap()), vec![90.0, 120.0, 150.0]);
    // The weight's gradient is untouched by the hook: grad_output^T x.
    assert_eq!(
        vals(&l.weight.grad().unwrap()),
        vec![1.0, 0.0, -1.0, 2.0, 0.0, -2.0]
    );
    h.remove();
    x.set_grad(None);
    backward_sum(l.call(&x).unwrap().mul(&c));
    assert_eq!(vals(&x.grad().unwrap()), vec![9.0, 12.0, 15.0]);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn full_backward_hook_gets_no_grad_input_when_the_input_needs_none() {
    let l = linear(&[2.0], &[0.0], 1, 1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    l.register_full_backward_hook(move |gi, go| {
        s.lock().unwrap().push((gi.is_none(), vals(go)));
        Ok(None)
    })
    .unwrap();
    let x = Tensor::from_vec(vec![3.0f32], &[1, 1]).unwrap();
    l.call(&x)
        .unwrap()
        .mul_scalar(4.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![(true, vec![4.0])]);
    assert_eq!(vals(&l.weight.grad().unwrap()), vec![12.0]);
}

#[test]
fn hooks_fire_inside_a_model_reached_through_named_modules() {
    let model = Gpt::new(TINY_GPT).unwrap();
    let shapes = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for (name, m) in model.named_modules() {
        if name.ends_with("attn.c_attn") {
            let s = shapes.clone();
            handles.push(
                m.register_forward_hook(move |_, _, y| {
                    s.lock().unwrap().push((name.clone(), y.shape().to_vec()));
                    Ok(None)
                })
                .unwrap(),
            );
        }
    }
    let idx = Tensor::zeros(&[1, 5], DType::I64, Device::Cpu).unwrap();
    model.call(&idx).unwrap();
    assert_eq!(
        *shapes.lock().unwrap(),
        vec![
            ("transformer.h.0.attn.c_attn".to_string(), vec![1, 5, 48]),
            ("transformer.h.1.attn.c_attn".to_string(), vec![1, 5, 48]),
        ]
    );
    for h in handles {
        h.remove();
    }
}

#[test]
fn the_module_tree_has_pytorchs_names_and_apply_visits_children_first() {
    let inner = Sequential::new(vec![
        Box::new(Linear::new(2, 3, true).unwrap()),
        Box::new(ReLU::new()),
    ]);
    let outer = Sequential::new(vec![
        Box::new(inner),
        Box::new(Linear::new(3, 1, false).unwrap()),
    ]);
    let names: Vec<String> = outer.named_modules().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, vec!["", "0", "0.0", "0.1", "1"]);
    let children: Vec<String> = outer.named_children().into_iter().map(|(n, _)| n).collect();
    assert_eq!(children, vec!["0", "1"]);
    assert_eq!(outer.children().len(), 2);
    assert_eq!(outer.modules().len(), 5);
    // Every parameter name starts with the name of a module that owns it directly.
    let modules = outer.named_modules();
    for (pname, _) in outer.named_parameters() {
        let (owner, _) = pname.rsplit_once('.').unwrap();
        assert!(modules.iter().any(|(n, _)| n == owner), "{pname}");
    }
    // apply: post-order, as PyTorch (children, then self); a custom init through it.
    let mut order = Vec::new();
    outer
        .apply(&mut |m| {
            order.push(m.num_parameters());
            if let Some(l) = m.as_any().downcast_ref::<Linear>() {
                let _g = no_grad();
                l.weight.fill_(0.25)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(order, vec![9, 0, 9, 3, 12]);
    for (name, p) in outer.named_parameters() {
        if name.ends_with("weight") {
            assert!(vals(&p).iter().all(|&v| v == 0.25), "{name}");
        }
    }
    // An error from the function stops the walk and comes back.
    let e = outer
        .apply(&mut |_| Err(tinytorch::Error::invalid("init", "stop")))
        .unwrap_err();
    assert!(e.to_string().contains("stop"), "{e}");
}

#[test]
fn gpt_named_modules_cover_every_parameter() {
    let model = Gpt::new(TINY_GPT).unwrap();
    let modules = model.named_modules();
    assert_eq!(modules.len(), 1 + 2 + 2 * 6 + 1);
    for (pname, _) in model.named_parameters() {
        let (owner, _) = pname.rsplit_once('.').unwrap();
        assert!(modules.iter().any(|(n, _)| n == owner), "{pname}");
    }
}

/// A module without fields: it has no address of its own.
struct Stateless;

impl Module for Stateless {
    fn forward(&self, x: &Tensor) -> tinytorch::Result<Tensor> {
        Ok(x.clone())
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}

#[test]
fn a_zero_sized_module_cannot_take_hooks() {
    let e = Stateless
        .register_forward_hook(|_, _, _| Ok(None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("zero-sized"), "{e}");
}

#[test]
fn a_hook_error_ends_the_call_with_it() {
    let l = Linear::new(2, 2, true).unwrap();
    l.register_forward_pre_hook(|_, _| Err(tinytorch::Error::invalid("my_hook", "refused")))
        .unwrap();
    let x = Tensor::zeros(&[1, 2], DType::F32, Device::Cpu).unwrap();
    let e = l.call(&x).unwrap_err().to_string();
    assert!(e.contains("my_hook") && e.contains("refused"), "{e}");
}
