//! IDX files (MNIST, Fashion-MNIST), raw or gzip-compressed.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = tinytorch::data::idx::parse_idx_file(data) {
        // What parsed must be a whole tensor of the header's shape.
        assert_eq!(t.numel(), t.shape().iter().product::<usize>());
    }
});
