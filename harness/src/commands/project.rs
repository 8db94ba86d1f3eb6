//! The project's own use cases: `init`, `new`, `import`, `list`, `review`, `gc-blobs`, `install`,
//! `fake-mcp`.

use crate::exit::{Failed as _, Failure, Outcome, Usage as _};
use crate::project::Project;
use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// `probelab install SUBJECT...`: each subject installed (or found) and prepared, a line each saying
/// what it is; exit 2 on a subject that is not one, 1 when one cannot be installed.
pub fn install(project: &Project, subjects: &[String]) -> Outcome {
    let registry = project.registry();
    let ids = subjects.iter().map(|s| registry.parse(s)).collect::<Result<Vec<_>, _>>().usage()?;
    for id in &ids {
        let subject = registry.prepare(id).map_err(|e| Failure::msg(1, format!("{id}: {}", crate::exit::chain(&e))))?;
        println!("{id}: {}", subject.description());
    }
    Ok(ExitCode::SUCCESS)
}

/// `probelab init [DIR]`: probelab.toml and the empty probes/, golden/, fixtures/; exit 2 when they
/// cannot be written.
pub fn init(dir: Option<PathBuf>) -> Outcome {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    for m in crate::project::init(&dir).usage()? {
        println!("wrote {}", m.display());
    }
    println!("next: probelab new NAME (a probe skeleton), probelab run --bless (its first golden), probelab run");
    Ok(ExitCode::SUCCESS)
}

/// `probelab fake-mcp`: the fixture MCP server on stdio (or one that never answers).
pub fn fake_mcp(trace: Option<PathBuf>, never_answer: bool) -> Outcome {
    if never_answer {
        crate::fake_mcp::never_answer();
        return Ok(ExitCode::SUCCESS);
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let rt = rt.context("cannot start the runtime").usage()?;
    rt.block_on(crate::fake_mcp::serve_stdio(trace)).map_err(|e| Failure::msg(1, e))?;
    Ok(ExitCode::SUCCESS)
}

/// `probelab review`: exit 2 when the pending goldens cannot be listed, 1 when one cannot be accepted or
/// rejected.
pub fn review(project: &Project, accept_all: bool, reject_all: bool) -> Outcome {
    use std::io::{BufRead, Write};
    let pending = crate::transcript::review::pending(&project.golden);
    let pending = pending.with_context(|| project.golden.display().to_string()).usage()?;
    if pending.is_empty() {
        println!("no pending goldens (.snap.new) under {}", project.golden.display());
        return Ok(ExitCode::SUCCESS);
    }
    let (mut accepted, mut rejected, mut skipped) = (0usize, 0usize, 0usize);
    let mut answers = std::io::stdin().lock().lines();
    for (i, p) in pending.iter().enumerate() {
        println!("[{}/{}] {}", i + 1, pending.len(), project.show(&p.golden));
        let choice = if accept_all {
            'a'
        } else if reject_all {
            'r'
        } else {
            match p.diff() {
                Ok(d) => print!("{d}"),
                Err(e) => eprintln!("probelab review: {}: {e}", p.new.display()),
            }
            print!("accept (a), reject (r), skip (s)? ");
            let _ = std::io::stdout().flush();
            // no more answers (end of input): the rest are skipped, left pending
            let answer = answers.next().and_then(Result::ok).unwrap_or_else(|| "s".into());
            answer.trim().chars().next().unwrap_or('s').to_ascii_lowercase()
        };
        let done = match choice {
            'a' => p.accept(&project.golden).map(|()| accepted += 1),
            'r' => p.reject().map(|()| rejected += 1),
            _ => {
                skipped += 1;
                Ok(())
            }
        };
        done.with_context(|| p.golden.display().to_string()).failed()?;
    }
    println!("{accepted} accepted, {rejected} rejected, {skipped} skipped");
    Ok(ExitCode::SUCCESS)
}

/// `probelab gc-blobs`: exit 2 when the goldens cannot be read, 1 when a blob cannot be removed.
pub fn gc_blobs(project: &Project) -> Outcome {
    let golden = project.golden.clone();
    let unused = crate::transcript::golden::unreferenced_blobs(&golden);
    let unused = unused.with_context(|| golden.display().to_string()).usage()?;
    for p in &unused {
        std::fs::remove_file(p).with_context(|| p.display().to_string()).failed()?;
    }
    println!("removed {} unreferenced blob(s) from {}", unused.len(), golden.join("blobs").display());
    Ok(ExitCode::SUCCESS)
}

/// `probelab list`: exit 2 on a probe-file error, 1 when stdout cannot be written (a reader that stops
/// early, `probelab list | head`, is no error: no panic on the broken pipe).
pub fn list(project: &Project) -> Outcome {
    let probes = super::load_probes(project, std::slice::from_ref(&project.probes)).usage()?;
    use std::fmt::Write as _;
    let mut out = String::from("probes:\n");
    for p in &probes {
        let subjects = p.subjects.join(",");
        let _ = writeln!(out, "  {:<40} {:<24} {:<12} {}", p.id, p.claims.join(","), subjects, project.show(&p.path));
    }
    out.push_str("claims:\n");
    for c in crate::claims::all().into_iter().chain(project.claims.iter().cloned()) {
        let by: Vec<&str> = probes.iter().filter(|p| p.claims.contains(&c.id)).map(|p| p.id.as_str()).collect();
        let summary: String = c.summary.chars().take(70).collect();
        let _ = writeln!(out, "  {:<8} {:<3} {:<72} {}", c.id, by.len(), summary, by.join(" "));
    }
    out.push_str("subjects:\n");
    out.push_str(&project.registry().listing());
    match std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("cannot write").failed(),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// What `probelab new` writes: a commented probe that passes.
pub const SKELETON: &str = r#"# A probe: a scripted conversation, the subject runs the tools, the stub records the wire.
# Format: docs/probe-format.md. Run it: probelab run probes/NAME.toml --bless (first time), then probelab run.
id = "ID"
claims = ["READ-1"]                       # claim ids from docs/claims.md
about = "What this probe shows, in one line"
# subjects = ["builtin"]                  # default: DEFAULT_SUBJECTS

[fixture]
files."f.txt" = "one\ntwo\nthree\n"

# [settings]                              # Claude Code settings.json shape
# permissions = { deny = ["Read(secrets/**)"] }

[[turn]]                                  # the model's 1st answer; {cwd} is the sandbox's cwd
tool_use = [{ name = "Read", input = { file_path = "{cwd}/f.txt" } }]

[[turn]]
text = "done"

[[check]]                                 # result = N (N-th scripted tool_use) | result = "ID" (a tool_use given id = "ID") | request = N | file = "path"
result = 1
is_error = false
contains = "1\tone\n2\ttwo"
"#;

/// `probelab import`: exit 2 on a session that cannot be read or imported, 1 when what import made does
/// not parse (a bug of import).
pub fn import(project: &Project, session: &std::path::Path, name: Option<String>) -> Outcome {
    // a regular file within the cap: a FIFO or /dev/zero is refused before it is opened
    let text = crate::safe_fs::read_capped(session, crate::safe_fs::MAX_DATA_BYTES)
        .and_then(|b| String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
        .with_context(|| session.display().to_string())
        .usage()?;
    let stem: String = session.file_stem().map(|s| s.to_string_lossy().chars().take(8).collect()).unwrap_or_default();
    let name = name.unwrap_or_else(|| format!("imported/{stem}"));
    let rel = probe_name(&name).map_err(|e| Failure::msg(2, e))?;
    let id = rel.replace('/', ".");
    let probe = crate::import::import(session, &text, &id).usage()?;
    // what import writes, `run` must take: checked with the parser before it is written
    let file = project.probes.join(format!("{rel}.toml"));
    if let Err(e) = crate::probe::parse(&file, &probe) {
        let why = format!("the probe made of {} does not parse (a bug of import): {e}", session.display());
        return Err(Failure::msg(1, why));
    }
    write_probe(project, &rel, &probe)
}

/// A probe's name as `new` and `import` take it (`read/window`, `.toml` optional): a path under probes/,
/// never outside it, whose id is path-safe.
pub fn probe_name(name: &str) -> Result<String, String> {
    let rel = name.strip_suffix(".toml").unwrap_or(name);
    crate::safe_fs::confined_name(rel)?;
    let id = rel.replace('/', ".");
    if !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
        return Err(format!(
            "{name:?}: a probe name is [A-Za-z0-9._-] in /-separated parts (its id names golden files)"
        ));
    }
    Ok(rel.to_string())
}

/// Writes `probes/REL.toml` (never over an existing file, never outside probes/, no link followed).
pub fn write_probe(project: &Project, rel: &str, text: &str) -> Outcome {
    let path = project.probes.join(format!("{rel}.toml"));
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(Failure::msg(2, format!("{} exists already", path.display())));
    }
    let written = crate::safe_fs::write_inside(&project.probes, &path, text.as_bytes());
    written.with_context(|| path.display().to_string()).usage()?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `probelab new NAME`: the skeleton written as probes/NAME.toml (never over a file).
pub fn new(project: &Project, name: &str) -> Outcome {
    let rel = probe_name(name).map_err(|e| Failure::msg(2, e))?;
    let id = rel.replace('/', ".");
    let text =
        SKELETON.replace("\"ID\"", &format!("{id:?}")).replace("DEFAULT_SUBJECTS", crate::probe::DEFAULT_SUBJECTS);
    write_probe(project, &rel, &text)
}
