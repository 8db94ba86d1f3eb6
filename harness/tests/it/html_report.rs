//! The HTML reports open in a real browser: headless Chromium (Debian's `chromium-headless-shell`,
//! installed by scripts/setup) renders `probelab diff --html` of the committed Claude Code goldens and
//! the claims × versions matrix of docs/matrix/matrix.json; the pages it parsed hold their tables, and
//! the screenshots are rendered pages, not blank ones.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser: `$PROBELAB_CHROMIUM`, else the first of Debian's headless shell or chromium on PATH.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("PROBELAB_CHROMIUM") {
        return PathBuf::from(p);
    }
    for name in ["chromium-headless-shell", "chromium", "chromium-browser"] {
        if let Some(dir) =
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).find(|d| d.join(name).is_file())
        {
            return dir.join(name);
        }
    }
    panic!("no headless Chromium found (chromium-headless-shell); run scripts/setup, or set PROBELAB_CHROMIUM")
}

fn browse(what: &[&str], url: &str) -> std::process::Output {
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,800"])
        .args(what)
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium().display()));
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR", "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

fn screenshot(dir: &Path, name: &str, url: &str) -> Vec<u8> {
    let png = dir.join(name);
    browse(&[&format!("--screenshot={}", png.display())], url);
    std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot {}: {e}", png.display()))
}

#[test]
fn the_html_report_renders_the_claims_matrix_in_headless_chromium() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let html = d.path().join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["diff", "claude-code@2.1.235", "claude-code@2.1.332", "--html"])
        .arg(&html)
        .current_dir(&repo)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let url = format!("file://{}", html.display());

    // the DOM the browser built: the matrix table with a row per claim and a cell per probe
    let dom = String::from_utf8_lossy(&browse(&["--dump-dom"], &url).stdout).to_string();
    assert!(dom.contains("<h2>Claims × probes</h2>"), "{dom}");
    for claim in ["GREP-1", "GREP-5", "EDIT-1", "READ-2"] {
        assert!(dom.contains(&format!("<tr><th>{claim}</th>")), "no row for {claim} in:\n{dom}");
    }
    // behaviour only: a probe whose prompt and tools changed but whose results did not is the same
    assert!(dom.contains("claude-code.unknown-tool — same behaviour (other layers changed)"), "{dom}");
    assert!(dom.contains("claude-code.read-size — behaviour differs"), "{dom}");
    assert!(dom.contains("grep.exec.max-count-context — same"), "{dom}");

    // the screenshot: the window's size, and a page with content, not the blank page's pixels
    let page = screenshot(d.path(), "report.png", &url);
    let blank = screenshot(d.path(), "blank.png", "about:blank");
    assert_eq!(png_size(&page), (1200, 800));
    assert_eq!(png_size(&blank), (1200, 800));
    assert!(
        page.len() > 4 * blank.len(),
        "the report's screenshot ({} bytes) looks as empty as a blank page's ({} bytes)",
        page.len(),
        blank.len()
    );
}

#[test]
fn the_version_matrix_renders_its_claims_table_and_timeline_in_headless_chromium() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let json = std::fs::read_to_string(repo.join("docs/matrix/matrix.json")).unwrap_or_else(|e| panic!("{e}"));
    let m: harness::observatory::report::Matrix = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    assert!(m.versions.len() >= 12, "the committed matrix has {} versions", m.versions.len());
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let html = d.path().join("matrix.html");
    // the words of each change, from the committed goldens
    let said = m.said(&repo.join("golden"), &Default::default());
    std::fs::write(&html, m.to_html_with("probelab: claims × versions", None, &said)).unwrap_or_else(|e| panic!("{e}"));
    let url = format!("file://{}", html.display());
    let dom = String::from_utf8_lossy(&browse(&["--dump-dom"], &url).stdout).to_string();
    assert!(dom.contains("<table id=\"claims\">"), "{dom}");
    for claim in ["READ-2", "TOUT-1", "TS-1", "BASH-5"] {
        assert!(dom.contains(&format!("<tr><td class=\"l\">{claim}</td>")), "no row for {claim}");
    }
    // a column per range of releases in which nothing moves, each release in one: 2.1.235 starts the
    // first, 2.1.296 (Read's size text) one of its own
    let ranges = m.ranges();
    assert!(ranges.len() < m.versions.len() && ranges.len() > 10, "{} ranges", ranges.len());
    assert_eq!(ranges.first().map(|r| r.0), Some(0));
    assert_eq!(ranges.last().map(|r| r.1), Some(m.versions.len() - 1));
    assert!(ranges.windows(2).all(|w| w[1].0 == w[0].1 + 1), "ranges leave no release out");
    assert_eq!(dom.matches("<th class=\"v\"").count(), 2 * ranges.len(), "a column per range, in both tables");
    for v in ["2.1.235", "2.1.296"] {
        assert!(dom.contains(&format!("<th class=\"v\" title=\"{v}")), "no column starts with {v}");
    }
    // on the release it happened, a probe's cell says what changed in words (hover)
    assert!(
        dom.contains("changed on 2.1.296 (after 2.1.295): behaviour changed in result")
            && dom.contains("{+ To read it anyway"),
        "no words of Read's 2.1.296 change in a cell's title"
    );
    // the timeline names the versions bisect found: the Read size text (READ-2) changed at 2.1.296
    assert!(dom.contains("<li><b>READ-2</b> at <b>2.1.296</b> (after 2.1.295)"), "{dom}");
    let page = screenshot(d.path(), "matrix.png", &url);
    let blank = screenshot(d.path(), "blank.png", "about:blank");
    assert!(page.len() > 4 * blank.len(), "the matrix's screenshot looks blank");
}

/// How wide each section of an HTML document lays out in Chromium at a window `width` px wide: the
/// document's own scroll width and client width, then each `<section id>`'s scroll width, as the page's
/// script leaves them in the DOM (the document is copied with that script added).
fn laid_out_widths(dir: &Path, html: &str, width: u32) -> Vec<(String, u64)> {
    let script = "<script>const d = document.documentElement; const w = [['document', d.scrollWidth], \
                  ['window', d.clientWidth]].concat([...document.querySelectorAll('section[id]')].map(s => \
                  [s.id, s.scrollWidth])); document.body.setAttribute('data-widths', w.map(x => x.join('=')).join(' '));\
                  </script>";
    let page = match html.rfind("</body>") {
        Some(at) => format!("{}{script}{}", &html[..at], &html[at..]),
        None => format!("{html}{script}"),
    };
    let file = dir.join("measured.html");
    std::fs::write(&file, page).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", &format!("--window-size={width},1000"), "--dump-dom"])
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium().display()));
    let dom = String::from_utf8_lossy(&out.stdout);
    let attr = dom.split("data-widths=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or_else(|| {
        panic!("the page's script left no widths (chromium: {})", String::from_utf8_lossy(&out.stderr))
    });
    attr.split(' ')
        .filter_map(|kv| kv.rsplit_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap_or_else(|e| panic!("{v}: {e}"))))
        .collect()
}

/// Markdown files as one HTML document, a `<section id=…>` each, rendered as a Markdown viewer does
/// (CommonMark with tables; the browser's default styles, and a long word broken where it would overflow,
/// as GitHub's Markdown style does).
fn markdown_document(files: &[(String, String)]) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><style>body{overflow-wrap:break-word}</style></head><body>",
    );
    for (name, text) in files {
        let parser = pulldown_cmark::Parser::new_ext(text, pulldown_cmark::Options::ENABLE_TABLES);
        html.push_str(&format!("<section id=\"{name}\">"));
        pulldown_cmark::html::push_html(&mut html, parser);
        html.push_str("</section>");
    }
    html + "</body></html>"
}

/// Issue 43, item 3: the generated pages a person reads fit a 1,600 px window in Chromium — no
/// horizontal scroll: the matrix HTML (a column per range of releases), and the Markdown pages
/// (timeline, budgets, interface, every release page) rendered as a viewer renders them. A page made
/// the old way — a column per release — is measured too, and does not fit: the check can fail.
#[test]
fn the_generated_pages_fit_a_1600_px_window_in_headless_chromium() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fits = |widths: &[(String, u64)], what: &str| {
        let window = widths.iter().find(|(k, _)| k == "window").map(|w| w.1).unwrap_or(0);
        assert!(window > 1500, "{what}: the window is {window} px");
        let over: Vec<&(String, u64)> = widths.iter().filter(|(k, w)| k != "window" && *w > window).collect();
        assert!(over.is_empty(), "{what}: wider than the {window} px window: {over:?}");
    };
    let matrix = std::fs::read_to_string(repo.join("docs/matrix/matrix.html")).unwrap_or_else(|e| panic!("{e}"));
    let w = laid_out_widths(d.path(), &matrix, 1600);
    fits(&w, "docs/matrix/matrix.html");
    let mut pages: Vec<(String, String)> = ["timeline", "budgets", "interface"]
        .iter()
        .map(|n| {
            let path = repo.join(format!("docs/matrix/{n}.md"));
            (n.to_string(), std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        })
        .collect();
    let changes = repo.join("docs/changes");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&changes)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    names.sort();
    for p in &names {
        let id = format!("changes-{}", p.file_stem().unwrap_or_default().to_string_lossy());
        pages.push((id, std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{e}"))));
    }
    assert!(pages.len() > 40, "{} pages", pages.len());
    let w = laid_out_widths(d.path(), &markdown_document(&pages), 1600);
    assert_eq!(w.len(), pages.len() + 2, "a width per page: {w:?}");
    fits(&w, "the Markdown pages");
    // the old way: a column per release of the committed matrix, as budgets.md was written
    let json = std::fs::read_to_string(repo.join("docs/matrix/matrix.json")).unwrap_or_else(|e| panic!("{e}"));
    let m: harness::observatory::report::Matrix = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let mut wide = format!("| budget | {} |\n|---|{}\n", m.versions.join(" | "), "---|".repeat(m.versions.len()));
    wide.push_str(&format!("| Read: max lines | {} |\n", vec!["2000"; m.versions.len()].join(" | ")));
    let w = laid_out_widths(d.path(), &markdown_document(&[("wide".into(), wide)]), 1600);
    let width = w.iter().find(|(k, _)| k == "wide").map(|w| w.1).unwrap_or(0);
    assert!(
        width > 1600,
        "a table of {} columns measured {width} px: the measure cannot see overflow",
        m.versions.len()
    );
}
