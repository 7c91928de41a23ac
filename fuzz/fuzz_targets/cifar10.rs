//! CIFAR-10 binary batch files, raw or gzip-compressed.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((images, labels)) = tinytorch::data::cifar10::parse_cifar10_batch(data) {
        assert_eq!(images.shape()[0], labels.shape()[0]);
    }
});
