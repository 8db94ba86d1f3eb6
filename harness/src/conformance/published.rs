//! The committed conformance table (`docs/conformance/`): Claude Code's column read from its newest
//! committed goldens, and one column per third-party agent the project pins (the registered kinds at
//! their pinned versions, the command subjects with an `install`), each a committed measurement —
//! `columns/<subject>.json`, the cell of every probe as `probelab conformance --publish` ran it, with
//! the SHA-256 of the probe file it ran and the subject as its goldens describe it (package, version,
//! program digest). `table.txt`, `table.json` and `table.html` are made from those files alone, so the
//! observatory's stale-file rule holds them ([`crate::observatory::watch::stale_derived`]) like the
//! matrix's reports, and [`problems`] holds the columns to the catalogue: a column for every pinned
//! agent and none for another, a cell of every probe of Claude Code's, made from the probe file as it
//! is today. Publishing never takes a cell from a run that could not be made (the install or the
//! set-up failed: nothing of the agent was measured); such a probe keeps its committed cell, which
//! [`problems`] refuses when it was made from another version of the probe file.
//!
//! The built-in runtime's column is not committed: it follows the code (`probelab conformance` runs
//! it in seconds), and its figure per release is `docs/matrix/conformance.json`. Wall times are left
//! out of the committed table: they are the machine's, not the agent's.

use super::table::{cell_of_golden, reference_version, tools_called, Cell, Column, Mark, Table};
use crate::probe::Probe;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The committed table's directory, under the project's root.
pub const DIR: &str = "docs/conformance";

/// The committed columns' directory, under [`DIR`].
const COLUMNS: &str = "columns";

/// One agent's committed column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Published {
    /// The subject as `probelab conformance --subject` names it (`opencode@1.18.33`, `copilot`).
    pub subject: String,
    /// The subject as its goldens describe it (package, version, program digest).
    pub described: String,
    /// Probe id → its cell.
    pub cells: BTreeMap<String, PublishedCell>,
}

/// One committed cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedCell {
    /// Its standing.
    pub mark: Mark,
    /// Why (empty for a pass).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// The SHA-256 of the probe file it ran ([`crate::observe::probe_sha256`]).
    pub probe_sha256: String,
}

/// Why the committed columns cannot be read or written (its message says what and where; the cause is
/// its source, never repeated in the message).
#[derive(Debug, thiserror::Error)]
pub enum ColumnError {
    /// A file or directory could not be read or made.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// `read`, `list`, `create`.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A column's file is not a column.
    #[error("{} is not a committed column", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A column in the file named for another subject.
    #[error("{}: the column of {subject:?} in the file of {named:?}", path.display())]
    Misnamed {
        /// The file.
        path: PathBuf,
        /// The subject the column is of.
        subject: String,
        /// The subject the file is named for.
        named: String,
    },
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] crate::versions::VersionError),
}

/// An I/O error of `what` (`read`, `list`, `create`) on `path`, as a [`ColumnError`].
fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ColumnError {
    let path = path.to_path_buf();
    move |source| ColumnError::Io { what, path, source }
}

/// The committed table's directory of the project rooted at `root`.
pub fn dir(root: &Path) -> PathBuf {
    root.join(DIR)
}

fn column_path(root: &Path, subject: &str) -> PathBuf {
    dir(root).join(COLUMNS).join(format!("{subject}.json"))
}

/// The committed columns, by subject.
pub fn read_columns(root: &Path) -> Result<BTreeMap<String, Published>, ColumnError> {
    let d = dir(root).join(COLUMNS);
    let entries = match std::fs::read_dir(&d) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(io("list", &d)(e)),
    };
    let mut out = BTreeMap::new();
    for e in entries {
        let path = e.map_err(io("list", &d))?.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(io("read", &path))?;
        let col: Published =
            serde_json::from_str(&text).map_err(|source| ColumnError::Parse { path: path.clone(), source })?;
        let named = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if named != col.subject {
            return Err(ColumnError::Misnamed { path: path.clone(), subject: col.subject, named: named.to_string() });
        }
        out.insert(col.subject.clone(), col);
    }
    Ok(out)
}

/// The rows of the table: Claude Code's probes, in the catalogue's order.
pub fn rows(probes: &[Probe]) -> Vec<&Probe> {
    let reference = crate::subject::SubjectId::reference();
    probes.iter().filter(|p| p.applies_to(&reference)).collect()
}

/// The table the committed data make: Claude Code's column from the newest goldens under `golden`,
/// then the agents' committed columns in `order` (the project's pinned agents; a column of another
/// subject after them, by name). A probe without a committed cell reads n-a, "no committed cell".
pub fn table(probes: &[Probe], golden: &Path, columns: &BTreeMap<String, Published>, order: &[String]) -> Table {
    let rows = rows(probes);
    let mut out = Vec::new();
    if let Ok(Some(v)) = reference_version(None, golden) {
        let dir = crate::transcript::golden::claude_code_dir(golden, &v);
        let cells = rows
            .iter()
            .map(|p| cell_of_golden(p, std::fs::read_to_string(dir.join(format!("{}.snap", p.id))).ok().as_deref()))
            .collect();
        out.push(Column::new(&crate::observatory::subject(&v), "goldens", cells, 0));
    }
    let mut subjects: Vec<&String> = order.iter().filter(|s| columns.contains_key(*s)).collect();
    subjects.extend(columns.keys().filter(|s| !order.contains(s)));
    for s in subjects {
        let col = &columns[s];
        let cells = rows
            .iter()
            .map(|p| match col.cells.get(&p.id) {
                Some(c) => Cell { mark: c.mark, why: c.why.clone() },
                None => Cell { mark: Mark::NA, why: "no committed cell".into() },
            })
            .collect();
        out.push(Column::new(s, &col.described, cells, 0));
    }
    Table {
        probes: rows.iter().map(|p| p.id.clone()).collect(),
        tools: rows.iter().map(|p| tools_called(p)).collect(),
        columns: out,
    }
}

/// The committed table's files (path under the root, text): `docs/conformance/table.{txt,json,html}`.
pub fn files(t: &Table) -> Vec<(String, String)> {
    let head = "The committed conformance table: Claude Code's column from its newest committed goldens, each \
                third-party agent's from its committed run (docs/conformance/columns/; `probelab conformance \
                --publish` writes them, never edit by hand). The built-in runtime's column follows the code: \
                `probelab conformance` runs it.\n\n";
    vec![
        (format!("{DIR}/table.txt"), format!("{head}{}", t.text())),
        (format!("{DIR}/table.json"), t.json()),
        (format!("{DIR}/table.html"), t.html()),
    ]
}

/// What keeps the committed columns from being the catalogue's measurement, one line each, naming the
/// column's file: a pinned agent without a column, a column of a subject the project does not pin, a
/// probe of Claude Code's without a cell, a cell made from another probe file than today's, a cell of
/// a probe that is gone. Empty: every column measures the catalogue as it is.
pub fn problems(
    root: &Path,
    probes: &[Probe],
    columns: &BTreeMap<String, Published>,
    pinned: &[String],
) -> Vec<String> {
    let at = |s: &str| {
        column_path(root, s).strip_prefix(root).map(Path::to_path_buf).unwrap_or_default().display().to_string()
    };
    let file = |p: &Probe| p.path.strip_prefix(root).unwrap_or(&p.path).display().to_string();
    let mut out = Vec::new();
    for s in pinned.iter().filter(|s| !columns.contains_key(*s)) {
        out.push(format!("{}: missing: {s} is a pinned agent (probelab conformance --publish --subject {s})", at(s)));
    }
    let rows = rows(probes);
    for (s, col) in columns {
        if !pinned.contains(s) {
            out.push(format!("{}: {s} is not an agent the project pins (remove the file)", at(s)));
            continue;
        }
        for p in &rows {
            match col.cells.get(&p.id) {
                None => out.push(format!(
                    "{}: no cell of {} (probelab conformance --publish --subject {s} {})",
                    at(s),
                    p.id,
                    file(p)
                )),
                Some(c) if c.probe_sha256 != crate::observe::probe_sha256(p) => out.push(format!(
                    "{}: the cell of {} was made from another version of {} (probelab conformance --publish --subject {s} {})",
                    at(s),
                    p.id,
                    file(p),
                    file(p)
                )),
                Some(_) => {}
            }
        }
        for id in col.cells.keys().filter(|id| !rows.iter().any(|p| &p.id == *id)) {
            out.push(format!("{}: a cell of {id}, which is no probe of Claude Code's any more", at(s)));
        }
    }
    out
}

/// A column just run, to publish: its subject, its cells with their probes, how its goldens describe
/// it, and the probes whose run could not be made (not published).
pub struct Ran<'a> {
    /// The subject.
    pub subject: String,
    /// How its runs describe it (empty when no run was made).
    pub described: String,
    /// (probe, its cell, whether the run was made).
    pub cells: Vec<(&'a Probe, Cell, bool)>,
}

/// Merges `ran` into the committed column of its subject (the probes it ran replace their cells; a
/// cell of a probe that is no longer Claude Code's is dropped) and returns the probes not published
/// because their run could not be made. A column whose every run broke is not written. `probes` is the
/// whole catalogue, never only the probes run (a run of some probes keeps the other cells).
pub fn merge(root: &Path, probes: &[Probe], ran: &Ran<'_>) -> Result<Vec<String>, ColumnError> {
    let path = column_path(root, &ran.subject);
    let mut col = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<Published>(&text)
            .map_err(|source| ColumnError::Parse { path: path.clone(), source })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Published { subject: ran.subject.clone(), described: String::new(), cells: BTreeMap::new() }
        }
        Err(e) => return Err(io("read", &path)(e)),
    };
    let mut broken = Vec::new();
    for (p, cell, made) in &ran.cells {
        if !made {
            broken.push(format!("{} ({})", p.id, cell.why));
            continue;
        }
        let c = PublishedCell { mark: cell.mark, why: cell.why.clone(), probe_sha256: crate::observe::probe_sha256(p) };
        col.cells.insert(p.id.clone(), c);
    }
    if ran.described.is_empty() {
        return Ok(broken);
    }
    if col.described != ran.described {
        // another install of the subject: what was measured of the old one is not this one's
        let fresh: BTreeMap<String, PublishedCell> =
            ran.cells.iter().filter(|(_, _, made)| *made).filter_map(|(p, ..)| col.cells.remove_entry(&p.id)).collect();
        col.cells = fresh;
        col.described = ran.described.clone();
    }
    let rows = rows(probes);
    col.cells.retain(|id, _| rows.iter().any(|p| &p.id == id));
    // a column is strings, numbers and maps of them: always JSON
    let text = serde_json::to_string_pretty(&col).unwrap_or_default() + "\n";
    std::fs::create_dir_all(path.parent().unwrap_or(root)).map_err(io("create", &path))?;
    crate::versions::write_file_atomic(&path, text.as_bytes())?;
    Ok(broken)
}

/// Writes the committed table's files made from the committed columns (only those that differ).
pub fn write_table(root: &Path, probes: &[Probe], golden: &Path, pinned: &[String]) -> Result<(), ColumnError> {
    let columns = read_columns(root)?;
    for (rel, text) in files(&table(probes, golden, &columns, pinned)) {
        let path = root.join(&rel);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::create_dir_all(path.parent().unwrap_or(root)).map_err(io("create", &path))?;
            crate::versions::write_file_atomic(&path, text.as_bytes())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(id: &str, subjects: &str) -> Probe {
        let text = format!(
            "id = \"{id}\"\nclaims = [\"READ-1\"]\nabout = \"x\"\nsubjects = [{subjects}]\n[[turn]]\ntool_use = [{{ name = \"Read\", input = {{ file_path = \"{{cwd}}/f\" }} }}]\n[[turn]]\ntext = \"done\"\n[[check]]\nresult = 1\ncontains = \"x\"\n"
        );
        crate::probe::parse(Path::new(&format!("probes/{id}.toml")), &text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn publishing_merges_cells_keeps_broken_runs_out_and_the_problems_name_each_gap() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = d.path();
        let (a, b, own) =
            (probe("t.a", "\"claude-code\""), probe("t.b", "\"claude-code\""), probe("t.own", "\"builtin\""));
        let probes = vec![a.clone(), b.clone(), own];
        let pinned = vec!["agent@1".to_string(), "other".to_string()];
        let cell = |mark, why: &str| Cell { mark, why: why.into() };
        // a first run: t.a measured, t.b's run could not be made
        let ran = Ran {
            subject: "agent@1".into(),
            described: "subject agent 1, program sha256 aa".into(),
            cells: vec![(&a, cell(Mark::Pass, ""), true), (&b, cell(Mark::Differs, "install failed"), false)],
        };
        assert_eq!(merge(root, &probes, &ran).ok(), Some(vec!["t.b (install failed)".to_string()]));
        let cols = read_columns(root).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cols["agent@1"].cells.keys().collect::<Vec<_>>(), ["t.a"], "a broken run is not published");
        let found = problems(root, &probes, &cols, &pinned);
        assert_eq!(
            found,
            [
                "docs/conformance/columns/other.json: missing: other is a pinned agent (probelab conformance --publish --subject other)",
                "docs/conformance/columns/agent@1.json: no cell of t.b (probelab conformance --publish --subject agent@1 probes/t.b.toml)",
            ],
            "{found:#?}"
        );
        // the table says what is not measured; the committed data make it again
        let t = table(&probes, &root.join("golden"), &cols, &pinned);
        assert_eq!(t.probes, ["t.a", "t.b"], "the rows are Claude Code's probes");
        assert_eq!(t.columns[0].cells[1], cell(Mark::NA, "no committed cell"));
        // t.b measured later; then t.a's file changes: its cell is stale
        let ran = Ran {
            subject: "agent@1".into(),
            described: ran.described.clone(),
            cells: vec![(&b, cell(Mark::SemanticOnly, "check 1: result 1"), true)],
        };
        assert_eq!(merge(root, &probes, &ran).ok(), Some(vec![]));
        let cols = read_columns(root).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cols["agent@1"].cells.len(), 2, "merged: {cols:?}");
        let mut changed = probes.clone();
        changed[0].source.push_str("\n# edited\n");
        let found = problems(root, &changed, &cols, &pinned[..1]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("the cell of t.a was made from another version of probes/t.a.toml"), "{found:#?}");
        // a column of a subject nobody pins, and a cell of a probe that is gone
        let found = problems(root, &probes[1..], &cols, &[]);
        assert_eq!(
            found,
            ["docs/conformance/columns/agent@1.json: agent@1 is not an agent the project pins (remove the file)"]
        );
        let found = problems(root, &probes[1..], &cols, &pinned[..1]);
        assert_eq!(
            found,
            ["docs/conformance/columns/agent@1.json: a cell of t.a, which is no probe of Claude Code's any more"]
        );
        // another install of the agent: the old install's cells are not its own
        let ran = Ran {
            subject: "agent@1".into(),
            described: "subject agent 1, program sha256 bb".into(),
            cells: vec![(&a, cell(Mark::Differs, "check 1: result 1"), true)],
        };
        assert_eq!(merge(root, &probes, &ran).ok(), Some(vec![]));
        let cols = read_columns(root).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cols["agent@1"].cells.keys().collect::<Vec<_>>(), ["t.a"]);
        assert_eq!(cols["agent@1"].described, "subject agent 1, program sha256 bb");
        // a file whose name is not its subject's is refused
        std::fs::write(column_path(root, "renamed"), serde_json::to_string(&cols["agent@1"]).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        let e = read_columns(root).unwrap_err().to_string();
        assert!(e.contains("the column of \"agent@1\" in the file of \"renamed\""), "{e}");
    }
}
