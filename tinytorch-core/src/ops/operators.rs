//! `+ - * /` and unary `-` on `&Tensor`, `Tensor`, `Result<Tensor>`, `f64` and `i64` (a Python
//! float and int: `&x * 2` keeps an integer tensor integral, `&x * 2.0` does not), all giving
//! `Result<Tensor>`, so that a chain like `((&a * &b)? + &c)?` stays short. Rust's orphan rule
//! forbids `Result<Tensor> op Result<Tensor>` and `Result<Tensor> op f64`; those need a `?`.

use crate::error::Result;
use crate::tensor::{Scalar, Tensor};
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
        scalar_binop!($trait, $method, $scalar_fn, $rscalar, f64);
        scalar_binop!($trait, $method, $scalar_fn, $rscalar, i64);
    };
}

/// The scalar forms for one Rust number type (`f64`: a Python float, `i64`: a Python int).
macro_rules! scalar_binop {
    ($trait:ident, $method:ident, $scalar_fn:ident, $rscalar:expr, $num:ty) => {
        impl $trait<$num> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: $num) -> Result<Tensor> {
                self.$scalar_fn(rhs)
            }
        }
        impl $trait<$num> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: $num) -> Result<Tensor> {
                self.$scalar_fn(rhs)
            }
        }
        impl $trait<&Tensor> for $num {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                #[allow(clippy::redundant_closure_call)]
                ($rscalar)(rhs, Scalar::from(self))
            }
        }
    };
}

tensor_binop!(Add, add, add, add_scalar, |t: &Tensor, s: Scalar| t
    .add_scalar(s));
tensor_binop!(Sub, sub, sub, sub_scalar, |t: &Tensor, s: Scalar| t
    .rsub_scalar(s));
tensor_binop!(Mul, mul, mul, mul_scalar, |t: &Tensor, s: Scalar| t
    .mul_scalar(s));
tensor_binop!(Div, div, div, div_scalar, |t: &Tensor, s: Scalar| t
    .rdiv_scalar(s));

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(self)
    }
}
impl Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(&self)
    }
}
