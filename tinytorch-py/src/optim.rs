//! The optimizers' engine: one Python object wrapping any TinyTorch optimizer (SGD, Adam,
//! AdamW, RMSprop, Adagrad, Adadelta). `tinytorch/optim/` holds PyTorch's classes around it;
//! their `param_groups` are Python dicts, as in PyTorch (schedulers and user code change
//! `lr` there), and `step` copies each group's hyperparameters into the engine first.

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::collections::BTreeMap;
use std::sync::Mutex;
use tinytorch::optim::{
    Adadelta, AdadeltaOptions, Adagrad, AdagradOptions, Adam, AdamOptions, AdamW, GroupState,
    Optimizer, OptimizerState, ParamGroup, RMSprop, RMSpropOptions, SgdOptions, StateValue, SGD,
};
use tinytorch::Tensor;

/// A group's hyperparameters as TinyTorch names them: `betas` splits into `beta1`/`beta2`,
/// booleans become 0/1; `params`, PyTorch's implementation switches and entries that are
/// not numbers are left out.
fn options_of(group: &Bound<'_, PyDict>) -> PyResult<(f64, BTreeMap<String, f64>)> {
    let mut lr = None;
    let mut out = BTreeMap::new();
    for (k, v) in group.iter() {
        let k: String = k.extract()?;
        match k.as_str() {
            // PyTorch's implementation switches: the engine is one fused update whichever
            // is asked for (optim/__init__.py refuses differentiable=True).
            "params" | "foreach" | "fused" | "capturable" | "differentiable" => {}
            "lr" => lr = Some(v.extract::<f64>()?),
            "betas" => {
                let (b1, b2): (f64, f64) = v.extract()?;
                out.insert("beta1".into(), b1);
                out.insert("beta2".into(), b2);
            }
            _ => {
                if let Ok(b) = v.extract::<bool>() {
                    out.insert(k, f64::from(u8::from(b)));
                } else if let Ok(x) = v.extract::<f64>() {
                    out.insert(k, x);
                }
            }
        }
    }
    let lr = lr.ok_or_else(|| PyValueError::new_err("a parameter group needs an 'lr'"))?;
    Ok((lr, out))
}

/// `(params, lr, options)` of each Python group dict.
fn groups_of(groups: &Bound<'_, PyList>) -> PyResult<Vec<ParamGroup>> {
    groups
        .iter()
        .map(|g| {
            let g = g.cast::<PyDict>()?;
            let params: Vec<Tensor> = g
                .get_item("params")?
                .ok_or_else(|| PyValueError::new_err("a parameter group needs 'params'"))?
                .try_iter()?
                .map(|p| Ok(p?.cast::<PyTensor>()?.borrow().t.clone()))
                .collect::<PyResult<_>>()?;
            let (lr, options) = options_of(g)?;
            let mut group = ParamGroup::new(params).lr(lr);
            group.options = options;
            Ok(group)
        })
        .collect()
}

/// The engine of a `torch.optim` optimizer.
#[pyclass(module = "tinytorch._tinytorch", name = "_Optimizer")]
pub struct PyOptimizer(Mutex<Box<dyn Optimizer>>);

#[pymethods]
impl PyOptimizer {
    /// `kind` is the class name (`"SGD"`, `"Adam"`, ...); `groups` PyTorch's param-group
    /// dicts with every hyperparameter filled in.
    #[new]
    fn new(kind: &str, groups: &Bound<'_, PyList>) -> PyResult<Self> {
        let groups = groups_of(groups)?;
        let lr = groups.first().map_or(1e-3, ParamGroup::learning_rate);
        /// The engine `$engine` over `groups`, its options the defaults but for `lr` (and
        /// any field given).
        macro_rules! engine {
            ($engine:ident, $options:ident { $($field:ident: $value:expr),* }) => {
                Box::new(
                    $engine::new(groups, $options { lr, $($field: $value,)* ..Default::default() })
                        .py()?,
                )
            };
        }
        let opt: Box<dyn Optimizer> = match kind {
            "SGD" => engine!(SGD, SgdOptions {}),
            "Adam" => engine!(Adam, AdamOptions {}),
            "AdamW" => engine!(AdamW, AdamOptions { weight_decay: 1e-2 }),
            "RMSprop" => engine!(RMSprop, RMSpropOptions {}),
            "Adagrad" => engine!(Adagrad, AdagradOptions {}),
            "Adadelta" => engine!(Adadelta, AdadeltaOptions {}),
            other => return Err(PyValueError::new_err(format!("unknown optimizer {other}"))),
        };
        Ok(PyOptimizer(Mutex::new(opt)))
    }

    /// Copy the hyperparameters of the Python group dicts into the engine, then update
    /// every parameter (the GIL is released meanwhile).
    fn step(&self, py: Python<'_>, groups: &Bound<'_, PyList>) -> PyResult<()> {
        {
            let mut opt = self.0.lock().expect("optimizer lock");
            for (g, dict) in opt.param_groups_mut().iter_mut().zip(groups.iter()) {
                let (lr, options) = options_of(dict.cast::<PyDict>()?)?;
                g.lr = Some(lr);
                g.options.extend(options);
            }
        }
        py.detach(|| self.0.lock().expect("optimizer lock").step())
            .py()
    }

    /// The per-parameter state and the groups, as `optimizer.state_dict()`: `{"state": {i:
    /// {name: tensor or number}}, "param_groups": [{"params": [i, ...], "lr": ..., ...}]}`.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let sd = self.0.lock().expect("optimizer lock").state_dict();
        let state = PyDict::new(py);
        for (i, ps) in &sd.state {
            let d = PyDict::new(py);
            for (k, v) in ps {
                match v {
                    StateValue::Tensor(t) => d.set_item(k, PyTensor::from(t.clone()))?,
                    StateValue::Scalar(x) => d.set_item(k, *x)?,
                }
            }
            state.set_item(i, d)?;
        }
        let groups = PyList::empty(py);
        for g in &sd.param_groups {
            let d = PyDict::new(py);
            d.set_item("lr", g.lr)?;
            for (k, v) in &g.options {
                d.set_item(k, *v)?;
            }
            d.set_item("params", g.params.clone())?;
            groups.append(d)?;
        }
        let out = PyDict::new(py);
        out.set_item("state", state)?;
        out.set_item("param_groups", groups)?;
        Ok(out)
    }

    /// Restore a [`PyOptimizer::state_dict`] (the same parameters in the same groups).
    fn load_state_dict(&self, sd: &Bound<'_, PyDict>) -> PyResult<()> {
        let missing = |k: &str| PyValueError::new_err(format!("state dict has no '{k}'"));
        let mut state = BTreeMap::new();
        for (i, ps) in sd
            .get_item("state")?
            .ok_or_else(|| missing("state"))?
            .cast::<PyDict>()?
            .iter()
        {
            let mut m = BTreeMap::new();
            for (k, v) in ps.cast::<PyDict>()?.iter() {
                let value = match v.cast::<PyTensor>() {
                    Ok(t) => StateValue::Tensor(t.borrow().t.clone()),
                    Err(_) => StateValue::Scalar(v.extract()?),
                };
                m.insert(k.extract::<String>()?, value);
            }
            state.insert(i.extract::<usize>()?, m);
        }
        let mut param_groups = Vec::new();
        for g in sd
            .get_item("param_groups")?
            .ok_or_else(|| missing("param_groups"))?
            .try_iter()?
        {
            let g = g?;
            let g = g.cast::<PyDict>()?;
            let params: Vec<usize> = g
                .get_item("params")?
                .ok_or_else(|| missing("params"))?
                .extract()?;
            let (lr, options) = options_of(g)?;
            param_groups.push(GroupState {
                lr,
                options,
                params,
            });
        }
        self.0
            .lock()
            .expect("optimizer lock")
            .load_state_dict(&OptimizerState {
                state,
                param_groups,
            })
            .py()
    }
}

/// `torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=2.0)`: the total norm.
#[pyfunction]
#[pyo3(signature = (parameters, max_norm, norm_type=2.0))]
pub fn clip_grad_norm_(
    parameters: &Bound<'_, PyAny>,
    max_norm: f64,
    norm_type: f64,
) -> PyResult<PyTensor> {
    let params = crate::ops::tensor_list(parameters)?;
    Ok(
        tinytorch::optim::clip_grad_norm_(&params, max_norm, norm_type)
            .py()?
            .into(),
    )
}

/// `torch.nn.utils.clip_grad_value_(parameters, clip_value)`.
#[pyfunction]
pub fn clip_grad_value_(parameters: &Bound<'_, PyAny>, clip_value: f64) -> PyResult<()> {
    let params = crate::ops::tensor_list(parameters)?;
    tinytorch::optim::clip_grad_value_(&params, clip_value).py()
}
