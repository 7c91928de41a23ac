//! The `tinytorch` command. TODO: subcommands (bench now; train/eval with the training issue).

fn main() {
    println!("tinytorch {}", env!("CARGO_PKG_VERSION"));
}
