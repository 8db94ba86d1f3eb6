//! The command as CI runs it: its report and its exit status on a crate with a cycle.

use std::process::Command;

fn write(dir: &std::path::Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap_or(dir)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_module-cycles")).args(args).output().unwrap_or_else(|e| panic!("{e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{e}")),
        String::from_utf8(out.stderr).unwrap_or_else(|e| panic!("{e}")),
    )
}

#[test]
fn a_cycle_hidden_behind_a_doc_comment_glob_fails_the_check_and_a_clean_crate_passes() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cyclic = d.path().join("cyclic");
    write(&cyclic, "src/lib.rs", "pub mod context;\npub mod fs;\npub mod permissions;\n");
    // the runtime's case: a glob in a doc comment (`x/**`) before the imports, a `*/` in a string after them
    write(
        &cyclic,
        "src/permissions.rs",
        "//! A rule `Read(x/**)` matches below x.\nuse crate::fs::real_path;\nconst G: &str = \"src/*/mod.rs\";\n",
    );
    write(&cyclic, "src/fs.rs", "const S: &str = \"//\";\nuse crate::context::Ctx;\npub fn real_path() {}\n");
    write(&cyclic, "src/context.rs", "pub struct Ctx(crate::permissions::Anchors);\n");
    let (code, out, err) = run(&["--max", "1", &*cyclic.to_string_lossy()]);
    assert_eq!(out, "cyclic: cycle of 3 modules: context, fs, permissions\n");
    assert_eq!(err, "module-cycles: a cycle of 3 modules is over the limit of 1\n");
    assert_eq!(code, 1);
    assert_eq!(run(&["--max", "3", &*cyclic.to_string_lossy()]).0, 0);

    let clean = d.path().join("clean");
    write(&clean, "src/lib.rs", "mod a;\nmod b;\n");
    write(&clean, "src/a.rs", "use crate::b::B;\n");
    write(&clean, "src/b.rs", "pub struct B;\n");
    assert_eq!(
        run(&["--max", "1", &*clean.to_string_lossy()]),
        (0, "clean: no module cycle\n".to_string(), String::new())
    );
}

#[test]
fn a_bad_limit_or_a_file_that_does_not_parse_is_an_error_not_a_pass() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    write(d.path(), "src/lib.rs", "fn f( {\n");
    let (code, _, err) = run(&[&*d.path().to_string_lossy()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("src/lib.rs:1:"), "{err}");
    assert_eq!(run(&["--max", "x"]).0, 2);
}
