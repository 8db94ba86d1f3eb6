//! The one path resolver (`fs::real_path`) against its oracle, the kernel: on generated trees of
//! directories, files and symlinks (relative and absolute, to files, directories, each other, dangling,
//! in loops), for every path made of the tree's names and `..`, the resolver must name exactly what the
//! kernel opens — `canonicalize` where the path exists; and where it does not, the file the kernel
//! creates through it (a write through a dangling link lands where the resolver said). A resolver that
//! stopped at the existing prefix, as the one before issue 16 did, fails the dangling cases.

use probelab_runtime::fs::real_path;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// Names the generated trees use.
const NAMES: &[&str] = &["a", "b", "c", "d"];

#[derive(Debug, Clone)]
enum Node {
    Dir,
    File,
    /// A link to a path of the tree (relative to the link's directory or absolute from the root).
    Link {
        target: Vec<&'static str>,
        absolute: bool,
    },
}

fn node() -> impl Strategy<Value = Node> {
    let part = prop::sample::select(vec!["a", "b", "c", "d", "..", "x"]);
    prop_oneof![
        Just(Node::Dir),
        Just(Node::File),
        (prop::collection::vec(part, 1..4), any::<bool>())
            .prop_map(|(target, absolute)| Node::Link { target, absolute }),
    ]
}

/// Builds the tree: each name at the top and inside each top-level directory gets a node.
fn build(root: &Path, top: &[Node], inner: &[Node]) {
    let make = |at: &Path, n: &Node| match n {
        Node::Dir => std::fs::create_dir_all(at).unwrap_or_else(|e| panic!("{e}")),
        Node::File => std::fs::write(at, "f").unwrap_or_else(|e| panic!("{e}")),
        Node::Link { target, absolute } => {
            let rel: PathBuf = target.iter().collect();
            // an absolute link stays inside the tree: the root joined with the target, `..` clamped
            let t = if *absolute {
                root.join(rel.components().filter(|c| c.as_os_str() != "..").collect::<PathBuf>())
            } else {
                rel
            };
            std::os::unix::fs::symlink(t, at).unwrap_or_else(|e| panic!("{e}"));
        }
    };
    for (name, n) in NAMES.iter().zip(top) {
        make(&root.join(name), n);
    }
    for (name, n) in NAMES.iter().zip(top) {
        if matches!(n, Node::Dir) {
            for (inner_name, m) in NAMES.iter().zip(inner) {
                make(&root.join(name).join(inner_name), m);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_resolver_names_what_the_kernel_opens(
        top in prop::collection::vec(node(), 4),
        inner in prop::collection::vec(node(), 4),
        paths in prop::collection::vec(prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "..", "new"]), 1..5), 12),
    ) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}")).join("t");
        std::fs::create_dir(&root).unwrap_or_else(|e| panic!("{e}"));
        build(&root, &top, &inner);
        for parts in &paths {
            let p: PathBuf = std::iter::once(root.clone()).chain(parts.iter().map(PathBuf::from)).collect();
            let resolved = real_path(&p);
            match p.canonicalize() {
                Ok(kernel) => prop_assert_eq!(resolved, Some(kernel), "{} exists", p.display()),
                Err(e) if e.raw_os_error() == Some(40) => prop_assert_eq!(resolved, None, "{} loops", p.display()),
                Err(_) => {
                    // not there: what the kernel creates through it is where the resolver said
                    let Some(said) = resolved else { continue };
                    let before = said.exists();
                    if std::fs::write(&p, "new").is_ok() {
                        let made = p.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                        prop_assert_eq!(&made, &said, "{} was written at {}", p.display(), made.display());
                        prop_assert!(!before);
                        let _ = std::fs::remove_file(&made);
                    }
                }
            }
        }
    }
}
