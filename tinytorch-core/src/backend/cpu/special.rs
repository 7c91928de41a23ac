//! Scalar special functions in f64 for `torch.special` (and `torch.lgamma`, `digamma`,
//! `erfinv`, `erfc`, `i0`): the CPU kernel computes every dtype through these and rounds once.
//! `erfc` and `lgamma` are libm's; the others are written here from their textbook series
//! (Abramowitz & Stegun 6.3, 6.4, 9.6, 9.7) and the CUDA kernel
//! (`backend/cuda/kernels/elementwise.cu`) mirrors them line by line.

use std::f64::consts::PI;

/// `erfc(x) = 1 - erf(x)` without the cancellation of `1 - erf(x)` for large `x`.
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// `log|Gamma(x)|` (`torch.lgamma`); +inf at the poles 0, -1, -2, ...
pub fn lgamma(x: f64) -> f64 {
    libm::lgamma_r(x).0
}

/// The inverse of `erf` on `(-1, 1)`, ±inf at ±1, NaN outside. A first guess from Giles'
/// single-precision polynomials ("Approximating the erfinv function", 2010), then two Newton
/// steps on `erf(x) = y` (on `erfc(x) = 1 - y` near ±1, where `erf` is flat), each
/// doubling the correct digits to full f64 precision.
pub fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            p = c + p * w;
        }
        p * y
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            p = c + p * w;
        }
        p * y
    };
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    for _ in 0..2 {
        let slope = two_over_sqrt_pi * (-x * x).exp();
        if slope == 0.0 {
            break;
        }
        // y - erf(x); near ±1 from the small complements, erfc(|x|) - (1 - |y|).
        let residual = if y.abs() > 0.5 {
            (erfc(x.abs()) - (1.0 - y.abs())) * y.signum()
        } else {
            y - libm::erf(x)
        };
        x += residual / slope;
    }
    x
}

/// The digamma function `psi(x) = d/dx log Gamma(x)` (`torch.digamma`): -inf at 0 and NaN
/// at the negative integers (PyTorch's values at the poles), reflection for `x < 0`, the
/// recurrence `psi(x) = psi(x + 1) - 1/x` up to `x >= 12`, then the asymptotic series (its
/// first omitted term is below 1e-18 there; from 6 it was 2e-13).
pub fn digamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::NEG_INFINITY.copysign(-x);
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        // psi(1 - x) - psi(x) = pi / tan(pi x)
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 12.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let z = 1.0 / (x * x);
    // Bernoulli terms B_2k / (2k x^2k): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12.
    let series = z
        * (1.0 / 12.0
            - z * (1.0 / 120.0
                - z * (1.0 / 252.0
                    - z * (1.0 / 240.0 - z * (1.0 / 132.0 - z * (691.0 / 32760.0 - z / 12.0))))));
    acc + x.ln() - 0.5 / x - series
}

/// The trigamma function `psi'(x)` (`torch.polygamma(1, x)`, digamma's derivative): +inf at
/// the poles 0, -1, ..., reflection for `x < 0`, recurrence up to `x >= 12` (from 6 the
/// series' first omitted term was 1e-11), then the asymptotic series `1/x + 1/(2x^2) + sum
/// B_2k / x^(2k+1)`.
pub fn trigamma(x: f64) -> f64 {
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.0 {
        // psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x)
        let s = (PI * x).sin();
        return -trigamma(1.0 - x) + PI * PI / (s * s);
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 12.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let z = 1.0 / (x * x);
    let series = 1.0 / x
        + z / 2.0
        + z / x
            * (1.0 / 6.0 - z * (1.0 / 30.0 - z * (1.0 / 42.0 - z * (1.0 / 30.0 - z * 5.0 / 66.0))));
    acc + series
}

/// `I_nu(x) e^-|x|` for `nu` 0 or 1 and `x >= 0`: the power series
/// `sum (x/2)^(2k+nu) / (k! (k+nu)!)` (all terms positive, so no cancellation) up to
/// `x = 30`, the asymptotic expansion `e^x / sqrt(2 pi x) * sum_k (-1)^k a_k(nu) / x^k`
/// beyond, where it is exact to rounding.
fn bessel_i_scaled(nu: u32, x: f64) -> f64 {
    if x <= 30.0 {
        let q = x * x / 4.0;
        let mut term = if nu == 0 { 1.0 } else { x / 2.0 };
        let mut sum = term;
        let mut k = 1.0;
        while term > sum * 1e-17 {
            term *= q / (k * (k + nu as f64));
            sum += term;
            k += 1.0;
        }
        return sum * (-x).exp();
    }
    let mu = 4.0 * (nu * nu) as f64;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..60 {
        let kf = k as f64;
        let next = -term * (mu - (2.0 * kf - 1.0).powi(2)) / (kf * 8.0 * x);
        if next.abs() >= term.abs() {
            break;
        }
        term = next;
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum / (2.0 * PI * x).sqrt()
}

/// The modified Bessel function of the first kind of order 0 (`torch.i0`).
pub fn i0(x: f64) -> f64 {
    let ax = x.abs();
    bessel_i_scaled(0, ax) * ax.exp()
}

/// `i0(x) * exp(-|x|)` (`torch.special.i0e`), finite for every `x`.
pub fn i0e(x: f64) -> f64 {
    bessel_i_scaled(0, x.abs())
}

/// The modified Bessel function of the first kind of order 1 (`torch.special.i1`), odd.
pub fn i1(x: f64) -> f64 {
    let ax = x.abs();
    (bessel_i_scaled(1, ax) * ax.exp()).copysign(x)
}

/// `i1(x) * exp(-|x|)` (`torch.special.i1e`).
pub fn i1e(x: f64) -> f64 {
    bessel_i_scaled(1, x.abs()).copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs().max(1e-300)
    }

    #[test]
    fn erfinv_inverts_erf() {
        for &y in &[
            -0.999999,
            -0.9,
            -0.5,
            -0.1,
            0.0,
            1e-8,
            0.3,
            0.7,
            0.99,
            0.999_999_999,
        ] {
            let x = erfinv(y);
            assert!(
                close(libm::erf(x), y, 1e-15) || (libm::erf(x) - y).abs() < 1e-16,
                "{y}"
            );
        }
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert!(erfinv(1.5).is_nan());
    }

    #[test]
    fn digamma_and_trigamma_known_values() {
        // psi(1) = -gamma (Euler-Mascheroni), psi(1/2) = -gamma - 2 ln 2.
        let g = 0.577_215_664_901_532_9;
        assert!(close(digamma(1.0), -g, 1e-15));
        assert!(close(digamma(0.5), -g - 2.0 * 2f64.ln(), 1e-15));
        assert!(close(
            digamma(-0.5),
            digamma(1.5) - PI / (-0.5 * PI).tan(),
            1e-14
        ));
        assert!(close(digamma(100.0), 4.600_161_852_738_087, 1e-15));
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
        assert!(digamma(-2.0).is_nan());
        // psi'(1) = pi^2 / 6, psi'(1/2) = pi^2 / 2.
        assert!(close(trigamma(1.0), PI * PI / 6.0, 1e-14));
        assert!(close(trigamma(0.5), PI * PI / 2.0, 1e-14));
        // The derivative of digamma by central differences.
        for &x in &[0.3, 2.5, 7.0, -1.5] {
            let h = 1e-6;
            let num = (digamma(x + h) - digamma(x - h)) / (2.0 * h);
            assert!(close(trigamma(x), num, 1e-7), "{x}");
        }
    }

    #[test]
    fn bessel_known_values() {
        // Abramowitz & Stegun table 9.8 / scipy.special values.
        assert!(close(i0(1.0), 1.266_065_877_752_008_4, 1e-15));
        assert!(close(i1(1.0), 0.565_159_103_992_485_1, 1e-15));
        assert!(close(i0(10.0), 2_815.716_628_466_254, 1e-14));
        assert!(close(i0e(50.0), 0.056_561_626_647_454_184, 1e-13));
        assert!(close(i1e(50.0), 0.055_993_123_892_895_395, 1e-13));
        assert!(close(i0e(29.9), bessel_i_scaled(0, 29.9), 0.0));
        // Continuity where the series hands over to the asymptotic expansion.
        assert!(close(i0e(30.0), i0e(30.000_000_001), 1e-9));
        assert!(close(i1e(30.0), i1e(30.000_000_001), 1e-9));
        assert_eq!(i1(-2.0), -i1(2.0));
        assert!(close(lgamma(0.5), 0.5 * PI.ln(), 1e-15));
    }
}
