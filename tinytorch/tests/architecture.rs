//! The layering of docs/DESIGN.md, checked on the sources of both library crates
//! (`tinytorch-core/src` and `tinytorch/src`, one stack: `tinytorch` re-exports the core's
//! modules at the same paths): each module imports only from the layers below it (or its own),
//! the core imports nothing outside the core, and nothing outside `backend/` reaches into a
//! device backend (`backend::cpu`, `backend::cuda`): ops call the backend's one door (the
//! primitives of `BackendStorage` and the fused kernels of `backend/fused/`, `Storage` methods
//! both), which picks the device; nn/, optim/, train/ and the rest call ops. The imports that
//! still break a rule are listed in [`KNOWN_DEVIATIONS`], each with the file that makes it; the
//! test fails on any other, and on a listed one that is gone (so the list only shrinks).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Layers from the bottom; a module may import its own layer and those below.
const LAYERS: &[(&str, u8)] = &[
    ("base", 0),
    ("error", 0),
    // Timing statistics (std only).
    ("benchmark", 0),
    ("backend", 1),
    ("tensor", 2),
    // Grad mode, autocast mode and the compute pool that carries both to its threads.
    ("autograd", 3),
    ("parallel", 3),
    ("amp", 3),
    ("ops", 4),
    ("nn", 5),
    ("optim", 5),
    ("data", 5),
    ("text", 5),
    ("io", 6),
    ("train", 6),
    // Traces a model's step: above nn and optim, beside train.
    ("profile", 6),
    // Process groups and DDP: modules and autograd hooks over nn, collectives over tensors.
    ("distributed", 6),
    // int8 quantization: numerics on tensors, quantized layers beside nn's.
    ("quant", 6),
    // Pruning masks and shrinking: steps optimizers and rebuilds models.
    ("prune", 8),
    ("models", 7),
];

/// The modules of the `tinytorch-core` crate: the only ones its sources may import, and the
/// only ones under `tinytorch-core/src` (the rest live in `tinytorch/src`).
const CORE_MODULES: &[&str] = &[
    "base", "error", "backend", "tensor", "autograd", "parallel", "amp", "ops", "nn", "optim",
    "data", "io",
];

/// Dependencies the core crate must build without (they belong to `tinytorch`, the CLI or the
/// dashboard).
const KEPT_OUT_OF_CORE: &[&str] = &["plotters", "indicatif", "tokenizers", "tokio", "axum"];

/// Files whose layer differs from their folder's (none today: the loss scaler, which steps
/// optimizers, moved from amp/ to optim/).
const FILE_LAYERS: &[(&str, u8)] = &[];

/// The folders that may name a device backend: the backend itself, behind its door.
const NAMING_A_DEVICE: &[&str] = &["backend"];

/// Imports that break a rule today, as (file, what it imports): `crate::<module>` for an
/// upward import, `backend::cpu`/`backend::cuda` for a device backend named outside `backend/`.
const KNOWN_DEVIATIONS: &[(&str, &str)] = &[];

fn layer_of(file: &str) -> Option<u8> {
    if let Some((_, l)) = FILE_LAYERS.iter().find(|(f, _)| *f == file) {
        return Some(*l);
    }
    let top = file.split('/').next()?.trim_end_matches(".rs");
    LAYERS.iter().find(|(m, _)| *m == top).map(|(_, l)| *l)
}

fn module_layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every `.rs` file under `dir`, as paths relative to it.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read source dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The source without `//` comments (doc comments name other layers freely).
fn code_of(source: &str) -> String {
    source
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a source names through `crate::` paths, including each name of a
/// grouped `use crate::{a::x, b::{y, z}}`; `$crate` (inside macros) is not a path of its own.
fn crate_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while let Some(i) = code[at..].find("crate::") {
        let start = at + i;
        at = start + "crate::".len();
        if start > 0 && (bytes[start - 1] == b'$' || is_ident(bytes[start - 1])) {
            continue;
        }
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut part_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => part_start = true,
                    c if part_start && depth == 1 && !c.is_whitespace() => {
                        found.insert(ident_at(&group[j..]));
                        part_start = false;
                    }
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
        } else {
            found.insert(ident_at(rest));
        }
    }
    found
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn ident_at(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Whether a source names a device backend (`backend::cpu`, `backend::cuda`, or either inside
/// a grouped `backend::{...}`).
fn device_backends(code: &str) -> BTreeSet<&'static str> {
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    let mut found = BTreeSet::new();
    for (needle, name) in [
        ("backend::cpu", "backend::cpu"),
        ("backend::cuda", "backend::cuda"),
    ] {
        if squeezed.contains(needle) {
            found.insert(name);
        }
    }
    let mut at = 0;
    while let Some(i) = squeezed[at..].find("backend::{") {
        let group_start = at + i + "backend::{".len();
        let end = squeezed[group_start..]
            .find('}')
            .map_or(squeezed.len(), |e| group_start + e);
        for part in squeezed[group_start..end].split(',') {
            match ident_at(part).as_str() {
                "cpu" => found.insert("backend::cpu"),
                "cuda" => found.insert("backend::cuda"),
                _ => false,
            };
        }
        at = group_start;
    }
    found
}

/// The library crates' source folders, as (crate folder, whether it is the core).
const LIBRARY_CRATES: &[(&str, bool)] = &[("tinytorch-core", true), ("tinytorch", false)];

/// Every rule break in the library crates' sources, as (file, what it imports); a file is named
/// relative to its crate's `src/`.
fn violations() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (krate, is_core) in LIBRARY_CRATES {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(krate)
            .join("src");
        for rel in rust_files(&src) {
            let file = rel.to_string_lossy().replace('\\', "/");
            let code = code_of(&std::fs::read_to_string(src.join(&rel)).unwrap());
            if *is_core && code.contains("tinytorch::") {
                out.insert((file.clone(), "tinytorch::".to_string()));
            }
            let Some(layer) = layer_of(&file) else {
                assert!(
                    file == "lib.rs",
                    "{krate}/src/{file}: a module with no layer: add it to LAYERS in \
                     tests/architecture.rs and to the map in docs/DESIGN.md"
                );
                continue;
            };
            let top = file
                .split('/')
                .next()
                .unwrap_or_default()
                .trim_end_matches(".rs");
            assert_eq!(
                CORE_MODULES.contains(&top),
                *is_core,
                "{krate}/src/{file}: the core's modules (CORE_MODULES in tests/architecture.rs) \
                 live in tinytorch-core/src, the others in tinytorch/src"
            );
            for module in crate_modules(&code) {
                if let Some(target) = module_layer(&module) {
                    if target > layer || (*is_core && !CORE_MODULES.contains(&module.as_str())) {
                        out.insert((file.clone(), format!("crate::{module}")));
                    }
                }
            }
            let folder = file.split('/').next().unwrap_or_default();
            if !NAMING_A_DEVICE.contains(&folder) {
                for backend in device_backends(&code) {
                    out.insert((file.clone(), backend.to_string()));
                }
            }
        }
    }
    out
}

#[test]
fn every_import_points_down_the_stack_and_only_the_backend_names_a_device() {
    let found = violations();
    let known: BTreeSet<(String, String)> = KNOWN_DEVIATIONS
        .iter()
        .map(|(f, w)| (f.to_string(), w.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        new.is_empty(),
        "imports against the layering of docs/DESIGN.md (file, import): {new:?}"
    );
    assert!(
        gone.is_empty(),
        "fixed deviations still listed in KNOWN_DEVIATIONS (remove them): {gone:?}"
    );
}

/// The core builds without the plotting, progress-bar, tokenizer and web-server crates: none is
/// a dependency in its manifest.
#[test]
fn the_core_depends_on_no_plotting_progress_or_tokenizers() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tinytorch-core/Cargo.toml");
    let text = std::fs::read_to_string(manifest).unwrap();
    let deps: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split('=').next())
        .map(str::trim)
        .collect();
    for dep in KEPT_OUT_OF_CORE {
        assert!(
            !deps.contains(dep),
            "tinytorch-core/Cargo.toml depends on {dep}"
        );
    }
}

#[test]
fn the_command_line_reaches_no_device_backend() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tinytorch-cli/src");
    for rel in rust_files(&src) {
        let code = code_of(&std::fs::read_to_string(src.join(&rel)).unwrap());
        let found = device_backends(&code);
        assert!(
            found.is_empty(),
            "tinytorch-cli/src/{}: {found:?}",
            rel.display()
        );
    }
}

/// The scanner itself: grouped, nested and macro paths, and backends named in groups.
#[test]
fn the_scanner_reads_grouped_and_nested_paths() {
    let code =
        "use crate::{autograd::{a, b}, tensor::Tensor};\nlet x = crate::ops::f($crate::nn::g);";
    let got: Vec<String> = crate_modules(code).into_iter().collect();
    assert_eq!(got, ["autograd", "ops", "tensor"]);
    assert_eq!(
        device_backends("use crate::backend::{\n  Storage, cpu::pool};")
            .into_iter()
            .collect::<Vec<_>>(),
        ["backend::cpu"]
    );
    assert!(device_backends("use crate::backend::Storage; // backend::cuda").len() == 1);
    assert!(device_backends(&code_of("use crate::backend::Storage; // backend::cuda")).is_empty());
    assert_eq!(layer_of("optim/grad_scaler.rs"), Some(5));
    assert_eq!(layer_of("amp/autocast.rs"), Some(3));
    assert_eq!(layer_of("nn/rnn/stack.rs"), Some(5));
}
