//! `tinytorch dashboard --logdir runs/`: a local web server that shows the training runs
//! under a log directory while they train: their curves overlaid (loss, accuracy, learning
//! rate, samples/s against step or epoch, smoothed), each model's layer table, parameter and
//! gradient histograms over time, and for image classifiers the confusion matrix,
//! misclassified test images and the feature maps of every convolution; for language models
//! the text sampled at each checkpoint. The page updates itself (server-sent events) as the
//! runs' files change.
//!
//! It binds to 127.0.0.1 unless told otherwise and reads only the files of runs inside the
//! log directory (see [`runs`]).

mod charts;
mod features;
mod images;
mod routes;
/// Reading run directories: what the dashboard lists and draws.
pub mod runs;

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use tinytorch::{Error, Result};

pub use routes::router;

/// Arguments of `tinytorch dashboard`.
#[derive(Args, Debug)]
pub struct DashboardArgs {
    /// The directory whose runs to show (every directory below it, up to three levels, that
    /// holds a metrics.jsonl or steps.jsonl written by `train` or `train-lm`).
    #[arg(long, default_value = "runs")]
    pub logdir: PathBuf,
    /// Address to listen on (127.0.0.1: this machine only).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Port to listen on (0: any free port, printed at start).
    #[arg(long, default_value_t = 6006)]
    pub port: u16,
}

/// Run the dashboard until Ctrl-C.
pub fn run(args: &DashboardArgs) -> Result<()> {
    let logdir = runs::LogDir::open(&args.logdir)?;
    // Every chart has text: without a font, say so now rather than on every request.
    tinytorch::train::register_plot_font()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let addr = SocketAddr::new(args.host, args.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::invalid("dashboard", format!("cannot listen on {addr}: {e}")))?;
        let local = listener.local_addr()?;
        println!(
            "TinyTorch dashboard of {} at http://{local}/ (Ctrl-C to stop)",
            logdir.root().display()
        );
        axum::serve(listener, router(logdir))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests;
