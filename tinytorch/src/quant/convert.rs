//! Quantizing whole models, the way PyTorch's eager mode does:
//! - `quantize_dynamic`: every `Linear` becomes a [`DynamicQuantLinear`];
//! - static: a [`Calibration`] runs the float model on a few batches and observes the input
//!   and output of every `Linear` and `Conv2d` (the output after the ReLU that follows, if
//!   one does: `fuse_modules`), then `convert_static` swaps them for [`QuantLinear`] and
//!   [`QuantConv2d`] with those parameters, the fused ReLU becoming an `Identity` so that the
//!   other layers keep their state-dict names.
//!
//! Models are walked through `Sequential` containers (nested ones included); a layer that is
//! the whole model is converted too. Other layers (pooling, flatten, norms, convolutions with
//! groups) stay in float.

use super::activation::Affine;
use super::conv::QuantConv2d;
use super::linear::{DynamicQuantLinear, QuantLinear};
use super::observer::{MinMaxObserver, PercentileObserver};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::nn::{Conv2d, Identity, Linear, Module, ReLU, Sequential};
use crate::tensor::Tensor;
use std::collections::BTreeMap;

/// How calibration turns the activations it sees into ranges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ObserverKind {
    /// The smallest and largest values seen (PyTorch's `MinMaxObserver`).
    MinMax,
    /// The smallest and largest values seen, clipped to the given percentile of |x| (e.g.
    /// 99.99): a few outliers no longer stretch the scale for everything else.
    Percentile(f64),
}

/// One activation's observer.
#[derive(Clone, Debug)]
enum ActivationObserver {
    MinMax(MinMaxObserver),
    Percentile(MinMaxObserver, PercentileObserver),
}

impl ActivationObserver {
    fn new(kind: ObserverKind) -> Result<ActivationObserver> {
        Ok(match kind {
            ObserverKind::MinMax => ActivationObserver::MinMax(MinMaxObserver::per_tensor()),
            ObserverKind::Percentile(p) => ActivationObserver::Percentile(
                MinMaxObserver::per_tensor(),
                PercentileObserver::new(p)?,
            ),
        })
    }

    fn observe(&mut self, x: &Tensor) -> Result<()> {
        match self {
            ActivationObserver::MinMax(m) => m.observe(x),
            ActivationObserver::Percentile(m, p) => {
                m.observe(x)?;
                p.observe(x)
            }
        }
    }

    fn affine(&self) -> Result<Affine> {
        let (m, clip) = match self {
            ActivationObserver::MinMax(m) => (m, f32::INFINITY),
            ActivationObserver::Percentile(m, p) => (m, p.value()?),
        };
        let (lo, hi) = m.ranges();
        if lo.is_empty() {
            return Err(Error::invalid("calibration", "nothing was observed"));
        }
        Ok(Affine::from_range(lo[0].max(-clip), hi[0].min(clip)))
    }
}

/// A child's path in the state dict: `prefix.i`, or `i` at the top.
fn join(prefix: &str, i: usize) -> String {
    if prefix.is_empty() {
        i.to_string()
    } else {
        format!("{prefix}.{i}")
    }
}

/// Whether `m` is an `nn.ReLU` (which a quantized layer before it absorbs).
fn is_relu(m: &dyn Module) -> bool {
    m.as_any().is::<ReLU>()
}

/// Whether static quantization converts `m`.
fn is_static_target(m: &dyn Module) -> bool {
    let any = m.as_any();
    any.is::<Linear>() || any.downcast_ref::<Conv2d>().is_some_and(|c| c.groups == 1)
}

/// The observed ranges of a model's layers, by state-dict path, for static quantization.
#[derive(Clone, Debug)]
pub struct Calibration {
    kind: ObserverKind,
    /// Input and output observers of each layer static quantization converts.
    observers: BTreeMap<String, (ActivationObserver, ActivationObserver)>,
    batches: usize,
}

impl Calibration {
    /// An empty calibration whose observers are of `kind`.
    pub fn new(kind: ObserverKind) -> Result<Calibration> {
        ActivationObserver::new(kind)?; // checks the percentile
        Ok(Calibration {
            kind,
            observers: BTreeMap::new(),
            batches: 0,
        })
    }

    /// Run `x` through the float `model` (without gradients), observing every layer that
    /// static quantization converts; returns the model's output.
    pub fn observe(&mut self, model: &dyn Module, x: &Tensor) -> Result<Tensor> {
        let _guard = no_grad();
        self.batches += 1;
        match model.as_any().downcast_ref::<Sequential>() {
            Some(seq) => self.observe_children(seq, "", x),
            None if is_static_target(model) => self.observe_layer(model, None, "", x),
            None => model.forward(x),
        }
    }

    /// Batches observed so far.
    pub fn batches(&self) -> usize {
        self.batches
    }

    fn observe_children(&mut self, seq: &Sequential, prefix: &str, x: &Tensor) -> Result<Tensor> {
        let mut y = x.clone();
        let mut i = 0;
        while let Some(child) = seq.get(i) {
            let path = join(prefix, i);
            if let Some(inner) = child.as_any().downcast_ref::<Sequential>() {
                y = self.observe_children(inner, &path, &y)?;
            } else if is_static_target(child) {
                let relu = seq.get(i + 1).filter(|next| is_relu(*next));
                y = self.observe_layer(child, relu, &path, &y)?;
                i += usize::from(relu.is_some());
            } else {
                y = child.forward(&y)?;
            }
            i += 1;
        }
        Ok(y)
    }

    /// Observe `layer`'s input, run it (and the ReLU after it), observe the output.
    fn observe_layer(
        &mut self,
        layer: &dyn Module,
        relu: Option<&dyn Module>,
        path: &str,
        x: &Tensor,
    ) -> Result<Tensor> {
        let (input, output) = match self.observers.entry(path.to_string()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert((
                ActivationObserver::new(self.kind)?,
                ActivationObserver::new(self.kind)?,
            )),
        };
        input.observe(x)?;
        let mut y = layer.forward(x)?;
        if let Some(relu) = relu {
            y = relu.forward(&y)?;
        }
        output.observe(&y)?;
        Ok(y)
    }

    /// The calibrated input and output parameters of the layer at `path`.
    pub fn params(&self, path: &str) -> Result<(Affine, Affine)> {
        let (input, output) = self.observers.get(path).ok_or_else(|| {
            Error::invalid(
                "convert",
                format!("layer '{path}' was not calibrated (run Calibration::observe first)"),
            )
        })?;
        Ok((input.affine()?, output.affine()?))
    }
}

/// What a conversion makes of one layer: a replacement, and whether it absorbed the ReLU
/// after it; `None` leaves the layer as it is.
pub(super) type Replace<'a> =
    dyn FnMut(&str, &dyn Module, bool) -> Result<Option<(Box<dyn Module>, bool)>> + 'a;

/// Rebuild `model` with each layer that `replace` answers for swapped (see [`Replace`]);
/// `replace` gets the layer's path, the layer, and whether a ReLU follows it.
pub(super) fn rewrite(
    model: Box<dyn Module>,
    prefix: &str,
    replace: &mut Replace<'_>,
) -> Result<Box<dyn Module>> {
    if !model.as_ref().as_any().is::<Sequential>() {
        return Ok(match replace(prefix, model.as_ref(), false)? {
            Some((q, _)) => q,
            None => model,
        });
    }
    let seq = model
        .into_any()
        .downcast::<Sequential>()
        .expect("checked above");
    let training = seq.is_training();
    let mut children = seq.into_modules().into_iter().enumerate().peekable();
    let mut out: Vec<Box<dyn Module>> = Vec::new();
    while let Some((i, child)) = children.next() {
        let path = join(prefix, i);
        if child.as_ref().as_any().is::<Sequential>() {
            out.push(rewrite(child, &path, replace)?);
            continue;
        }
        let relu_next = children.peek().is_some_and(|(_, c)| is_relu(c.as_ref()));
        match replace(&path, child.as_ref(), relu_next)? {
            Some((q, fused)) => {
                out.push(q);
                if fused {
                    children.next();
                    out.push(Box::new(Identity::new()));
                }
            }
            None => out.push(child),
        }
    }
    let mut seq = Sequential::new(out);
    seq.set_training(training);
    Ok(Box::new(seq))
}

/// Call `visit` on every layer of `model` that is not a `Sequential`, with its path.
pub(super) fn for_each_layer(
    model: &dyn Module,
    prefix: &str,
    visit: &mut dyn FnMut(&str, &dyn Module) -> Result<()>,
) -> Result<()> {
    match model.as_any().downcast_ref::<Sequential>() {
        Some(seq) => {
            let mut i = 0;
            while let Some(child) = seq.get(i) {
                for_each_layer(child, &join(prefix, i), visit)?;
                i += 1;
            }
            Ok(())
        }
        None => visit(prefix, model),
    }
}

/// The number of weights and biases in `model`'s int8 layers (which `num_parameters` does not
/// count: they are not trained).
pub fn quantized_parameter_count(model: &dyn Module) -> usize {
    let mut count = 0;
    let _ = for_each_layer(model, "", &mut |_, m| {
        let any = m.as_any();
        let weight = if let Some(q) = any.downcast_ref::<DynamicQuantLinear>() {
            &q.weight
        } else if let Some(q) = any.downcast_ref::<QuantLinear>() {
            &q.weight
        } else if let Some(q) = any.downcast_ref::<QuantConv2d>() {
            &q.weight
        } else {
            return Ok(());
        };
        count += weight.n() * weight.k() + weight.bias.as_ref().map_or(0, Vec::len);
        Ok(())
    });
    count
}

/// `torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)`: every
/// `Linear` becomes a [`DynamicQuantLinear`].
pub fn quantize_dynamic(model: Box<dyn Module>) -> Result<Box<dyn Module>> {
    rewrite(model, "", &mut |_, m, _| {
        Ok(match m.as_any().downcast_ref::<Linear>() {
            Some(l) => Some((
                Box::new(DynamicQuantLinear::from_linear(l)?) as Box<dyn Module>,
                false,
            )),
            None => None,
        })
    })
}

/// `torch.ao.quantization.convert` after calibration: every `Linear` and one-group `Conv2d`
/// becomes a [`QuantLinear`] / [`QuantConv2d`] with the parameters `calibration` observed,
/// with the ReLU after it fused.
pub fn convert_static(
    model: Box<dyn Module>,
    calibration: &Calibration,
) -> Result<Box<dyn Module>> {
    rewrite(model, "", &mut |path, m, relu| {
        if !is_static_target(m) {
            return Ok(None);
        }
        let (input, output) = calibration.params(path)?;
        let any = m.as_any();
        let q: Box<dyn Module> = match any.downcast_ref::<Linear>() {
            Some(l) => Box::new(QuantLinear::from_linear(l, input, output, relu)?),
            None => {
                let conv = any.downcast_ref::<Conv2d>().expect("a static target");
                Box::new(QuantConv2d::from_conv(conv, input, output, relu)?)
            }
        };
        Ok(Some((q, relu)))
    })
}
