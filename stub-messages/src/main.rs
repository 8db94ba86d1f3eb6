//! `stub-messages --script FILE [--record FILE] [--port N] [--host ADDR]`: serves a script, prints the
//! base URL on stdout, records every exchange as JSONL, and runs until SIGINT or SIGTERM. Then it stops
//! accepting, gives open connections `[stub] shutdown_grace_ms` (500 ms by default), cuts the rest
//! (recorded), and exits 0 — within 2 s even with idle or half-sent connections open. A second signal
//! during the stop exits at once.

use anyhow::Context;
use clap::Parser;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use stub_messages::{serve, Recorder, Script, Stub};

/// A stand-in for the Anthropic Messages API that plays a script and records the wire.
#[derive(Parser, Debug)]
#[command(name = "stub-messages", version)]
struct Args {
    /// The script: a probe file or any TOML file with `[[turn]]` tables.
    #[arg(long)]
    script: PathBuf,
    /// Where to write the exchanges (JSONL, one line per exchange, flushed per exchange).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Port to listen on (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stub-messages: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let script = Script::load(&args.script)?;
    let sink: Option<Box<dyn Write + Send>> = match &args.record {
        Some(p) => Some(Box::new(
            std::fs::File::create(p).with_context(|| format!("cannot create the record file {}", p.display()))?,
        )),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let stub = Arc::new(Stub::new(script, Recorder::new(sink)));
        let running = serve(stub.clone(), SocketAddr::new(args.host, args.port))
            .await
            .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
        // the handlers first: a caller may signal as soon as it has read the URL
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let mut out = std::io::stdout();
        writeln!(out, "{}", running.url())?;
        out.flush()?;
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        tokio::select! {
            _ = running.stop() => {}
            _ = int.recv() => eprintln!("stub-messages: second signal: not waiting for open connections"),
            _ = term.recv() => eprintln!("stub-messages: second signal: not waiting for open connections"),
        }
        for (name, served, total) in stub.progress() {
            eprintln!("stub-messages: conversation {name}: {served}/{total} turns served");
        }
        if let Some(e) = stub.recorder().sink_error() {
            anyhow::bail!("writing the record failed: {e}");
        }
        Ok(())
    })
}
