//! `probelab`: the probe lab's command line. For now it only names what it will run; the probe runner
//! lands with the probe-runner issue.

fn main() {
    println!(
        "probelab {}: the probe runner is not built yet; see README.md",
        env!("CARGO_PKG_VERSION")
    );
}
