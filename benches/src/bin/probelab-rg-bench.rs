//! `probelab-rg` for the benches: the same program (`probelab_search::main_stdio`), built with this
//! package so that a bench finds it at `CARGO_BIN_EXE_probelab-rg-bench`, as fresh as the bench.

fn main() -> std::process::ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::ExitCode::from(probelab_search::main_stdio(&argv))
}
