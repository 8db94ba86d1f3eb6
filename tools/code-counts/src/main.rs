//! `code-counts [--list] [CRATE_DIR...]`: per crate, the production code's `Result<_, String>` types,
//! `.unwrap_or_default()` calls and functions over 100 lines (see the library for what counts), and
//! their total; `--list` also prints every site (`file:line: kind`). Without directories: every member
//! of the workspace that has a `src/`. `scripts/code-counts` runs it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let list = args.iter().any(|a| a == "--list");
    if let Some(bad) = args.iter().find(|a| a.starts_with('-') && *a != "--list") {
        return Err(format!("unknown option {bad} (usage: code-counts [--list] [CRATE_DIR...])").into());
    }
    let mut dirs: Vec<PathBuf> = args.iter().filter(|a| !a.starts_with('-')).map(PathBuf::from).collect();
    if dirs.is_empty() {
        dirs = module_cycles::workspace_members(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))?;
    }
    println!("{:<16} {:>17} {:>19} {:>15}", "crate", "Result<_, String>", "unwrap_or_default()", "fns > 100 lines");
    let mut total = [0; 3];
    for d in &dirs {
        let krate = d.file_name().map_or_else(|| d.display().to_string(), |n| n.to_string_lossy().into_owned());
        let c = code_counts::crate_counts(d)?;
        let n = [c.result_string.len(), c.unwrap_or_default.len(), c.long_fns.len()];
        println!("{krate:<16} {:>17} {:>19} {:>15}", n[0], n[1], n[2]);
        for (t, x) in total.iter_mut().zip(n) {
            *t += x;
        }
        if list {
            for (kind, sites) in [
                ("Result<_, String>", &c.result_string),
                ("unwrap_or_default()", &c.unwrap_or_default),
                ("long fn", &c.long_fns),
            ] {
                for s in sites {
                    let sep = if s.what.is_empty() { "" } else { " " };
                    println!("  {}:{}: {kind}{sep}{}", s.file.display(), s.line, s.what);
                }
            }
        }
    }
    println!("{:<16} {:>17} {:>19} {:>15}", "total", total[0], total[1], total[2]);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("code-counts: {e}");
            ExitCode::from(2)
        }
    }
}
