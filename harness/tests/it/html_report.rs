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
    std::fs::write(&html, m.to_html("probelab: claims × versions", None)).unwrap_or_else(|e| panic!("{e}"));
    let url = format!("file://{}", html.display());
    let dom = String::from_utf8_lossy(&browse(&["--dump-dom"], &url).stdout).to_string();
    assert!(dom.contains("<table id=\"claims\">"), "{dom}");
    for claim in ["READ-2", "TOUT-1", "TS-1", "BASH-5"] {
        assert!(dom.contains(&format!("<tr><td class=\"l\">{claim}</td>")), "no row for {claim}");
    }
    for v in ["2.1.235", "2.1.296", "2.1.332"] {
        assert!(dom.contains(&format!("<th class=\"v\">{v}</th>")), "no column for {v}");
    }
    // the timeline names the versions bisect found: the Read size text (READ-2) changed at 2.1.296
    assert!(dom.contains("<li><b>READ-2</b> at <b>2.1.296</b> (after 2.1.295)"), "{dom}");
    let page = screenshot(d.path(), "matrix.png", &url);
    let blank = screenshot(d.path(), "blank.png", "about:blank");
    assert!(page.len() > 4 * blank.len(), "the matrix's screenshot looks blank");
}
