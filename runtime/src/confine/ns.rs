//! The namespaces backend of [`super::Confinement`]: confinement made by probelab itself, with the
//! kernel's namespaces and no host package (issue 39). The probelab binary is its own launcher — its
//! hidden `confine-ns` subcommand ([`main`]), started fresh (one thread: a multi-threaded process may
//! not enter a user namespace) — so the lab spawns it as it spawns bubblewrap and gets an ordinary child
//! to wait for, kill and read.
//!
//! What it makes, as bubblewrap makes it for [`super::Confinement::args`] (a test runs the same
//! observation on both backends and compares: `harness/tests/it/confine.rs`):
//! - a user namespace of its own, the caller's uid and gid mapped to themselves, `setgroups` denied;
//!   every capability dropped (bounding, inheritable, ambient, permitted, effective) and `no_new_privs`
//!   set before the subject starts;
//! - a mount namespace whose root is a new tree: the host's `/` bound read-only, every mount under it
//!   too (each remounted read-only, keeping the flags the kernel locks), a minimal `/dev` (a tmpfs with
//!   `null zero full random urandom tty` bound from the host, `pts` a new devpts instance, `shm`, the
//!   `fd stdin stdout stderr core ptmx` links), a private `/tmp` (tmpfs), the confinement's visible
//!   directories read-only and its writable ones writable over it — every bind `nosuid,nodev`, as
//!   bubblewrap's; the host's tree is detached after `pivot_root`, so nothing of it is reachable by `..`;
//! - a network namespace of its own (unless [`super::Network::Host`]) with its loopback interface up
//!   (one `RTM_NEWLINK` netlink request, as bubblewrap sends it) and the relayed ports bound on
//!   `127.0.0.1` before the subject starts ([`super::relay_main`]'s relay, in this process);
//! - with [`super::Confinement::own_pids`]: a pid namespace whose init is this launcher's second
//!   stage (it reaps what the subject leaves, and the kernel kills everything in the namespace when it
//!   ends), its own session, and a `/proc` of its own; without, the host's pids and `/proc`
//!   (read-only), and the process stays in the caller's process group;
//! - with [`super::Confinement::strict`]: ipc and uts namespaces too;
//! - it dies with the lab (`PR_SET_PDEATHSIG`), the pid namespace's init with the first stage.
//!
//! Decisions: system calls through `nix` and `caps` (safe wrappers; the workspace forbids `unsafe`),
//! no fork — a stage that must create a process in the new pid namespace starts the probelab binary
//! again (`/proc/self/exe`). [`super::Confinement::nested`] false (bubblewrap's `--disable-userns`) is
//! not made here: only the Bash tool's own sandbox asks for it, and that sandbox is bubblewrap's by
//! design (Claude Code's is); a launcher asked for it refuses.
//!
//! Where the kernel refuses (unprivileged user namespaces off, or restricted by AppArmor as on Ubuntu
//! 24.04), the launcher exits [`SETUP_FAILED`] with one line saying which step failed;
//! [`available`] runs it once to know.

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::CloneFlags;

/// The probelab subcommand that is the launcher ([`main`]).
pub const SUBCOMMAND: &str = "confine-ns";

/// The launcher's exit code when it could not confine (the subject did not start); its one line on
/// stderr starts with [`FAILURE_PREFIX`].
pub const SETUP_FAILED: u8 = 125;

/// How the launcher's own failures start on stderr (`probelab confine-ns: cannot …`).
pub const FAILURE_PREFIX: &str = "probelab confine-ns: ";

/// What of `/proc` acts on the whole host (sysctls, the SysRq trigger, IRQ affinities, bus devices)
/// and is guarded by its owner's mode bits alone: bound read-only over a writable `/proc` (by this
/// launcher, and by bubblewrap's arguments in [`super::Confinement::args`]).
pub(crate) const PROC_HOST_WIDE: &[&str] = &["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"];

/// Host devices bound into the minimal `/dev` (bubblewrap's `--dev` set).
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// What the launcher is asked to make ([`Spec::args`] writes it, [`Spec::parse`] reads it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spec {
    /// Bound read-only (over the private `/tmp` when they live there).
    pub visible: Vec<PathBuf>,
    /// Bound writable.
    pub writable: Vec<PathBuf>,
    /// Hidden: a directory becomes an empty read-only tmpfs, a file `/dev/null` (each path after every
    /// path it lies under: [`view_steps`]).
    pub hidden: Vec<PathBuf>,
    /// Empty directories made inside the hidden ones (`/var/tmp`).
    pub skeleton: Vec<PathBuf>,
    /// Keep the host's network.
    pub host_network: bool,
    /// Loopback ports relayed to the lab's sockets (port, socket).
    pub relayed: Vec<(u16, PathBuf)>,
    /// A pid namespace (and session, and `/proc`) of its own.
    pub own_pids: bool,
    /// ipc and uts namespaces too.
    pub strict: bool,
    /// No nested user namespace asked for ([`super::Confinement::nested`] false): refused here.
    pub no_nested: bool,
    /// Where the subject starts.
    pub cwd: PathBuf,
    /// The subject's program and arguments.
    pub argv: Vec<OsString>,
    /// The process this launcher must die with (`PR_SET_PDEATHSIG`), checked once the signal is set
    /// so that a parent gone before it misses nothing: the lab for the first stage and a join (its
    /// parent), the first stage for the second (which, in a pid namespace of its own, cannot see its
    /// parent's pid: it looks the process up in the host's /proc before leaving it).
    pub parent: Option<u32>,
    /// The subject's whole environment (the launcher's own is empty: nothing of it acts before the
    /// confinement is made).
    pub env: Vec<(OsString, OsString)>,
    /// Join the namespaces of this process (host pid: a session's holder, [`super::Session`]) instead
    /// of making new ones.
    pub join: Option<u32>,
    /// `cgroup.procs` files the launcher joins first thing (the run's limits): everything it starts is
    /// counted there.
    pub cgroups: Vec<PathBuf>,
    /// The largest file the program and everything it starts may write (`RLIMIT_FSIZE`, set before
    /// anything is started).
    pub max_file_bytes: Option<u64>,
    /// Join the cgroups, then start the program as it is (no namespace made): the step before
    /// bubblewrap when the run has limits.
    pub passthrough: bool,
    /// The second stage: the init of the pid namespace the first made.
    pub(crate) init: bool,
}

impl Spec {
    /// The launcher's arguments after the subcommand.
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        if self.init {
            a.push("--init".into());
        }
        if self.own_pids {
            a.push("--own-pids".into());
        }
        if self.strict {
            a.push("--strict".into());
        }
        if self.no_nested {
            a.push("--no-nested".into());
        }
        if self.host_network {
            a.push("--host-network".into());
        }
        if self.passthrough {
            a.push("--passthrough".into());
        }
        for c in &self.cgroups {
            a.push("--cgroup".into());
            a.push(c.into());
        }
        if let Some(n) = self.max_file_bytes {
            a.push("--max-file-bytes".into());
            a.push(n.to_string().into());
        }
        if let Some(pid) = self.join {
            a.push("--join".into());
            a.push(pid.to_string().into());
        }
        if let Some(pid) = self.parent {
            a.push("--parent".into());
            a.push(pid.to_string().into());
        }
        for (port, sock) in &self.relayed {
            let mut s = OsString::from(format!("{port}="));
            s.push(sock);
            a.push("--relay".into());
            a.push(s);
        }
        for v in &self.visible {
            a.push("--ro".into());
            a.push(v.into());
        }
        for w in &self.writable {
            a.push("--rw".into());
            a.push(w.into());
        }
        for h in &self.hidden {
            a.push("--hide".into());
            a.push(h.into());
        }
        for d in &self.skeleton {
            a.push("--mkdir".into());
            a.push(d.into());
        }
        for (k, v) in &self.env {
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            a.push("--env".into());
            a.push(kv);
        }
        a.push("--cwd".into());
        a.push(self.cwd.clone().into());
        a.push("--".into());
        a.extend(self.argv.iter().cloned());
        a
    }

    /// Reads [`Spec::args`]'s form.
    pub fn parse(args: &[OsString]) -> Result<Spec, String> {
        let mut s = Spec::default();
        let mut it = args.iter();
        let mut cwd = None;
        while let Some(a) = it.next() {
            let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
            match a.to_str() {
                Some("--") => {
                    s.argv = it.cloned().collect();
                    break;
                }
                Some("--init") => s.init = true,
                Some("--own-pids") => s.own_pids = true,
                Some("--strict") => s.strict = true,
                Some("--no-nested") => s.no_nested = true,
                Some("--host-network") => s.host_network = true,
                Some("--ro") => s.visible.push(value("--ro")?.into()),
                Some("--rw") => s.writable.push(value("--rw")?.into()),
                Some("--hide") => s.hidden.push(value("--hide")?.into()),
                Some("--cgroup") => s.cgroups.push(value("--cgroup")?.into()),
                Some("--max-file-bytes") => {
                    let v = value("--max-file-bytes")?;
                    let n = v.to_str().and_then(|n| n.parse::<u64>().ok()).filter(|n| *n > 0);
                    s.max_file_bytes = Some(n.ok_or_else(|| format!("--max-file-bytes {v:?} is not a size in bytes"))?);
                }
                Some("--passthrough") => s.passthrough = true,
                Some("--mkdir") => s.skeleton.push(value("--mkdir")?.into()),
                Some("--env") => {
                    use std::os::unix::ffi::{OsStrExt, OsStringExt};
                    let kv = value("--env")?;
                    let b = kv.as_bytes();
                    let eq = b.iter().position(|c| *c == b'=').filter(|i| *i > 0);
                    let eq = eq.ok_or_else(|| format!("--env {kv:?} is not NAME=VALUE"))?;
                    let (k, v) = (b[..eq].to_vec(), b[eq + 1..].to_vec());
                    s.env.push((OsString::from_vec(k), OsString::from_vec(v)));
                }
                Some("--cwd") => cwd = Some(PathBuf::from(value("--cwd")?)),
                Some("--parent") => {
                    let v = value("--parent")?;
                    let pid = v.to_str().and_then(|p| p.parse::<u32>().ok()).filter(|p| *p > 0);
                    s.parent = Some(pid.ok_or_else(|| format!("--parent {v:?} is not a process id"))?);
                }
                Some("--join") => {
                    let v = value("--join")?;
                    let pid = v.to_str().and_then(|p| p.parse::<u32>().ok()).filter(|p| *p > 1);
                    s.join = Some(pid.ok_or_else(|| format!("--join {v:?} is not a process id"))?);
                }
                Some("--relay") => {
                    let v = value("--relay")?;
                    let text = v.to_string_lossy();
                    let (port, sock) = text
                        .split_once('=')
                        .and_then(|(p, s)| Some((p.parse::<u16>().ok()?, PathBuf::from(s))))
                        .ok_or_else(|| format!("--relay {text:?} is not PORT=SOCKET"))?;
                    s.relayed.push((port, sock));
                }
                _ => return Err(format!("unknown argument {a:?}")),
            }
        }
        s.cwd = cwd.ok_or("--cwd is missing")?;
        if s.argv.is_empty() {
            return Err("no command after --".into());
        }
        for p in s.visible.iter().chain(&s.writable).chain(&s.hidden).chain(&s.skeleton).chain(std::iter::once(&s.cwd))
        {
            if !p.is_absolute() {
                return Err(format!("{} is not an absolute path", p.display()));
            }
        }
        if s.host_network && !s.relayed.is_empty() {
            return Err("--relay is for a network of its own, not with --host-network".into());
        }
        Ok(s)
    }
}

/// The launcher: `confine-ns SPEC -- ARGV…` ([`Spec::args`]). Returns the exit code: the subject's
/// (128 + the signal that ended it), or [`SETUP_FAILED`] with one line on stderr. Runs in a process
/// of its own that has started no thread (the probelab binary's `main` calls it first).
pub fn main(args: &[OsString]) -> u8 {
    let spec = match Spec::parse(args) {
        Ok(s) => s,
        Err(e) => return failed(&format!("usage: {e}")),
    };
    if spec.no_nested {
        return failed("nested user namespaces cannot be refused by this backend (bubblewrap's --disable-userns); the Bash sandbox uses bubblewrap");
    }
    // the run's limits first, before any process is started: everything after is counted
    if !spec.init {
        for procs in &spec.cgroups {
            if let Err(e) = std::fs::write(procs, std::process::id().to_string()) {
                return failed(&format!("cannot join the run's cgroup {}: {e}", procs.display()));
            }
        }
    }
    // the largest file: a limit of the process, inherited by all it starts (a write past it is refused)
    if let Some(n) = spec.max_file_bytes {
        if let Err(e) = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_FSIZE, n, n) {
            return failed(&format!("cannot set the largest file a subject may write ({n} bytes): {e}"));
        }
    }
    let run = if spec.passthrough {
        passthrough(&spec)
    } else if let Some(pid) = spec.join {
        join(&spec, pid)
    } else if spec.init {
        init(&spec)
    } else {
        first(&spec)
    };
    match run {
        Ok(code) => code,
        Err(e) => failed(&e),
    }
}

fn failed(why: &str) -> u8 {
    let _ = writeln!(std::io::stderr(), "{FAILURE_PREFIX}{why}");
    SETUP_FAILED
}

fn sys(step: &str) -> impl Fn(nix::Error) -> String + '_ {
    move |e| format!("cannot {step}: {}", e.desc())
}

/// The first stage: the namespaces, the id maps; then the confinement made here, or (own pids) by the
/// second stage, the init of the new pid namespace.
/// `PR_SET_PDEATHSIG` (SIGKILL), then the check that the parent was not gone before it was set.
fn die_with_parent(spec: &Spec) -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(sys("die with the lab"))?;
    let Some(parent) = spec.parent else { return Ok(()) };
    let alive = if spec.init {
        Path::new(&format!("/proc/{parent}")).exists()
    } else {
        nix::unistd::getppid().as_raw() as u32 == parent
    };
    if alive {
        Ok(())
    } else {
        Err(format!("the process it was to die with ({parent}) is gone"))
    }
}

fn first(spec: &Spec) -> Result<u8, String> {
    die_with_parent(spec)?;
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS;
    if spec.own_pids {
        flags |= CloneFlags::CLONE_NEWPID;
    }
    if !spec.host_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if spec.strict {
        flags |= CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS;
    }
    nix::sched::unshare(flags).map_err(sys("make namespaces (unshare)"))?;
    let write = |file: &str, text: String| {
        std::fs::write(Path::new("/proc/self").join(file), text)
            .map_err(|e| format!("cannot write /proc/self/{file}: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))?;
    if !spec.own_pids {
        confine(spec)?;
        return start(spec);
    }
    // the second stage is the first process of the new pid namespace: its init
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the probelab binary: {e}"))?;
    let mut next = spec.clone();
    next.init = true;
    next.parent = Some(std::process::id());
    let status = std::process::Command::new(exe)
        .arg(SUBCOMMAND)
        .args(next.args())
        .status()
        .map_err(|e| format!("cannot start the pid namespace's init: {e}"))?;
    Ok(code_of(status))
}

/// The second stage, pid 1 of its namespace: the confinement, then the subject, reaping every orphan
/// until the subject ends (then the kernel ends the rest).
fn init(spec: &Spec) -> Result<u8, String> {
    die_with_parent(spec)?;
    nix::unistd::setsid().map_err(sys("start a session"))?;
    confine(spec)?;
    start(spec)
}

/// Joins the namespaces of `pid` (a session's holder: user first, then ipc, uts, network, pid and
/// mount — which also puts this process at the holder's root), drops every privilege, and starts the
/// subject in them: its child, the first of its processes in the holder's pid namespace (this launcher
/// stays outside it, in the caller's process group, so the caller's group and tree kills reach
/// everything; what outlives them goes with the holder).
fn join(spec: &Spec, pid: u32) -> Result<u8, String> {
    use std::os::fd::AsFd;
    die_with_parent(spec)?;
    let dir = PathBuf::from(format!("/proc/{pid}/ns"));
    // every namespace opened before the first is entered (the host's /proc is gone after the mount one)
    let mut open = Vec::new();
    for (name, flag) in [
        ("user", CloneFlags::CLONE_NEWUSER),
        ("ipc", CloneFlags::CLONE_NEWIPC),
        ("uts", CloneFlags::CLONE_NEWUTS),
        ("net", CloneFlags::CLONE_NEWNET),
        ("pid", CloneFlags::CLONE_NEWPID),
        ("mnt", CloneFlags::CLONE_NEWNS),
    ] {
        let f = std::fs::File::open(dir.join(name))
            .map_err(|e| format!("cannot open the session's {name} namespace ({}): {e}", dir.display()))?;
        open.push((name, flag, f));
    }
    for (name, flag, f) in &open {
        nix::sched::setns(f.as_fd(), *flag)
            .map_err(|e| format!("cannot join the session's {name} namespace: {}", e.desc()))?;
    }
    drop(open);
    drop_privileges()?;
    std::env::set_current_dir(&spec.cwd).map_err(|e| format!("cannot enter {}: {e}", spec.cwd.display()))?;
    let (program, rest) = spec.argv.split_first().ok_or("no command")?;
    let mut child = std::process::Command::new(program)
        .args(rest)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    Ok(code_of(child.wait().map_err(|e| format!("cannot wait for the subject: {e}"))?))
}

/// Starts the program in place (its environment the spec's), nothing confined: the cgroups joined.
fn passthrough(spec: &Spec) -> Result<u8, String> {
    use std::os::unix::process::CommandExt;
    die_with_parent(spec)?;
    let (program, rest) = spec.argv.split_first().ok_or("no command")?;
    let e = std::process::Command::new(program)
        .args(rest)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .exec();
    Err(format!("cannot start {}: {e}", program.to_string_lossy()))
}

/// The program a session's holder runs ([`HOLD_SUBCOMMAND`]): says `ready` on stdout once it runs —
/// inside the confinement, so everything is made — then waits to be killed with the session.
pub fn hold_main() -> u8 {
    let mut out = std::io::stdout();
    if writeln!(out, "ready").and_then(|()| out.flush()).is_err() {
        return SETUP_FAILED;
    }
    loop {
        std::thread::park();
    }
}

/// The probelab subcommand a session's holder runs ([`hold_main`]).
pub const HOLD_SUBCOMMAND: &str = "confine-hold";

/// Exit code of a child's status: its code, or 128 + the signal that ended it.
fn code_of(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    let code = status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1);
    code.clamp(0, 255) as u8
}

/// Mounts, network, privileges: everything before the subject starts.
fn confine(spec: &Spec) -> Result<(), String> {
    mounts(spec)?;
    if !spec.host_network {
        loopback_up()?;
    }
    drop_privileges()?;
    std::env::set_current_dir(&spec.cwd).map_err(|e| format!("cannot enter {}: {e}", spec.cwd.display()))
}

/// Starts the subject: exec'd in place when nothing else is needed here, else spawned (the relay
/// listens; the init reaps) and waited for.
fn start(spec: &Spec) -> Result<u8, String> {
    let (program, rest) = spec.argv.split_first().ok_or("no command")?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest).env_clear().envs(spec.env.iter().map(|(k, v)| (k, v)));
    for (port, sock) in &spec.relayed {
        let listener = std::net::TcpListener::bind(("127.0.0.1", *port))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        let sock = sock.clone();
        std::thread::spawn(move || super::relay::relay_accept(listener, &sock));
    }
    if !spec.own_pids && spec.relayed.is_empty() {
        use std::os::unix::process::CommandExt;
        let e = cmd.exec();
        return Err(format!("cannot start {}: {e}", program.to_string_lossy()));
    }
    let child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    if !spec.own_pids {
        let mut child = child;
        return Ok(code_of(child.wait().map_err(|e| format!("cannot wait for the subject: {e}"))?));
    }
    // pid 1: every orphan of the namespace comes here; the subject's end is the namespace's
    let main = nix::unistd::Pid::from_raw(child.id() as i32);
    loop {
        use nix::sys::wait::WaitStatus;
        match nix::sys::wait::waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return Ok(code.clamp(0, 255) as u8),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => return Ok((128 + sig as i32).clamp(0, 255) as u8),
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(e) => return Err(format!("cannot wait for the subject: {}", e.desc())),
        }
    }
}

/// The new root, built in a tmpfs over `/tmp` and entered with `pivot_root` (bubblewrap's way): the
/// host's tree stays reachable under `/oldroot` while the new one is made, then is detached.
fn mounts(spec: &Spec) -> Result<(), String> {
    let none: Option<&str> = None;
    // nothing made here propagates back to the host
    mount(none, "/", none, MsFlags::MS_SLAVE | MsFlags::MS_REC, none).map_err(sys("make / a slave mount"))?;
    mount(Some("tmpfs"), "/tmp", Some("tmpfs"), MsFlags::MS_NODEV | MsFlags::MS_NOSUID, Some("mode=0755"))
        .map_err(sys("mount the launcher's tmpfs"))?;
    std::env::set_current_dir("/tmp").map_err(|e| format!("cannot enter /tmp: {e}"))?;
    for d in ["newroot", "oldroot"] {
        std::fs::create_dir(d).map_err(|e| format!("cannot create /tmp/{d}: {e}"))?;
    }
    nix::unistd::pivot_root(".", "oldroot").map_err(sys("pivot_root into the launcher's tmpfs"))?;
    std::env::set_current_dir("/").map_err(|e| format!("cannot enter /: {e}"))?;
    let new = Path::new("/newroot");
    let old = Path::new("/oldroot");
    // the host, read-only, every mount under it too
    bind(old, new, true, false)?;
    // /dev: a tmpfs with the host's harmless devices, pts, shm and the usual links
    let dev = new.join("dev");
    mount(Some("tmpfs"), &dev, Some("tmpfs"), MsFlags::MS_NOSUID | MsFlags::MS_NODEV, Some("mode=0755"))
        .map_err(sys("mount /dev"))?;
    for d in DEVICES {
        let (host, inside) = (old.join("dev").join(d), dev.join(d));
        if host.exists() {
            std::fs::File::create(&inside).map_err(|e| format!("cannot create /dev/{d}: {e}"))?;
            bind(&host, &inside, false, true)?;
        }
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("core", "/proc/kcore"),
        ("ptmx", "pts/ptmx"),
    ] {
        std::os::unix::fs::symlink(to, dev.join(link)).map_err(|e| format!("cannot link /dev/{link}: {e}"))?;
    }
    for d in ["shm", "pts"] {
        std::fs::create_dir(dev.join(d)).map_err(|e| format!("cannot create /dev/{d}: {e}"))?;
    }
    mount(
        Some("devpts"),
        &dev.join("pts"),
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    )
    .map_err(sys("mount /dev/pts"))?;
    // /proc: the namespace's own when it has its own pids (what acts on the whole host covered), else
    // the host's as bound above, read-only
    if spec.own_pids {
        let proc_ = new.join("proc");
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC | MsFlags::MS_NODEV;
        mount(Some("proc"), &proc_, Some("proc"), flags, none).map_err(sys("mount /proc"))?;
        for p in PROC_HOST_WIDE {
            let inside = new.join(p.trim_start_matches('/'));
            if inside.exists() {
                bind(&inside, &inside, true, false)?;
            }
        }
    }
    // the view, each path after every path it lies under ([`view_steps`]): what the host keeps to
    // itself (an empty tmpfs over a hidden directory, read-only once what lies under it is bound;
    // /dev/null over a hidden file), the private /tmp, what the confinement shows or writes (made in a
    // tmpfs when it lives there)
    let mut hidden_dirs = Vec::new();
    let place = |p: &Path| (old.join(p.strip_prefix("/").unwrap_or(p)), new.join(p.strip_prefix("/").unwrap_or(p)));
    for step in view_steps(&spec.hidden, &spec.visible, &spec.writable) {
        let (p, read_only) = match step {
            ViewStep::Hide(p) => {
                let (host, inside) = place(p);
                // a path the subject would not see anyway (under a hidden directory, nothing shown on the
                // way) has nothing to cover
                if !inside.exists() {
                    continue;
                }
                match std::fs::symlink_metadata(&host) {
                    Ok(m) if m.is_dir() => {
                        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
                        mount(Some("tmpfs"), &inside, Some("tmpfs"), flags, Some("mode=0755"))
                            .map_err(|e| format!("cannot hide {}: {}", p.display(), e.desc()))?;
                        hidden_dirs.push(inside);
                    }
                    Ok(m) if m.is_file() => bind(&old.join("dev/null"), &inside, true, false)?,
                    _ => {}
                }
                continue;
            }
            ViewStep::Tmp => {
                let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
                mount(Some("tmpfs"), &new.join("tmp"), Some("tmpfs"), flags, Some("mode=0755"))
                    .map_err(sys("mount /tmp"))?;
                continue;
            }
            ViewStep::Show(p) => (p, true),
            ViewStep::Write(p) => (p, false),
        };
        show(old, new, p, read_only)?;
    }
    for d in &spec.skeleton {
        let inside = new.join(d.strip_prefix("/").unwrap_or(d));
        std::fs::create_dir_all(&inside).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let relay_dirs: Vec<PathBuf> = spec.relayed.iter().filter_map(|(_, s)| s.parent().map(Path::to_path_buf)).collect();
    for p in &relay_dirs {
        show(old, new, p, true)?;
    }
    for inside in &hidden_dirs {
        let flags =
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(none, inside, none, flags, none).map_err(sys("make a hidden directory read-only"))?;
    }
    // enter the new root; the host's tree goes
    mount(none, old, none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).map_err(sys("make the old root private"))?;
    umount2(old, MntFlags::MNT_DETACH).map_err(sys("detach the old root"))?;
    std::env::set_current_dir(new).map_err(|e| format!("cannot enter the new root: {e}"))?;
    nix::unistd::pivot_root(".", ".").map_err(sys("pivot_root into the new root"))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(sys("detach the launcher's tmpfs"))?;
    std::env::set_current_dir("/").map_err(|e| format!("cannot enter /: {e}"))
}

/// One step of making the subject's view of the host ([`view_steps`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewStep<'a> {
    /// An empty tmpfs over a directory (read-only at the end), `/dev/null` over a file.
    Hide(&'a Path),
    /// The private, writable `/tmp`.
    Tmp,
    /// The host's path bound read-only.
    Show(&'a Path),
    /// The host's directory bound writable.
    Write(&'a Path),
}

/// The steps that make the view, each path after every path it lies under (by depth; at one depth a
/// hide before a show, so a path both hidden and shown is shown): a file hidden inside a shown
/// directory (a credential under `~/.cargo`, an ignored `.env` in a project under `/tmp`) is hidden
/// after the directory is shown, and a directory shown inside a hidden one (the cache under `/root`,
/// the probelab binary's directory under a project's ignored `target/`) after it is hidden. Applied in
/// another order, a bind of the host's tree uncovers what was hidden under it, or a hide covers what
/// was to be shown. A shown path inside another shown one with no hidden path between them adds
/// nothing and is left out: the kernel refuses to remount a read-only bind inside another read-only
/// one (EINVAL: the project, and its probes directory under it, both under /tmp).
pub fn view_steps<'a>(hidden: &'a [PathBuf], visible: &'a [PathBuf], writable: &'a [PathBuf]) -> Vec<ViewStep<'a>> {
    let tmp = Path::new("/tmp");
    let between =
        |outer: &Path, inner: &Path| hidden.iter().any(|h| h != outer && h.starts_with(outer) && inner.starts_with(h));
    let mut steps: Vec<(usize, u8, ViewStep<'a>)> = Vec::new();
    let depth = |p: &Path| p.components().count();
    steps.extend(hidden.iter().map(|h| (depth(h), 0, ViewStep::Hide(h.as_path()))));
    steps.push((depth(tmp), 0, ViewStep::Tmp));
    for (i, v) in visible.iter().enumerate() {
        let redundant = visible
            .iter()
            .enumerate()
            .any(|(j, u)| (u != v && v.starts_with(u) || (u == v && j < i)) && !between(u, v));
        if !redundant {
            steps.push((depth(v), 1, ViewStep::Show(v.as_path())));
        }
    }
    steps.extend(writable.iter().map(|w| (depth(w), 2, ViewStep::Write(w.as_path()))));
    // stable: paths of one depth and kind keep the order they were given in
    steps.sort_by_key(|(d, k, _)| (*d, *k));
    steps.into_iter().map(|(_, _, s)| s).collect()
}

/// Binds the host's `p` (under `old`) at its place in the new root (`new`), read-only or writable; the
/// mount point is made first (in a tmpfs where it lives in one). A path the host does not have is left
/// out.
fn show(old: &Path, new: &Path, p: &Path, read_only: bool) -> Result<(), String> {
    let host = old.join(p.strip_prefix("/").unwrap_or(p));
    let Ok(meta) = std::fs::metadata(&host) else { return Ok(()) };
    let inside = new.join(p.strip_prefix("/").unwrap_or(p));
    if meta.is_dir() {
        std::fs::create_dir_all(&inside).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
    } else if !inside.exists() {
        if let Some(parent) = inside.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::File::create(&inside).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
    }
    bind(&host, &inside, read_only, false)
}

/// Binds `from` on `to` (recursively), `nosuid` and — unless `device` — `nodev`, as bubblewrap's
/// binds are; `read_only` remounts it and every mount under it read-only, keeping the flags the
/// kernel locks in a user namespace (a remount that drops one is refused).
fn bind(from: &Path, to: &Path, read_only: bool, device: bool) -> Result<(), String> {
    let none: Option<&str> = None;
    mount(Some(from), to, none, MsFlags::MS_BIND | MsFlags::MS_REC, none)
        .map_err(|e| format!("cannot bind {} on {}: {}", from.display(), to.display(), e.desc()))?;
    let mut extra = MsFlags::MS_NOSUID;
    if !device {
        extra |= MsFlags::MS_NODEV;
    }
    if read_only {
        extra |= MsFlags::MS_RDONLY;
    }
    let mut points = vec![to.to_path_buf()];
    if read_only {
        points.extend(submounts(to)?);
    }
    for point in points {
        let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | extra | locked(&point);
        match mount(none, &point, none, flags, none) {
            Ok(()) => {}
            // a mount hidden under another one made later (its point is no longer reachable)
            Err(nix::Error::ENOENT) if point != to => {}
            Err(e) => return Err(format!("cannot make {} read-only: {}", point.display(), e.desc())),
        }
    }
    Ok(())
}

/// The flags of the mount at `point` that a remount must keep.
fn locked(point: &Path) -> MsFlags {
    use nix::sys::statvfs::FsFlags;
    let Ok(st) = nix::sys::statvfs::statvfs(point) else { return MsFlags::empty() };
    let f = st.flags();
    let mut m = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        (FsFlags::ST_RDONLY, MsFlags::MS_RDONLY),
    ] {
        if f.contains(fs) {
            m |= ms;
        }
    }
    m
}

/// The mount points strictly under `dir`, in the order they were mounted (the host's `/proc`, under
/// the old root while the new one is made: the paths it gives are this process's, under the new root).
fn submounts(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let text =
        std::fs::read_to_string("/oldroot/proc/self/mountinfo").map_err(|e| format!("cannot read mountinfo: {e}"))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(field) = line.split(' ').nth(4) else { continue };
        let point = PathBuf::from(unescape(field));
        if point != dir && point.starts_with(dir) && !out.contains(&point) {
            out.push(point);
        }
    }
    Ok(out)
}

/// A mountinfo field: `\040`-style octal escapes (space, tab, newline, backslash) back to bytes.
fn unescape(field: &str) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
}

/// Brings the namespace's loopback interface up: one `RTM_NEWLINK` request (`IFF_UP` on `lo`) on a
/// netlink route socket, and its acknowledgement.
fn loopback_up() -> Result<(), String> {
    use nix::sys::socket::{
        recv, sendto, socket, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType,
    };
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_ACK: u16 = 4;
    const NLMSG_ERROR: u16 = 2;
    const IFF_UP: u32 = 1;
    let index = nix::net::if_::if_nametoindex("lo").map_err(sys("find the loopback interface"))?;
    let fd = socket(AddressFamily::Netlink, SockType::Raw, SockFlag::SOCK_CLOEXEC, SockProtocol::NetlinkRoute)
        .map_err(sys("open a netlink socket"))?;
    // struct nlmsghdr (16 bytes) then struct ifinfomsg (16 bytes), native endian
    let mut msg = Vec::with_capacity(32);
    msg.extend_from_slice(&32u32.to_ne_bytes());
    msg.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    msg.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel's
    msg.extend_from_slice(&[0u8, 0u8]); // family AF_UNSPEC, pad
    msg.extend_from_slice(&0u16.to_ne_bytes()); // type
    msg.extend_from_slice(&(index as i32).to_ne_bytes());
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // flags
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // change
    use std::os::fd::AsRawFd;
    sendto(fd.as_raw_fd(), &msg, &NetlinkAddr::new(0, 0), MsgFlags::empty()).map_err(sys("send to netlink"))?;
    let mut buf = [0u8; 1024];
    let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()).map_err(sys("read netlink's answer"))?;
    let kind = buf.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    let error = buf.get(16..20).map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    match (n >= 20, kind, error) {
        (true, Some(NLMSG_ERROR), Some(0)) => Ok(()),
        (true, Some(NLMSG_ERROR), Some(e)) => {
            Err(format!("cannot bring the loopback interface up: {}", nix::Error::from_raw(-e).desc()))
        }
        _ => Err("cannot bring the loopback interface up: netlink's answer is not an acknowledgement".into()),
    }
}

/// Every capability gone from every set, and no way back (`no_new_privs`): what bubblewrap's
/// `--cap-drop ALL` leaves.
fn drop_privileges() -> Result<(), String> {
    use caps::CapSet;
    let all = caps::all();
    for c in &all {
        caps::drop(None, CapSet::Bounding, *c).map_err(|e| format!("cannot drop {c} from the bounding set: {e}"))?;
    }
    for set in [CapSet::Ambient, CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
        caps::clear(None, set).map_err(|e| format!("cannot clear the {set:?} capabilities: {e}"))?;
    }
    nix::sys::prctl::set_no_new_privs().map_err(sys("set no_new_privs"))
}

/// Why the lab's own namespaces cannot confine here ([`check`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refused {
    /// The check's temp dir could not be made.
    #[error("cannot make a temp dir: {0}")]
    TempDir(std::sync::Arc<std::io::Error>),
    /// The launcher (the probelab binary) could not be started.
    #[error("cannot start {}: {error}", launcher.display())]
    Start {
        /// The launcher.
        launcher: PathBuf,
        /// Why.
        error: std::sync::Arc<std::io::Error>,
    },
    /// The launcher ran and could not confine: its failure line (the kernel's refusal, in the words of
    /// the call that failed), or its whole stderr when it wrote none.
    #[error("{said}")]
    Said {
        /// What the launcher said.
        said: String,
    },
}

/// Whether this host lets `launcher` (the probelab binary) confine: it confines `true` once, as a
/// subject with its own pids, relayed ports' network and a writable directory would be. `Err`: the
/// step that failed, with the launcher's own line when it ran ([`Refused`]).
pub fn check(launcher: &Path) -> Result<(), Refused> {
    let dir = tempfile::Builder::new()
        .prefix("probelab-confine-check-")
        .tempdir()
        .map_err(|e| Refused::TempDir(std::sync::Arc::new(e)))?;
    let spec = Spec {
        writable: vec![dir.path().to_path_buf()],
        own_pids: true,
        cwd: dir.path().to_path_buf(),
        argv: vec!["/bin/sh".into(), "-c".into(), ": > confined".into()],
        ..Spec::default()
    };
    let out = std::process::Command::new(launcher)
        .arg(SUBCOMMAND)
        .args(spec.args())
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Refused::Start { launcher: launcher.to_path_buf(), error: std::sync::Arc::new(e) })?;
    let said = String::from_utf8_lossy(&out.stderr);
    let line = said.lines().find(|l| l.starts_with(FAILURE_PREFIX)).unwrap_or(said.trim());
    if out.status.success() && dir.path().join("confined").is_file() {
        Ok(())
    } else {
        Err(Refused::Said { said: line.strip_prefix(FAILURE_PREFIX).unwrap_or(line).to_string() })
    }
}

/// The launcher's command line for `spec` (with `launcher` the probelab binary).
pub fn command_line(launcher: &Path, spec: &Spec) -> (OsString, Vec<OsString>) {
    let mut a: Vec<OsString> = vec![OsStr::new(SUBCOMMAND).to_os_string()];
    a.extend(spec.args());
    (launcher.as_os_str().to_os_string(), a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_that_cannot_confine_is_refused_with_the_step_that_failed() {
        let missing = Path::new("/nonexistent/probelab");
        match check(missing) {
            Err(Refused::Start { launcher, .. }) => assert_eq!(launcher, missing),
            other => panic!("{other:?}"),
        }
        // a launcher that runs and refuses, as the kernel's refusal reaches the lab: its failure line
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let launcher = dir.path().join("probelab");
        let script = format!("#!/bin/sh\necho noise >&2\necho '{FAILURE_PREFIX}unshare: EPERM' >&2\nexit 1\n");
        std::fs::write(&launcher, script).unwrap_or_else(|e| panic!("{e}"));
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
        match check(&launcher) {
            Err(Refused::Said { said }) => assert_eq!(said, "unshare: EPERM"),
            other => panic!("{other:?}"),
        }
        // one that exits 0 without confining the write is refused too, with what it said
        std::fs::write(&launcher, "#!/bin/sh\necho quiet >&2\n").unwrap_or_else(|e| panic!("{e}"));
        match check(&launcher) {
            Err(Refused::Said { said }) => assert_eq!(said, "quiet"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_spec_reads_back_what_it_writes() {
        let s = Spec {
            visible: vec!["/a b".into()],
            writable: vec!["/w".into()],
            relayed: vec![(4242, "/s/4242.sock".into())],
            own_pids: true,
            strict: true,
            cwd: "/w".into(),
            argv: vec!["prog".into(), "--".into(), "x".into()],
            env: vec![("A".into(), "b=c".into()), ("E".into(), "".into())],
            hidden: vec!["/root".into()],
            skeleton: vec!["/var/tmp".into()],
            join: Some(42),
            ..Spec::default()
        };
        assert_eq!(Spec::parse(&s.args()), Ok(s));
    }

    #[test]
    fn a_bad_spec_is_refused_with_the_reason() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(Spec::parse(&a(&["--", "x"])), Err("--cwd is missing".into()));
        assert_eq!(Spec::parse(&a(&["--cwd", "/"])), Err("no command after --".into()));
        assert_eq!(Spec::parse(&a(&["--cwd", "rel", "--", "x"])), Err("rel is not an absolute path".into()));
        assert!(
            Spec::parse(&a(&["--relay", "x=/s", "--cwd", "/", "--", "x"])).is_err_and(|e| e.contains("PORT=SOCKET"))
        );
        assert!(Spec::parse(&a(&["--bogus"])).is_err_and(|e| e.contains("unknown argument")));
        assert_eq!(main(&a(&["--cwd", "/"])), SETUP_FAILED);
    }

    #[test]
    fn mountinfo_escapes_are_read_back() {
        assert_eq!(unescape(r"/a\040b\134c"), OsString::from("/a b\\c"));
        assert_eq!(unescape(r"/x\04"), OsString::from(r"/x\04"));
    }
}
