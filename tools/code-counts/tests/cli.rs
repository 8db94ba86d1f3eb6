//! The command on a crate whose every count is known: what it counts, what it leaves out (test code,
//! comments, strings), and that a bad file is an error, not a zero.

// Helpers of a test crate are not `#[test]` functions, which clippy.toml lets unwrap.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn write(dir: &std::path::Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap_or(dir)).unwrap();
    std::fs::write(path, text).unwrap();
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_code-counts")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn production_code_is_counted_and_test_code_comments_and_strings_are_not() {
    let d = tempfile::tempdir().unwrap();
    let k = d.path().join("k");
    write(
        &k,
        "src/lib.rs",
        "//! `x.unwrap_or_default()` in a doc comment\nmod a;\n#[cfg(test)]\nmod tests;\n\
         pub fn f(x: Option<u8>) -> Result<u8, String> { Ok(x.unwrap_or_default()) }\n\
         pub type R = std::result::Result<(), String>;\n\
         pub fn g() -> Result<u8, std::io::Error> { let s = \".unwrap_or_default()\"; Ok(s.len() as u8) }\n\
         #[cfg(test)]\nfn t() -> Result<(), String> { None::<u8>.unwrap_or_default(); Ok(()) }\n",
    );
    let long_body = "    let _ = 1;\n".repeat(99);
    write(
        &k,
        "src/a/mod.rs",
        &format!("mod b;\npub fn long() {{\n{long_body}}}\npub fn short() {{\n{}}}\n", "    let _ = 1;\n".repeat(98)),
    );
    write(&k, "src/a/b.rs", "pub fn m(x: Option<String>) -> String { format!(\"{}\", x.unwrap_or_default()) }\n");
    write(&k, "src/tests.rs", "fn u() -> Result<(), String> { Some(1).unwrap_or_default(); Ok(()) }\n");
    write(&k, "src/orphan.rs", "fn o() -> Result<(), String> { Ok(()) }\n");
    let (code, out, err) = run(&["--list", &*k.to_string_lossy()]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), ["k", "2", "2", "1"], "{out}");
    assert!(out.contains("src/lib.rs:5: Result<_, String>\n"), "{out}");
    assert!(out.contains("src/lib.rs:6: Result<_, String>\n"), "{out}");
    assert!(out.contains("src/lib.rs:5: unwrap_or_default()\n"), "{out}");
    assert!(out.contains("src/a/b.rs:1: unwrap_or_default()\n"), "{out}");
    assert!(out.contains("src/a/mod.rs:2: long fn long (101 lines)\n"), "{out}");
    assert_eq!(lines.last().map(|l| l.split_whitespace().collect::<Vec<_>>()), Some(vec!["total", "2", "2", "1"]));
}

#[test]
fn a_file_that_does_not_parse_or_a_missing_module_is_an_error_not_a_zero() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "src/lib.rs", "fn f( {\n");
    let (code, _, err) = run(&[&*d.path().to_string_lossy()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("src/lib.rs:1:"), "{err}");
    let e = tempfile::tempdir().unwrap();
    write(e.path(), "src/lib.rs", "mod gone;\n");
    let (code, _, err) = run(&[&*e.path().to_string_lossy()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("gone"), "{err}");
    assert_eq!(run(&["--bogus"]).0, 2);
}
