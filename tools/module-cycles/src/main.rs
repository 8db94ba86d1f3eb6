//! `module-cycles [--max N] [--edges] [CRATE_DIR...]`: prints each crate's module import cycles (see the
//! library) and exits 1 when one has more modules than N (default 6); `--edges` prints every edge of the
//! graph first (`crate: a -> b`), to see why a cycle closes. Without directories: every member of the
//! workspace that has a `src/`. `scripts/module-cycles` runs it; `.ci/run` with `--max 1`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn run(args: &[String]) -> Result<bool, Box<dyn std::error::Error>> {
    let mut limit = 6;
    let mut edges = false;
    let mut dirs = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--max" {
            let n = it.next().ok_or("--max needs a number")?;
            limit = n.parse().map_err(|_| format!("--max {n}: not a number"))?;
        } else if a == "--edges" {
            edges = true;
        } else {
            dirs.push(PathBuf::from(a));
        }
    }
    if dirs.is_empty() {
        dirs = module_cycles::workspace_members(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))?;
    }
    let mut worst = 0;
    for d in &dirs {
        let krate = d.file_name().map_or_else(|| d.display().to_string(), |n| n.to_string_lossy().into_owned());
        let graph = module_cycles::crate_graph(d)?;
        if edges {
            for (from, to) in graph.iter().flat_map(|(f, ts)| ts.iter().map(move |t| (f, t))) {
                println!("{krate}: {} -> {}", module_cycles::name(from), module_cycles::name(to));
            }
        }
        let comps = module_cycles::cycles(&graph);
        if comps.is_empty() {
            println!("{krate}: no module cycle");
        }
        for c in comps {
            worst = worst.max(c.len());
            let names: Vec<String> = c.iter().map(module_cycles::name).collect();
            println!("{krate}: cycle of {} modules: {}", c.len(), names.join(", "));
        }
    }
    if worst > limit {
        eprintln!("module-cycles: a cycle of {worst} modules is over the limit of {limit}");
        return Ok(false);
    }
    Ok(true)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("module-cycles: {e}");
            ExitCode::from(2)
        }
    }
}
