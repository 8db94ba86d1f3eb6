//! File helpers shared by the file tools: resolving a path inside the sandbox roots (refusing `..` and
//! symlink escapes), `cat -n` numbering, the read / stale gates of Edit and Write (EDIT-1, EDIT-2), the
//! read state (READ-4), and the file-history checkpoint (EDIT-6).

mod gates;
mod messages;
mod path;

pub use gates::*;
pub use messages::*;
pub use path::*;

pub use crate::context::cwd_slug;
pub use crate::paths::{real_path, MAX_SYMLINK_HOPS};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ToolContext;
    use crate::tool::ToolError;
    use std::path::{Path, PathBuf};

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        ToolContext::for_test()
    }

    #[test]
    fn tools_reach_the_rules_the_session_parsed_once() {
        use crate::settings::{AskAnswer, PermissionSettings, Settings};
        let settings = |deny: &str| Settings {
            permissions: PermissionSettings { deny: vec![deny.to_string()], ..PermissionSettings::default() },
            ..Settings::default()
        };
        let (_d, mut c) = ctx();
        let session = crate::session::Session::new(settings("Read(secret/**)"), AskAnswer::default(), None);
        c.session = std::sync::Arc::new(session.unwrap_or_else(|e| panic!("{e}")));
        let skip = search_skip(&c, "Grep").unwrap_or_else(|| panic!("a deny rule on paths: the walk skips"));
        assert!(skip(&c.cwd.join("secret/k")) && !skip(&c.cwd.join("open/k")));
        assert!(!read_auto_allowed(&c, &c.cwd.join("secret/k")) && read_auto_allowed(&c, &c.cwd.join("open/k")));
        // rules that do not parse stop the session at its start, not each tool call later
        let bad = crate::session::Session::new(settings("Read(x"), AskAnswer::default(), None);
        assert_eq!(
            bad.err().map(|e| e.to_string()),
            Some("permission rule \"Read(x\" is not `Tool` or `Tool(pattern)`".into())
        );
    }

    #[test]
    fn a_missing_search_path_is_unwrapped_from_2_1_260() {
        for (version, wrapped) in [("2.1.235", true), ("2.1.259", true), ("2.1.260", false), ("2.1.333", false)] {
            let (_d, c) = ctx();
            let c = c.with_profile(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}")));
            let e = missing_search_path_error(&c, "Path", "nowhere", &c.cwd.join("nowhere"));
            assert_eq!(matches!(e, ToolError::Validation(_)), wrapped, "{version}: {e:?}");
            assert!(e.to_string().starts_with("Path does not exist: nowhere. Note: your current working directory is"));
        }
    }

    #[test]
    fn many_mtimes_come_back_in_the_order_asked() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // every 7th path is missing: a chunk put back out of order would move its `None`s
        let names: Vec<String> = (0..1600)
            .map(|i| {
                let p = d.path().join(format!("f{i}"));
                if i % 7 != 0 {
                    std::fs::write(&p, "x").unwrap_or_else(|e| panic!("{e}"));
                }
                p.to_string_lossy().into_owned()
            })
            .collect();
        let paths: Vec<&str> = names.iter().map(String::as_str).collect();
        let got = mtimes(&paths);
        let want: Vec<_> = paths.iter().map(|p| mtime(Path::new(p))).collect();
        assert_eq!(got, want);
        assert_eq!(got.iter().filter(|t| t.is_none()).count(), 229);
    }

    #[test]
    fn dotdot_and_symlink_escapes_are_refused() {
        let (_d, c) = ctx();
        assert!(confine(&c, "a/../b.txt").is_ok());
        assert!(confine(&c, "../../../etc/passwd").is_err());
        assert!(confine(&c, "/etc/passwd").is_err());
        let link = c.cwd.join("out");
        let _ = std::os::unix::fs::symlink("/etc", &link);
        assert!(confine(&c, "out/passwd").is_err());
        assert!(confine(&c, "out/new-file").is_err());
    }

    #[test]
    fn the_resolver_follows_every_link_the_last_and_dangling_ones_included() {
        let (_d, c) = ctx();
        let link = |target: &str, at: &str| {
            std::os::unix::fs::symlink(target, c.cwd.join(at)).unwrap_or_else(|e| panic!("{e}"));
        };
        std::fs::create_dir_all(c.cwd.join("secrets")).unwrap_or_else(|e| panic!("{e}"));
        link("/var/tmp/probelab-unit-dangling", "dangling");
        link("secrets", "sdir");
        link("sdir", "sdir2");
        link("loop2", "loop1");
        link("loop1", "loop2");
        link("../..", "up");
        let real = |p: &str| real_path(&c.cwd.join(p));
        assert_eq!(real("dangling"), Some(PathBuf::from("/var/tmp/probelab-unit-dangling")));
        assert_eq!(real("sdir2/k"), Some(c.cwd.join("secrets/k")));
        assert_eq!(real("loop1"), None);
        assert_eq!(real("loop1/x"), None);
        // `..` after a link goes up from where the link leads
        assert_eq!(real("sdir/../x"), Some(c.cwd.join("x")));
        assert_eq!(
            real_path(&Path::new("/proc/self/root").join(c.cwd.strip_prefix("/").unwrap_or(&c.cwd)).join("sdir/k")),
            Some(c.cwd.join("secrets/k"))
        );
        // confinement on the real path; a write through any link refused with the reference's text
        assert!(confine(&c, "dangling").is_err());
        assert!(confine(&c, "up/x").is_err());
        assert!(confine(&c, "sdir/k").is_ok());
        assert_eq!(
            confine_write(&c, "sdir2").map_err(|e| e.to_string()),
            Err(through_symlink(&c, &c.cwd.join("sdir2")))
        );
        assert_eq!(
            confine_write(&c, "dangling").map_err(|e| e.to_string()),
            Err(through_symlink(&c, &c.cwd.join("dangling")))
        );
        // the text by release: 2.1.235's, 2.1.251's, 2.1.280's naming the target
        let at = |v: &str| {
            let c = c.clone().with_profile(crate::profile::Profile::at(v).unwrap_or_else(|e| panic!("{e}")));
            confine_write(&c, "dangling").map_err(|e| e.to_string()).err().unwrap_or_default()
        };
        let d = c.cwd.join("dangling");
        let d = d.display();
        assert_eq!(
            at("2.1.250"),
            format!(
                "Refusing to write through symlink: {d}. Resolve the symlink and pass the real target path explicitly."
            )
        );
        assert_eq!(
            at("2.1.279"),
            format!("Refusing to write {d}: it is a symbolic link. Write to the link's target path instead.")
        );
        assert_eq!(
            at("2.1.280"),
            format!(
                "Refusing to write {d}: it is a symbolic link. Write to the link's target path instead: /var/tmp/probelab-unit-dangling."
            )
        );
        // a relative link's target is named from the link's directory, one hop (sdir2 → sdir, not secrets)
        let c280 = c.clone().with_profile(crate::profile::Profile::at("2.1.280").unwrap_or_else(|e| panic!("{e}")));
        assert!(through_symlink(&c280, &c.cwd.join("sdir2"))
            .ends_with(&format!("instead: {}.", c.cwd.join("sdir").display())));
        assert!(confine_write(&c, "sdir/new").is_ok());
        // the kernel refuses a link that appears after the check
        link("/var/tmp/probelab-unit-late", "late");
        assert!(write_no_follow(&c.cwd.join("late"), b"x").is_err());
        assert!(!Path::new("/var/tmp/probelab-unit-late").exists());
    }

    #[test]
    fn text_files_keep_their_line_ends_and_lose_invalid_bytes() {
        let f = TextFile::decode(b"a\r\nb\r\nc\n");
        assert_eq!((f.text.as_str(), f.crlf), ("a\nb\nc\n", true));
        assert_eq!(f.encode("x\ny\n"), b"x\r\ny\r\n");
        let f = TextFile::decode(b"caf\xe9\n");
        assert_eq!((f.text.as_str(), f.crlf), ("caf\u{fffd}\n", false));
        assert_eq!(TextFile::decode(b"\xef\xbb\xbfhi").content(), "hi");
    }

    #[test]
    fn line_ends_are_trimmed_except_in_markdown() {
        assert_eq!(trim_line_ends(Path::new("a.rs"), "x \r\ny\t\nz \rw  "), "x\r\ny\nz\rw");
        assert_eq!(trim_line_ends(Path::new("a.md"), "x  \n"), "x  \n");
    }

    #[test]
    fn cat_n_numbering() {
        assert_eq!(number_lines(["a", "b"].into_iter(), 9), "9\ta\n10\tb");
    }
}
