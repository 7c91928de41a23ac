//! The op codes that the launchers pass to the kernels and the kernels switch on, kept in
//! one table: the Rust side uses the constants below, and every kernel source is compiled
//! after a `#define GROUP_NAME code` for each of them (`UNARY_RELU`, `REDUCE_SUM`, ...),
//! generated from the same table ([`defines`]), so that the two sides cannot drift apart.

/// Declares each group as a module of `i32` constants and [`defines`] as their `#define`s.
macro_rules! op_codes {
    ($($(#[$doc:meta])* $group:ident = $prefix:literal { $($name:ident = $code:literal,)* })*) => {
        $(
            $(#[$doc])*
            pub mod $group {
                $(
                    #[doc = concat!("`", $prefix, "_", stringify!($name), "` in the kernels.")]
                    pub const $name: i32 = $code;
                )*
            }
        )*

        /// The C preprocessor lines that give the kernels every code of the table.
        pub fn defines() -> String {
            let mut lines = String::new();
            $($(
                lines.push_str(concat!(
                    "#define ", $prefix, "_", stringify!($name), " ", stringify!($code), "\n"
                ));
            )*)*
            lines
        }
    };
}

op_codes! {
    /// Unary ops (elementwise.cu `unary_float`, `unary_int`); the integer kernel takes the
    /// codes that are defined on integers.
    unary = "UNARY" {
        NEG = 0,
        ABS = 1,
        SIGN = 2,
        EXP = 3,
        LOG = 4,
        LOG2 = 5,
        LOG1P = 6,
        EXPM1 = 7,
        SQRT = 8,
        RSQRT = 9,
        SQUARE = 10,
        RECIPROCAL = 11,
        SIN = 12,
        COS = 13,
        TAN = 14,
        TANH = 15,
        SIGMOID = 16,
        RELU = 17,
        LEAKY_RELU = 18,
        ELU = 19,
        GELU = 20,
        GELU_TANH = 21,
        SILU = 22,
        SOFTPLUS = 23,
        ERF = 24,
        FLOOR = 25,
        CEIL = 26,
        ROUND = 27,
        ADD_SCALAR = 28,
        MUL_SCALAR = 29,
        POW_SCALAR = 30,
        SCALAR_POW = 31,
        CLAMP = 32,
        CLAMP_NAN = 33,
        ERFC = 34,
        ERFINV = 35,
        LGAMMA = 36,
        DIGAMMA = 37,
        TRIGAMMA = 38,
        I0 = 39,
        I0E = 40,
        I1 = 41,
        I1E = 42,
    }
    /// Binary ops (elementwise.cu `binary_float`, `binary_int`).
    binary = "BINARY" {
        ADD = 0,
        SUB = 1,
        MUL = 2,
        DIV = 3,
        POW = 4,
        MAXIMUM = 5,
        MINIMUM = 6,
    }
    /// Comparisons and logical ops (elementwise.cu `compare`).
    cmp = "CMP" {
        LT = 0,
        LE = 1,
        GT = 2,
        GE = 3,
        EQ = 4,
        NE = 5,
        AND = 6,
        OR = 7,
        XOR = 8,
    }
    /// Reductions (reduce.cu `reduce_combine`); from `ALL` on, the output is boolean.
    reduce = "REDUCE" {
        SUM = 0,
        PROD = 1,
        MAX = 2,
        MIN = 3,
        ALL = 4,
        ANY = 5,
    }
    /// Arg-reductions (reduce.cu `arg_reduce_*`).
    arg = "ARG" {
        MAX = 0,
        MIN = 1,
    }
    /// Inclusive scans along a dim (reduce.cu `scan_*`).
    scan = "SCAN" {
        CUMSUM = 0,
        CUMPROD = 1,
        REV_CUMSUM = 2,
    }
    /// What a random draw samples (random.cu).
    random = "RANDOM" {
        UNIFORM = 0,
        NORMAL = 1,
        BERNOULLI = 2,
    }
    /// What batch norm's output pass does after normalising (batch_norm.cu).
    bn_then = "BN_THEN" {
        NOTHING = 0,
        RELU = 1,
        ADD_RELU = 2,
    }
    /// LayerNorm or RMSNorm (norm.cu).
    norm = "NORM" {
        LAYER = 0,
        RMS = 1,
    }
    /// How Adam applies weight decay (adam.cu).
    adam = "ADAM" {
        NO_DECAY = 0,
        L2 = 1,
        DECOUPLED = 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernels see each code under its group's prefix, once.
    #[test]
    fn every_code_becomes_one_define() {
        let d = defines();
        assert!(d.contains("#define UNARY_RELU 17\n"), "{d}");
        assert!(d.contains("#define REDUCE_ANY 5\n"));
        assert!(d.contains("#define ADAM_DECOUPLED 2\n"));
        let names: Vec<&str> = d.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(names.len(), unique.len());
        assert_eq!(unary::I1E, 42);
    }
}
