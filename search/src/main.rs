//! `probelab-rg [FLAGS] PATTERN [PATH...]`: the search engine with ripgrep's command line, output and exit
//! codes (0 match, 1 none, 2 error) — the same program as `probelab rg`, without the lab around it, so the
//! engine's differential tests against ripgrep need nothing but this crate.

fn main() -> std::process::ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::ExitCode::from(probelab_search::main_stdio(&argv))
}
