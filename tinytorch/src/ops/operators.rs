//! `+ - * /` and unary `-` on `&Tensor`, `Tensor`, `Result<Tensor>` and `f64`, all giving
//! `Result<Tensor>`, so that a chain like `((&a * &b)? + &c)?` stays short. Rust's orphan rule
//! forbids `Result<Tensor> op Result<Tensor>` and `Result<Tensor> op f64`; those need a `?`.

use crate::error::Result;
use crate::tensor::Tensor;
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! tensor_binop {
    ($trait:ident, $method:ident, $tensor_fn:ident, $scalar_fn:ident, $rscalar:expr) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                self.$tensor_fn(rhs)
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                (&self).$tensor_fn(&rhs)
            }
        }
        impl $trait<&Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                (&self).$tensor_fn(rhs)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                self.$tensor_fn(&rhs)
            }
        }
        impl $trait<&Tensor> for Result<Tensor> {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                self?.$tensor_fn(rhs)
            }
        }
        impl $trait<Result<Tensor>> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Result<Tensor>) -> Result<Tensor> {
                self.$tensor_fn(&rhs?)
            }
        }
        impl $trait<f64> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: f64) -> Result<Tensor> {
                self.$scalar_fn(rhs)
            }
        }
        impl $trait<f64> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: f64) -> Result<Tensor> {
                self.$scalar_fn(rhs)
            }
        }
        impl $trait<&Tensor> for f64 {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                #[allow(clippy::redundant_closure_call)]
                ($rscalar)(rhs, self)
            }
        }
    };
}

tensor_binop!(Add, add, add, add_scalar, |t: &Tensor, s: f64| t
    .add_scalar(s));
tensor_binop!(Sub, sub, sub, sub_scalar, |t: &Tensor, s: f64| t
    .rsub_scalar(s));
tensor_binop!(Mul, mul, mul, mul_scalar, |t: &Tensor, s: f64| t
    .mul_scalar(s));
tensor_binop!(Div, div, div, div_scalar, |t: &Tensor, s: f64| t
    .rdiv_scalar(s));

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        self.mul_scalar(-1.0)
    }
}
impl Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        self.mul_scalar(-1.0)
    }
}
