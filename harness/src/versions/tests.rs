//! The catalogue and the install cache against a fake npm: a shell script each test writes, which
//! answers `npm view` from files and lays out `npm install`'s package (a fake `claude` printing
//! `<V> (Claude Code)`), counting its runs. The cache root and the npm are passed explicitly; no test
//! touches the process environment.

use super::Failing;
use super::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A cache root and a fake npm in a temporary directory.
struct Fake {
    dir: tempfile::TempDir,
    npm: Npm,
}

/// How the fake npm behaves.
#[derive(Clone, Copy)]
enum Mode {
    /// Lays out the package with the binary.
    Ok,
    /// Like Ok, slowly (so two concurrent installs overlap).
    Slow,
    /// Writes part of the package, then fails like a dropped connection.
    FailMidway,
    /// A 1.x-style package: `cli.js`, no platform package.
    NoPlatform,
    /// The version does not exist (ETARGET).
    Unknown,
    /// The binary prints another version.
    WrongVersion,
    /// `npm view` fails as when the registry is unreachable.
    Offline,
}

const PAD: usize = 4000;

impl Fake {
    fn new(mode: Mode) -> Fake {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = Fake { npm: Npm::new(dir.path().join("npm")), dir };
        f.set_mode(mode);
        f.answers(&[("2.0.1", false), ("2.1.112", false), ("2.1.113", true), ("2.1.200", true), ("2.1.201", true)]);
        f
    }

    /// (Re)writes the fake npm script with a mode (the run counter and cache are kept).
    fn set_mode(&self, mode: Mode) {
        let mode = match mode {
            Mode::Ok => "ok",
            Mode::Slow => "slow",
            Mode::FailMidway => "fail-midway",
            Mode::NoPlatform => "no-platform",
            Mode::Unknown => "unknown",
            Mode::WrongVersion => "wrong-version",
            Mode::Offline => "offline",
        };
        let d = self.dir.path();
        let script = format!(
            r#"#!/bin/sh
# a fake npm for probelab's tests
mode={mode}
data='{data}'
echo "$*" >> "$data/runs"
if [ "$1" = view ]; then
  if [ $mode = offline ]; then
    echo "npm error code ENOTFOUND" >&2
    echo "npm error request to https://registry.invalid/@anthropic-ai%2fclaude-code failed" >&2
    exit 1
  fi
  case "$*" in
    *optionalDependencies*) cat "$data/deps.json";;
    *claude-code-linux-x64*) if [ -f "$data/platform.json" ]; then cat "$data/platform.json"; else cat "$data/order.json"; fi;;
    *) cat "$data/order.json";;
  esac
  exit 0
fi
prefix=; cache=; spec=; platform=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift;;
    --cache) cache=$2; shift;;
    @anthropic-ai/claude-code@*) spec=$1;;
    @anthropic-ai/claude-code-linux-x64@*) spec=$1; platform=1;;
  esac
  shift
done
v=${{spec#@anthropic-ai/claude-code@}}
[ -n "$platform" ] && v=${{spec#@anthropic-ai/claude-code-linux-x64@}}
only=no
grep -qx "$v" "$data/platform-only" 2>/dev/null && only=yes
if [ $mode = unknown ] || {{ [ -z "$platform" ] && [ $only = yes ]; }}; then
  echo "npm error code ETARGET" >&2
  echo "npm error notarget No matching version found for $spec." >&2
  exit 1
fi
mkdir -p "$cache/_cacache" && echo tarball > "$cache/_cacache/blob"
if [ -n "$platform" ]; then
  p="$prefix/node_modules/@anthropic-ai/claude-code-linux-x64"
  mkdir -p "$p"
  printf '#!/bin/sh\necho "%s (Claude Code)"\nexit 0\n' "$v" > "$p/claude"
  {{ printf '#'; head -c {PAD} /dev/zero | tr '\0' x; echo; }} >> "$p/claude"
  chmod +x "$p/claude"
  exit 0
fi
w="$prefix/node_modules/@anthropic-ai/claude-code"
mkdir -p "$w"
if [ $mode = no-platform ]; then
  printf '{{"name":"@anthropic-ai/claude-code","version":"%s","bin":{{"claude":"cli.js"}}}}\n' "$v" > "$w/package.json"
  echo "// cli" > "$w/cli.js"
  exit 0
fi
printf '{{"name":"@anthropic-ai/claude-code","version":"%s","optionalDependencies":{{"@anthropic-ai/claude-code-linux-x64":"%s"}}}}\n' "$v" "$v" > "$w/package.json"
p="$prefix/node_modules/@anthropic-ai/claude-code-linux-x64"
mkdir -p "$p"
[ $mode = slow ] && sleep 0.5
said=$v
[ $mode = wrong-version ] && said=9.9.9
printf '#!/bin/sh\necho "%s (Claude Code)"\nexit 0\n' "$said" > "$p/claude"
if [ $mode = fail-midway ]; then
  echo "npm error code ECONNRESET" >&2
  echo "npm error network aborted" >&2
  exit 1
fi
{{ printf '#'; head -c {PAD} /dev/zero | tr '\0' x; echo; }} >> "$p/claude"
chmod +x "$p/claude"
"#,
            data = d.display()
        );
        let path = d.join("npm");
        let tmp = d.join("npm.tmp");
        std::fs::write(&tmp, script).unwrap_or_else(|e| panic!("{e}"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::rename(&tmp, &path).unwrap_or_else(|e| panic!("{e}"));
    }

    /// What `npm view` answers: versions in order, each with or without the platform package.
    fn answers(&self, versions: &[(&str, bool)]) {
        let names: Vec<&str> = versions.iter().map(|(v, _)| *v).collect();
        let order = serde_json::json!({"versions": names, "time": {"created": "2025-02-24T00:00:00.000Z"}});
        let deps: Vec<serde_json::Value> = versions
            .iter()
            .map(|(v, x)| {
                let mut d = serde_json::Map::new();
                d.insert(if *x { super::PLATFORM_PACKAGE } else { "@img/sharp-linux-x64" }.into(), (*v).into());
                serde_json::json!({"version": v, "optionalDependencies": d})
            })
            .collect();
        let d = self.dir.path();
        std::fs::write(d.join("order.json"), order.to_string()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("deps.json"), serde_json::Value::from(deps).to_string())
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Versions published as the platform package only: the platform package's `npm view` lists them
    /// after the main package's, and installing the main package at one of them fails with ETARGET.
    fn platform_only(&self, versions: &[&str]) {
        let d = self.dir.path();
        let order: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("order.json")).unwrap_or_else(|e| panic!("{e}")))
                .unwrap_or_else(|e| panic!("{e}"));
        let mut names: Vec<serde_json::Value> = order["versions"].as_array().cloned().unwrap_or_default();
        names.extend(versions.iter().map(|v| serde_json::Value::from(*v)));
        let platform = serde_json::json!({"versions": names, "time": {"2.1.202": "2026-11-30T00:00:00.000Z"}});
        std::fs::write(d.join("platform.json"), platform.to_string()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("platform-only"), versions.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn cache(&self) -> Cache {
        Cache::new(self.root(), self.npm.clone())
    }

    /// npm runs so far (installs and views).
    fn runs(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("runs")).unwrap_or_default().lines().map(str::to_string).collect()
    }

    fn installs(&self) -> usize {
        self.runs().iter().filter(|r| r.starts_with("install")).count()
    }

    /// Everything under the cache's claude-code dir, relative, sorted (for failure messages too).
    fn listing(&self) -> Vec<String> {
        let base = self.root().join("claude-code");
        let mut out = Vec::new();
        let mut stack = vec![base.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                out.push(p.strip_prefix(&base).unwrap_or(&p).display().to_string());
                if p.is_dir() {
                    stack.push(p);
                }
            }
        }
        out.sort();
        out
    }

    /// Hidden leftovers: temporary installs, npm caches, trash.
    fn leftovers(&self) -> Vec<String> {
        self.listing()
            .into_iter()
            .filter(|p| p.starts_with(".tmp-") || p.starts_with(".npm-cache-") || p.starts_with(".trash-"))
            .collect()
    }
}

fn v(s: &str) -> semver::Version {
    semver::Version::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn ok<T>(r: Result<T, VersionError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn installed_versions(cache: &Cache) -> Vec<String> {
    ok(cache.list()).iter().map(|e| e.version.to_string()).collect()
}

#[test]
fn an_install_is_laid_out_hashed_and_recorded_then_reused_without_npm() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache();
    let first = ok(cache.ensure(&v("2.1.200")));
    assert!(first.installed_now);
    assert_eq!(
        first.binary,
        f.root().join("claude-code/2.1.200/node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
        "the layout scripts/setup uses"
    );
    let bytes = std::fs::read(&first.binary).unwrap_or_default();
    assert_eq!(first.sha256, crate::transcript::sha256(&bytes));
    assert_eq!(first.binary_size, bytes.len() as u64);
    let meta = read_metadata(&f.root().join("claude-code/2.1.200")).unwrap_or_else(|| panic!("{:?}", f.listing()));
    assert_eq!((meta.version.to_string(), meta.sha256.clone()), ("2.1.200".to_string(), first.sha256.clone()));
    assert!(meta.disk_size > PAD as u64);
    assert_eq!(f.installs(), 1);
    assert_eq!(f.leftovers(), Vec::<String>::new(), "npm's private cache and the temporary dir are gone");
    assert!(!f.listing().iter().any(|p| p.contains("_cacache")), "{:?}", f.listing());
    drop(first);

    let again = ok(cache.ensure(&v("2.1.200")));
    assert!(!again.installed_now);
    assert_eq!(again.sha256, meta.sha256);
    assert_eq!(f.installs(), 1, "no second npm run: {:?}", f.runs());
    let later = read_metadata(&f.root().join("claude-code/2.1.200")).unwrap_or_else(|| panic!("metadata"));
    assert!(later.last_used >= meta.last_used);
    assert_eq!(later.installed_at, meta.installed_at);
}

#[test]
fn a_failed_install_leaves_nothing_that_looks_installed() {
    let f = Fake::new(Mode::FailMidway);
    let cache = f.cache();
    let e = cache.ensure(&v("2.1.200")).map(|_| ()).failing("npm failed");
    assert!(matches!(e, VersionError::NpmFailed { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with("npm could not install @anthropic-ai/claude-code@2.1.200 (exit 1)"), "{text}");
    assert!(text.ends_with("npm error network aborted"), "{text}");
    assert!(!f.root().join("claude-code/2.1.200").exists(), "{:?}", f.listing());
    assert_eq!(installed_versions(&cache), Vec::<String>::new());
    assert_eq!(f.leftovers(), Vec::<String>::new());
    // and the next try installs it
    f.set_mode(Mode::Ok);
    assert!(ok(cache.ensure(&v("2.1.200"))).installed_now);
    assert_eq!(f.installs(), 2);
}

#[test]
fn the_leftovers_of_a_killed_install_are_swept_by_the_next_one() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache();
    let dead = f.root().join("claude-code/.tmp-2.1.200-AbCdEf/node_modules/@anthropic-ai/claude-code-linux-x64");
    std::fs::create_dir_all(&dead).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dead.join("claude"), "half").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(installed_versions(&cache), Vec::<String>::new(), "a temporary dir is no install");
    ok(cache.ensure(&v("2.1.200")));
    assert_eq!(f.leftovers(), Vec::<String>::new());
    // gc sweeps those of other versions (their lock is free)
    std::fs::create_dir_all(f.root().join("claude-code/.npm-cache-2.1.201-XyZ/_cacache"))
        .unwrap_or_else(|e| panic!("{e}"));
    ok(cache.gc());
    assert_eq!(f.leftovers(), Vec::<String>::new());
}

#[test]
fn a_corrupt_binary_is_reinstalled() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache();
    let good = ok(cache.ensure(&v("2.1.200")));
    let (binary, sha) = (good.binary.clone(), good.sha256.clone());
    drop(good);
    // a different size
    std::fs::write(&binary, "#!/bin/sh\necho truncated\n").unwrap_or_else(|e| panic!("{e}"));
    let fixed = ok(cache.ensure(&v("2.1.200")));
    assert!(fixed.installed_now);
    assert!(
        fixed.repaired.as_deref().is_some_and(|r| r.starts_with("the binary is 25 bytes, was")),
        "{:?}",
        fixed.repaired
    );
    assert_eq!(fixed.sha256, sha);
    assert_eq!(f.installs(), 2);
    drop(fixed);
    // the same size, other bytes: the mtime moved, so it is hashed, and the hash differs
    let mtime = std::fs::metadata(&binary).and_then(|m| m.modified()).unwrap_or_else(|e| panic!("{e}"));
    let mut bytes = std::fs::read(&binary).unwrap_or_default();
    let last = bytes.len() - 2;
    bytes[last] = b'y';
    std::fs::write(&binary, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let file = std::fs::File::options().write(true).open(&binary).unwrap_or_else(|e| panic!("{e}"));
    file.set_modified(mtime + Duration::from_secs(1)).unwrap_or_else(|e| panic!("{e}"));
    drop(file);
    let fixed = ok(cache.ensure(&v("2.1.200")));
    assert!(fixed.repaired.as_deref().is_some_and(|r| r.contains("SHA-256")), "{:?}", fixed.repaired);
    assert_eq!(f.installs(), 3);
}

#[test]
fn a_touched_binary_is_hashed_again_but_not_reinstalled() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache();
    let first = ok(cache.ensure(&v("2.1.200")));
    let dir = f.root().join("claude-code/2.1.200");
    let before = read_metadata(&dir).unwrap_or_else(|| panic!("metadata"));
    let file = std::fs::File::options().write(true).open(&first.binary).unwrap_or_else(|e| panic!("{e}"));
    let t = std::time::SystemTime::now() + Duration::from_secs(3600);
    file.set_modified(t).unwrap_or_else(|e| panic!("{e}"));
    drop((file, first));
    let again = ok(cache.ensure(&v("2.1.200")));
    assert!(!again.installed_now && again.repaired.is_none());
    let after = read_metadata(&dir).unwrap_or_else(|| panic!("metadata"));
    assert_ne!(after.binary_mtime_ns, before.binary_mtime_ns, "the new mtime is recorded: no hashing next time");
    assert_eq!(after.sha256, before.sha256);
    assert_eq!(f.installs(), 1);
}

/// An install made by scripts/setup (no metadata) at `<root>/claude-code/<V>`, printing `says`.
fn setup_install(f: &Fake, version: &str, says: &str) -> PathBuf {
    let p = f.root().join("claude-code").join(version).join("node_modules/@anthropic-ai/claude-code-linux-x64");
    std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("{e}"));
    let bin = p.join("claude");
    std::fs::write(&bin, format!("#!/bin/sh\necho \"{says} (Claude Code)\"\n")).unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
    bin
}

#[test]
fn an_install_without_metadata_is_adopted_after_its_version_is_checked() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache();
    let bin = setup_install(&f, "2.1.200", "2.1.200");
    let entries = ok(cache.list());
    assert!(entries.len() == 1 && entries[0].metadata.is_none(), "{entries:?}");
    let got = ok(cache.ensure(&v("2.1.200")));
    assert!(!got.installed_now);
    assert_eq!(got.binary, bin);
    assert_eq!(got.sha256, crate::transcript::sha256(&std::fs::read(&bin).unwrap_or_default()));
    assert_eq!(f.installs(), 0, "adopted, not installed: {:?}", f.runs());
    assert!(read_metadata(&f.root().join("claude-code/2.1.200")).is_some());
}

#[test]
fn an_install_without_metadata_that_is_another_version_is_replaced() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache();
    setup_install(&f, "2.1.200", "2.1.199");
    let got = ok(cache.ensure(&v("2.1.200")));
    assert!(got.installed_now);
    assert!(
        got.repaired
            .as_deref()
            .is_some_and(|r| r.contains("printed \"2.1.199 (Claude Code)\", not \"2.1.200 (Claude Code)\"")),
        "{:?}",
        got.repaired
    );
    assert_eq!(f.installs(), 1);
}

#[test]
fn a_binary_that_is_not_the_version_asked_is_not_kept() {
    let f = Fake::new(Mode::WrongVersion);
    let cache = f.cache();
    let e = cache.ensure(&v("2.1.200")).map(|_| ()).failing("wrong binary");
    assert!(e.to_string().contains("printed \"9.9.9 (Claude Code)\""), "{e}");
    assert_eq!(installed_versions(&cache), Vec::<String>::new());
    assert_eq!(f.leftovers(), Vec::<String>::new());
}

/// The disk size of one fake install.
fn one_install() -> u64 {
    let probe = Fake::new(Mode::Ok);
    let got = ok(probe.cache().ensure(&v("2.1.900")));
    let size = ok(probe.cache().list())[0].disk_size;
    drop(got);
    size
}

#[test]
fn eviction_under_a_cap_takes_the_least_recently_used_first() {
    let f = Fake::new(Mode::Ok);
    let size = one_install();
    // room for three installs, not four
    let cache = f.cache().with_cap(Some(size * 3 + size / 2)).with_install_size(size);
    for x in ["2.1.201", "2.1.202", "2.1.203"] {
        let got = ok(cache.ensure(&v(x)));
        assert!(got.evicted.is_empty(), "{x}: {:?}", got.evicted);
    }
    // 2.1.201 used again: 2.1.202 is now the least recently used
    drop(ok(cache.ensure(&v("2.1.201"))));
    let got = ok(cache.ensure(&v("2.1.204")));
    assert_eq!(got.evicted, vec![v("2.1.202")]);
    assert_eq!(installed_versions(&cache), ["2.1.201", "2.1.203", "2.1.204"]);
    drop(got);
    let got = ok(cache.ensure(&v("2.1.205")));
    assert_eq!(got.evicted, vec![v("2.1.203")]);
    assert_eq!(installed_versions(&cache), ["2.1.201", "2.1.204", "2.1.205"]);
    assert_eq!(f.installs(), 5);
    assert_eq!(f.leftovers(), Vec::<String>::new());
}

#[test]
fn a_version_in_use_is_never_evicted() {
    let f = Fake::new(Mode::Ok);
    let size = one_install();
    let cache = f.cache().with_cap(Some(size * 2 + size / 2)).with_install_size(size);
    let oldest = ok(cache.ensure(&v("2.1.201"))); // held, like a running probe
    drop(ok(cache.ensure(&v("2.1.202"))));
    let got = ok(cache.ensure(&v("2.1.203")));
    assert_eq!(got.evicted, vec![v("2.1.202")], "2.1.201 is older but in use");
    assert_eq!(installed_versions(&cache), ["2.1.201", "2.1.203"]);
    // both held: nothing can go
    let e = cache.ensure(&v("2.1.204")).map(|_| ()).failing("full of versions in use");
    assert!(matches!(e, VersionError::CacheFullInUse { .. }), "{e:?}");
    assert!(e.to_string().contains("in use by other runs (2.1.201, 2.1.203)"), "{e}");
    assert!(ok(cache.list()).iter().all(|e| e.in_use));
    let e = cache.remove(&v("2.1.201")).failing("in use");
    assert!(matches!(e, VersionError::InUse { .. }), "{e:?}");
    drop((oldest, got));
    ok(cache.remove(&v("2.1.201")));
    assert_eq!(installed_versions(&cache), ["2.1.203"]);
    assert!(matches!(cache.remove(&v("2.1.201")), Err(VersionError::NotInstalled { .. })));
}

#[test]
fn gc_evicts_down_to_the_cap() {
    let f = Fake::new(Mode::Ok);
    let size = one_install();
    let open = f.cache();
    for x in ["2.1.201", "2.1.202", "2.1.203"] {
        drop(ok(open.ensure(&v(x))));
    }
    drop(ok(open.ensure(&v("2.1.201"))));
    assert_eq!(ok(open.gc()), Vec::<semver::Version>::new(), "no cap: nothing to evict");
    let capped = f.cache().with_cap(Some(size + size / 2));
    assert_eq!(ok(capped.gc()), vec![v("2.1.202"), v("2.1.203")]);
    assert_eq!(installed_versions(&capped), ["2.1.201"]);
}

#[test]
fn a_cap_below_one_install_is_an_error_before_anything_is_downloaded() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache().with_cap(Some(100 << 20));
    let e = cache.ensure(&v("2.1.200")).map(|_| ()).failing("cap too small");
    assert!(matches!(e, VersionError::CapBelowInstall { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "PROBELAB_CACHE_MAX is 100.0M, below one Claude Code install (~386.2M): nothing was downloaded; raise it \
         (e.g. PROBELAB_CACHE_MAX=8G) or unset it"
    );
    assert_eq!(f.installs(), 0);
    assert_eq!(
        f.listing().iter().filter(|p| !p.starts_with(".locks") && *p != "versions.json").count(),
        0,
        "{:?}",
        f.listing()
    );
}

#[test]
fn two_threads_installing_one_version_share_one_npm_run() {
    let f = Fake::new(Mode::Slow);
    let cache = f.cache();
    let got: Vec<Result<(String, bool), String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    cache.ensure(&v("2.1.200")).map(|i| (i.sha256.clone(), i.installed_now)).map_err(|e| e.to_string())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("panicked".into()))).collect()
    });
    let got: Vec<(String, bool)> = got.into_iter().map(|r| r.unwrap_or_else(|e| panic!("{e}"))).collect();
    assert_eq!(f.installs(), 1, "{:?}", f.runs());
    assert_eq!(got[0].0, got[1].0);
    assert_eq!(got.iter().filter(|(_, now)| *now).count(), 1, "one installed it, the other used it: {got:?}");
}

#[test]
fn a_waiting_install_is_let_through_while_the_installer_still_runs_the_binary() {
    let f = Fake::new(Mode::Slow);
    let cache = f.cache();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (first, second) = std::thread::scope(|s| {
        let c = &cache;
        let first = s.spawn(move || {
            let held = c.ensure(&v("2.1.200"));
            // keep the lease (a probe still running) until the other one is through, or give up
            let through = done_rx.recv_timeout(Duration::from_secs(60)).is_ok();
            (held.map(|_| ()).map_err(|e| e.to_string()), through)
        });
        let second = cache.ensure(&v("2.1.200")).map(|_| ()).map_err(|e| e.to_string());
        let _ = done_tx.send(());
        (first.join().unwrap_or_else(|_| (Err("panicked".into()), false)), second)
    });
    assert_eq!(first.0, Ok(()));
    assert_eq!(second, Ok(()));
    assert!(first.1, "the second ensure waited for the first one's lease to end");
    assert_eq!(f.installs(), 1);
}

#[test]
fn a_version_without_the_linux_x64_package_is_named_as_such() {
    let f = Fake::new(Mode::NoPlatform);
    let cache = f.cache();
    let e = cache.ensure(&v("1.0.3")).map(|_| ()).failing("no binary");
    assert!(matches!(e, VersionError::NoLinuxX64 { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "1.0.3 has no linux-x64 binary: its package does not depend on @anthropic-ai/claude-code-linux-x64; pick a \
         version from 2.1.113 on"
    );
    assert_eq!(installed_versions(&cache), Vec::<String>::new());
    assert_eq!(f.leftovers(), Vec::<String>::new());
    // with a catalogue cached, npm is not even asked to install it
    ok(Catalogue::load(&f.root(), &f.npm, Refresh::Always));
    let e = cache.ensure(&v("2.1.112")).map(|_| ()).failing("no binary");
    assert!(e.to_string().starts_with("2.1.112 has no linux-x64 binary"), "{e}");
    assert_eq!(f.installs(), 1);
}

#[test]
fn an_unpublished_version_names_the_nearest_published_ones() {
    let f = Fake::new(Mode::Unknown);
    let cache = f.cache();
    ok(Catalogue::load(&f.root(), &f.npm, Refresh::Always));
    let e = cache.ensure(&v("2.1.150")).map(|_| ()).failing("unknown");
    assert!(matches!(e, VersionError::UnknownVersion { .. }), "{e:?}");
    assert!(e.to_string().contains("nearest published: 2.1.113, 2.1.200"), "{e}");
}

#[test]
fn the_catalogue_is_cached_refreshed_when_old_and_used_offline_saying_so() {
    let f = Fake::new(Mode::Ok);
    let views = || f.runs().iter().filter(|r| r.starts_with("view")).count();
    let (c, fresh) = ok(Catalogue::load(&f.root(), &f.npm, Refresh::default()));
    assert_eq!(fresh, Freshness::Fetched);
    assert_eq!(views(), 3);
    assert_eq!(c.first_linux_x64(), Some(&v("2.1.113")));
    assert_eq!(c.newest().map(|p| p.version.to_string()).as_deref(), Some("2.1.201"));
    // young: npm is not asked
    let (c2, fresh) = ok(Catalogue::load(&f.root(), &f.npm, Refresh::default()));
    assert!(matches!(fresh, Freshness::Cached { .. }), "{fresh:?}");
    assert_eq!(c2, c);
    assert_eq!(views(), 3);
    // asked to: it is
    f.answers(&[("2.1.113", true), ("2.1.200", true), ("2.1.201", true), ("2.1.202", true)]);
    let (c3, fresh) = ok(Catalogue::load(&f.root(), &f.npm, Refresh::Always));
    assert_eq!(fresh, Freshness::Fetched);
    assert_eq!(c3.newest().map(|p| p.version.to_string()).as_deref(), Some("2.1.202"));
    // old: asked again; npm unreachable → the cached list, said
    f.set_mode(Mode::Offline);
    let (c4, fresh) = ok(Catalogue::load(&f.root(), &f.npm, Refresh::IfOlderThan(Duration::ZERO)));
    assert_eq!(c4, c3);
    let Freshness::Offline { error, .. } = &fresh else { panic!("{fresh:?}") };
    assert!(error.contains("the npm registry is unreachable"), "{error}");
    let said = fresh.describe(&c4);
    assert!(said.starts_with("OFFLINE: npm could not be asked, using the list cached "), "{said}");
    assert!(said.contains(" ago (4 versions): npm could not list the versions"), "{said}");
}

#[test]
fn no_cached_catalogue_and_npm_unreachable_is_a_clear_error() {
    let f = Fake::new(Mode::Offline);
    let e = Catalogue::load(&f.root(), &f.npm, Refresh::default()).map(|_| ()).failing("nothing to go by");
    let text = e.to_string();
    assert!(text.starts_with("no list of Claude Code versions: none is cached in "), "{text}");
    assert!(
        text.contains(
            "npm could not list the versions of @anthropic-ai/claude-code (exit 1); the npm registry is unreachable"
        ),
        "{text}"
    );
    assert!(text.ends_with("failed"), "npm's stderr tail: {text}");
}

#[test]
fn probelab_versions_prints_binary_and_install_state() {
    let f = Fake::new(Mode::Ok);
    let cache = f.cache();
    drop(ok(cache.ensure(&v("2.1.200"))));
    let mut out = Vec::new();
    // a project whose observatory measured 2.1.200 (a cell committed), not 2.1.201
    let cells = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(cells.path().join("2.1.200")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(cells.path().join("2.1.200/p.json"), "{}").unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(cells.path().join("2.1.201")).unwrap_or_else(|e| panic!("{e}"));
    ok(cli::versions(&cache, ">=2.1.100", false, false, Some(cells.path()), &mut out));
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("VERSION") && lines[0].contains("MEASURED"), "{text}");
    assert!(lines[1].starts_with("2.1.112") && lines[1].contains("no (not run)"), "{text}");
    assert!(lines[3].starts_with("2.1.200") && lines[3].contains(" yes ") && lines[3].contains("last used"), "{text}");
    assert!(lines[3].split_whitespace().nth(3) == Some("yes"), "measured: {text}");
    assert!(lines[4].starts_with("2.1.201") && lines[4].contains("not yet") && lines[4].ends_with(" -"), "{text}");
    let mut out = Vec::new();
    ok(cli::versions(&cache, "2.1.200,newest", false, true, Some(cells.path()), &mut out));
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(j["catalogue"]["first_linux_x64"], "2.1.113");
    assert_eq!(j["catalogue"]["source"]["kind"], "cached");
    assert_eq!(j["versions"][0]["version"], "2.1.200");
    assert!(j["versions"][0]["installed"]["disk_size"].as_u64().is_some_and(|n| n > 0), "{j}");
    assert_eq!(j["versions"][1]["version"], "2.1.201");
    assert_eq!(j["versions"][1]["installed"], serde_json::Value::Null);
    assert_eq!(
        (j["versions"][0]["measured"].as_bool(), j["versions"][1]["measured"].as_bool()),
        (Some(true), Some(false))
    );
    let e = cli::versions(&cache, "2.1.112", false, false, None, &mut Vec::new()).failing("no binary");
    assert!(e.to_string().starts_with("2.1.112 has no linux-x64 binary"), "{e}");
    // cache list and rm
    let mut out = Vec::new();
    ok(cli::list(&cache, &mut out));
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("1 version(s)") && text.contains("no cap (PROBELAB_CACHE_MAX unset)"), "{text}");
    assert!(text.lines().nth(1).is_some_and(|l| l.trim_start().starts_with("2.1.200")), "{text}");
    ok(cli::rm(&cache, "2.1.200", &mut Vec::new()));
    assert_eq!(installed_versions(&cache), Vec::<String>::new());
}

#[test]
fn golden_headers_give_the_binary_hash_and_a_mismatch_says_what_to_do() {
    let h = "bfcf0ae2dbf94b2b6a106074aabf3938b9a10889c3b678e4cb5a00c03274d5d5";
    let text = format!(
        "---\nsource: harness/tests/probes.rs\ndescription: subject claude-code 2.1.235, binary sha256 {h}\nexpression: transcript\n---\nbody\n"
    );
    assert_eq!(golden_sha256(&text), Some(h));
    assert_eq!(golden_sha256("---\ndescription: subject builtin 0.1.0, embedded\n---\n"), None);
    assert_eq!(golden_sha256("no header"), None);
    assert!(check_sha256("2.1.235", Path::new("/c/claude"), h, h).is_ok());
    let e = check_sha256("2.1.235", Path::new("/c/claude"), "abc", h).failing("mismatch");
    let t = e.to_string();
    assert!(t.starts_with(&format!("claude-code 2.1.235: the binary's SHA-256 is abc, but the golden transcripts were made with {h} (/c/claude)")), "{t}");
    assert!(t.contains("run `probelab cache rm 2.1.235` to reinstall"), "{t}");
}

/// The npm installs the fake saw, after checking that `installed` is the platform package's binary.
fn platform_install(f: &Fake, installed: &Installed) -> Vec<String> {
    let binary = &installed.binary;
    assert!(binary.ends_with("node_modules/@anthropic-ai/claude-code-linux-x64/claude"), "{binary:?}");
    f.runs().into_iter().filter(|r| r.starts_with("install")).collect()
}

#[test]
fn a_version_published_as_the_platform_package_only_is_listed_and_installed_from_it() {
    let f = Fake::new(Mode::Ok);
    f.platform_only(&["2.1.202"]);
    let cache = f.cache();
    let (c, _) = ok(Catalogue::load(&f.root(), &f.npm, Refresh::Always));
    let p = ok(c.runnable(&v("2.1.202")).cloned());
    assert!(p.platform_only && p.linux_x64, "{p:?}");
    assert_eq!(p.published.as_deref(), Some("2026-11-30T00:00:00.000Z"));
    assert_eq!(c.newest().map(|p| p.version.to_string()).as_deref(), Some("2.1.202"));
    assert!(!ok(c.known(&v("2.1.201")).cloned()).platform_only, "in the main package: not platform-only");
    let installed = ok(cache.ensure(&v("2.1.202")));
    assert_eq!(installed.version, v("2.1.202"));
    let installs = platform_install(&f, &installed);
    assert_eq!(installs.len(), 1, "{installs:?}");
    assert!(installs[0].ends_with(" @anthropic-ai/claude-code-linux-x64@2.1.202"), "{installs:?}");
    let mut out = Vec::new();
    ok(cli::versions(&cache, ">=2.1.201", false, false, None, &mut out));
    let text = String::from_utf8_lossy(&out);
    assert!(text.lines().any(|l| l.starts_with("2.1.202") && l.contains("yes (platform pkg)")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("2.1.201") && l.contains("yes ") && !l.contains("platform")), "{text}");
}

#[test]
fn without_a_catalogue_a_version_the_main_package_lacks_is_tried_as_the_platform_package() {
    let f = Fake::new(Mode::Ok);
    f.platform_only(&["2.1.202"]);
    // the catalogue cached before the release, and marked as checked: it does not know 2.1.202
    ok(Catalogue::load(&f.root(), &f.npm, Refresh::Always));
    let file = catalogue::path(&f.root());
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
    let mut j: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let kept: Vec<serde_json::Value> =
        j["versions"].as_array().into_iter().flatten().filter(|e| e["version"] != "2.1.202").cloned().collect();
    j["versions"] = kept.into();
    std::fs::write(&file, j.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let installed = ok(f.cache().ensure(&v("2.1.202")));
    assert_eq!(installed.version, v("2.1.202"));
    let installs = platform_install(&f, &installed);
    assert_eq!(installs.len(), 2, "main first, then the platform package: {installs:?}");
    assert!(installs[0].ends_with(" @anthropic-ai/claude-code@2.1.202"), "{installs:?}");
    assert!(installs[1].ends_with(" @anthropic-ai/claude-code-linux-x64@2.1.202"), "{installs:?}");
}

#[test]
fn a_catalogue_cached_before_platform_packages_were_asked_is_fetched_again() {
    let f = Fake::new(Mode::Ok);
    f.platform_only(&["2.1.202"]);
    ok(Catalogue::load(&f.root(), &f.npm, Refresh::Always));
    let file = catalogue::path(&f.root());
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&file, text.replace("\"platform_checked\": true", "\"platform_checked\": false"))
        .unwrap_or_else(|e| panic!("{e}"));
    let views = |f: &Fake| f.runs().iter().filter(|r| r.starts_with("view")).count();
    let before = views(&f);
    let (c, fresh) = ok(Catalogue::load(&f.root(), &f.npm, Refresh::default()));
    assert_eq!(fresh, Freshness::Fetched);
    assert_eq!(views(&f), before + 3, "the three queries again");
    assert!(c.get(&v("2.1.202")).is_some_and(|p| p.platform_only));
    let (_, fresh) = ok(Catalogue::load(&f.root(), &f.npm, Refresh::default()));
    assert!(matches!(fresh, Freshness::Cached { .. }), "{fresh:?}");
}

/// The real registry, quickly (three `npm view` queries); skipped, loudly, when npm or the network is
/// not there.
#[test]
fn the_real_registry_lists_the_versions_and_where_the_linux_x64_binary_begins() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let c = match Catalogue::fetch(&Npm::new("npm"), d.path()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("SKIPPED the_real_registry_lists_the_versions…: npm view did not answer: {e}");
            return;
        }
    };
    assert!(c.versions().len() >= 473, "{}", c.versions().len());
    let first = v(FIRST_LINUX_X64);
    assert_eq!(c.first_linux_x64(), Some(&first), "the recorded first version with the linux-x64 binary");
    assert!(c.versions().iter().all(|p| p.linux_x64 == (p.version >= first)), "every version from it on has it");
    assert!(c.runnable(&v("2.1.235")).is_ok() && c.runnable(&v("2.1.332")).is_ok());
    // published on 2026-11-30 as the platform package only
    assert!(c.runnable(&v("2.1.333")).is_ok_and(|p| p.platform_only), "{:?}", c.get(&v("2.1.333")));
    assert!(c.get(&v("2.1.332")).is_some_and(|p| !p.platform_only));
    assert!(matches!(c.runnable(&v("1.0.0")), Err(VersionError::NoLinuxX64 { .. })));
}

/// A third-party agent's install ([`Kind`]): its own directory, its package installed with
/// `--ignore-scripts` and no catalogue asked, its program hashed and its version checked (on stderr, as
/// pi prints it), reused without npm; the cap is its own.
#[test]
fn another_kind_is_installed_in_its_own_directory_by_the_same_rules() {
    static AGENT: Kind = Kind {
        dir: "agent-x",
        package: "@x/agent",
        program: "node_modules/@x/agent/bin/agent",
        version_line: "{v}",
        install_size: 1000,
        claude_code: false,
        also: &[],
    };
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{runs}'\nprefix=\nwhile [ $# -gt 0 ]; do [ \"$1\" = --prefix ] && prefix=$2; shift; done\n\
         mkdir -p \"$prefix/node_modules/@x/agent/bin\" \"$prefix/node_modules/.bin\"\n\
         cp '{agent}' \"$prefix/node_modules/@x/agent/bin/agent\"\n\
         chmod +x \"$prefix/node_modules/@x/agent/bin/agent\"\n\
         printf '#!/bin/sh\\necho 1.2.3 >&2\\n' > \"$prefix/node_modules/.bin/agent-runtime\"\n\
         chmod +x \"$prefix/node_modules/.bin/agent-runtime\"\n",
        runs = d.path().join("runs").display(),
        agent = d.path().join("agent-src").display()
    );
    // the agent prints its version only where its `--version` runs with a HOME and TMPDIR of its own and
    // none of the lab's other variables (the test's CARGO_*, a key the host may hold), else the install
    // fails its version check; it writes its environment to the host's test directory, which its
    // confinement keeps from reaching the host (a private /tmp: the write lands there, or is refused).
    // It prints the version through a program of its install's `node_modules/.bin` (as Qwen Code's
    // `#!/usr/bin/env node` finds the Node installed beside it), which its PATH and its view must show.
    let escaped = d.path().join("agent-env");
    let agent = format!(
        "#!/bin/sh\nenv > '{}' 2>/dev/null\n\
         case \"$HOME\" in *.probelab-version-*) ;; *) echo \"home $HOME\" >&2; exit 0;; esac\n\
         [ \"$TMPDIR\" = \"$HOME\" ] || {{ echo tmpdir >&2; exit 0; }}\n\
         for k in $(env | cut -d= -f1); do case $k in PATH|LANG|HOME|TMPDIR|PWD|SHLVL|_|OLDPWD) ;; *) echo \"var $k\" >&2; exit 0;; esac; done\n\
         agent-runtime\n",
        escaped.display()
    );
    std::fs::write(d.path().join("agent-src"), agent).unwrap_or_else(|e| panic!("{e}"));
    let npm = d.path().join("npm");
    let tmp = d.path().join("npm.tmp");
    std::fs::write(&tmp, script).unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, &npm).unwrap_or_else(|e| panic!("{e}"));
    let root = d.path().join("cache");
    let cache = Cache::of(&AGENT, &root, Npm::new(&npm));
    let first = ok(cache.ensure(&v("1.2.3")));
    assert!(first.installed_now);
    assert_eq!(first.binary, root.join("agent-x/1.2.3/node_modules/@x/agent/bin/agent"));
    let bytes = std::fs::read(&first.binary).unwrap_or_default();
    assert_eq!(first.sha256, crate::transcript::sha256(&bytes));
    let meta = std::fs::read_to_string(root.join("agent-x/1.2.3").join(METADATA)).unwrap_or_default();
    assert!(meta.contains("\"package\": \"@x/agent\""), "{meta}");
    // its `--version` passed: it ran confined, with a HOME and TMPDIR of its own and no other variable
    // of the lab's (the agent says otherwise in place of its version); its write out was refused
    assert!(!escaped.exists(), "the agent's --version wrote {} on the host", escaped.display());
    drop(first);
    let again = ok(cache.ensure(&v("1.2.3")));
    assert!(!again.installed_now);
    let runs = std::fs::read_to_string(d.path().join("runs")).unwrap_or_default();
    assert_eq!(runs.lines().count(), 1, "one npm run, no `npm view`: {runs}");
    assert!(runs.contains("--ignore-scripts") && runs.trim_end().ends_with("@x/agent@1.2.3"), "{runs}");
    assert!(!root.join("claude-code").exists(), "Claude Code's directory is not touched");
    drop(again);
    let capped = Cache::of(&AGENT, &root, Npm::new(&npm)).with_cap(Some(10));
    let e = capped.ensure(&v("1.2.4")).failing("a cap below one install");
    assert!(matches!(e, VersionError::CapBelowInstall { needed: 1000, .. }), "{e:?}");
}
