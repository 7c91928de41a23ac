//! What the shape and dim arguments of tensor methods accept: a list of sizes or dims
//! ([`Dims`]: `&[2, -1]`, `x.shape()`, `&vec_of_usize`) and one dim ([`Dim`]: `1`, `-1`,
//! `d: usize`), so that code holding `usize` shapes and dims passes them as they are, and
//! code writing PyTorch's negative dims and `-1` sizes writes them as it would in Python (as
//! candle's `Dim` and `ShapeWithOneHole` do).
//!
//! Sizes and dims are carried as `isize`: a negative dim counts from the end, a size of -1
//! is inferred (`reshape`, `view`) or kept (`expand`).

use std::borrow::Cow;

/// A list of sizes (`reshape`, `view`, `expand`) or dims (`permute`, `sum`, `mean`, ...):
/// a slice, array (of up to 8 entries) or `Vec` of `isize`, `usize`, `i32` or `i64`.
/// Integer literals without a suffix (`&[2, -1]`) are `i32`s; `&[]` is all dims, or a 0-d
/// shape.
pub trait Dims {
    /// The entries as `isize` (borrowed where they already are).
    fn to_isizes(&self) -> Cow<'_, [isize]>;
}

/// One dim (`transpose`, `unsqueeze`, `flatten`, ...): an `isize`, `usize`, `i32` or `i64`;
/// a negative dim counts from the end.
pub trait Dim: Copy {
    /// The dim as an `isize`.
    fn to_isize(self) -> isize;
}

impl Dims for [isize] {
    fn to_isizes(&self) -> Cow<'_, [isize]> {
        Cow::Borrowed(self)
    }
}

/// `Dims` and `Dim` for the integer types other than `isize`, which convert each entry.
macro_rules! converted {
    ($($t:ty),*) => {$(
        impl Dims for [$t] {
            fn to_isizes(&self) -> Cow<'_, [isize]> {
                Cow::Owned(self.iter().map(|&d| d as isize).collect())
            }
        }
        impl Dim for $t {
            fn to_isize(self) -> isize {
                self as isize
            }
        }
    )*};
}
converted!(usize, i32, i64);

impl Dim for isize {
    fn to_isize(self) -> isize {
        self
    }
}

/// Arrays of 1 to 8 entries of each type, and the empty array only as `isize`: one impl for
/// `[_; 0]` lets `&[]` (all dims, a 0-d shape) infer its type, where a generic array impl
/// would leave it ambiguous. (Longer lists go as slices or `Vec`s.)
macro_rules! arrays {
    ($($n:literal),*) => {$(
        impl<T> Dims for [T; $n]
        where
            [T]: Dims,
        {
            fn to_isizes(&self) -> Cow<'_, [isize]> {
                self.as_slice().to_isizes()
            }
        }
    )*};
}
arrays!(1, 2, 3, 4, 5, 6, 7, 8);

impl Dims for [isize; 0] {
    fn to_isizes(&self) -> Cow<'_, [isize]> {
        Cow::Borrowed(&[])
    }
}

impl<T: Dims + ?Sized> Dims for &T {
    fn to_isizes(&self) -> Cow<'_, [isize]> {
        (**self).to_isizes()
    }
}

impl<T> Dims for Vec<T>
where
    [T]: Dims,
{
    fn to_isizes(&self) -> Cow<'_, [isize]> {
        self.as_slice().to_isizes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes<D: Dims + ?Sized>(d: &D) -> Vec<isize> {
        d.to_isizes().into_owned()
    }

    #[test]
    fn every_form_gives_the_same_isizes() {
        let shape: Vec<usize> = vec![2, 3];
        assert_eq!(sizes(&[2, -1]), [2, -1]);
        assert_eq!(sizes(&[]), [0isize; 0]);
        assert_eq!(sizes(&shape), [2, 3]);
        assert_eq!(sizes(&shape[..]), [2, 3]);
        assert_eq!(sizes(&[2usize, 3]), [2, 3]);
        assert_eq!(sizes(&vec![-1isize]), [-1]);
        assert_eq!(sizes::<[i64]>(&[4i64, -2]), [4, -2]);
        assert!(matches!([1isize, 2].to_isizes(), Cow::Borrowed(_)));
        assert_eq!((3usize).to_isize(), 3);
        assert_eq!(Dim::to_isize(-1), -1);
    }
}
