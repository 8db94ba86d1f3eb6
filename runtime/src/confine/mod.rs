//! Confinement of a subject's processes (the lab's, whatever the subject's own settings say): one
//! bubblewrap wrapper for every process a probe run starts on the host — the built-in runtime's Bash
//! commands, hooks and MCP / LSP servers, and the whole Claude Code binary (with everything it starts).
//! The Bash tool's own sandbox (`settings.sandbox`, [`crate::tools::bash::sandbox`]) builds its command
//! with the same [`Confinement`], stricter.
//!
//! Inside: the host read-only (`--ro-bind / /`), only the probe's sandbox directory writable (the
//! subject's install and caches stay readable, read-only, as the rest of `/`), a private `/tmp`
//! (tmpfs; the sandbox is bound over it when it lives there), a minimal `/dev`, a `/proc` of its own
//! pid namespace (read-only), its own user namespace with the caller's ids and no capability, its own
//! session, and it dies with the lab.
//!
//! Network — the decision: the confined process gets a network namespace of its own
//! (`--unshare-net`: only a loopback interface, nothing of the host reachable, no address off the
//! machine), and the loopback ports it must reach — the stub, the probe's services — are relayed:
//! inside the namespace a relay ([`relay_main`], the probelab binary's hidden `confine-relay`
//! subcommand: no host tool needed) listens on `127.0.0.1:PORT`, the same port as outside, and
//! forwards each connection to a unix socket the lab listens on ([`serve_ports`]), which connects to
//! the real `127.0.0.1:PORT`. The socket directory is bound into the namespace read-only. The relay
//! binds every port *before* it starts the subject (it is the subject's parent), so a subject never
//! finds its stub not yet there — no polling, no sleep. Any other port, on loopback or elsewhere, is
//! refused or unreachable inside. (socat, which `scripts/setup` installs, could relay as well, but it
//! cannot say when it listens.)
//!
//! Nested sandboxes: the lab's wrapper keeps nested user namespaces possible unless asked not to
//! ([`Confinement::nested`]), so a subject's own bubblewrap (Claude Code's Bash sandbox) still runs
//! inside; the bind mounts made here are locked in a nested namespace, so it cannot make them writable.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

pub mod ns;
mod relay;

pub use relay::{relay_main, RELAY_SUBCOMMAND};

/// A process's whole environment, in order (later values of a name win).
pub type Env = Vec<(OsString, OsString)>;

/// The lab's variables that reach a subject's processes (issue 41: an explicit list; the rest of the
/// lab's environment — its keys and tokens above all — never does): where programs are, the language
/// and the terminal. Each subject adds its own (HOME and TMPDIR of its sandbox, the probe's `[env]`).
pub const PASSED_ENV: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"];

/// The lab's [`PASSED_ENV`] variables that are set.
pub fn passed_env() -> Env {
    PASSED_ENV.iter().filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v))).collect()
}

/// `env` with `more` added, a name given again replacing the earlier value in place.
pub fn with_env<K, V>(mut env: Env, more: impl IntoIterator<Item = (K, V)>) -> Env
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    for (k, v) in more {
        let (k, v) = (k.as_ref().to_os_string(), v.as_ref().to_os_string());
        match env.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v,
            None => env.push((k, v)),
        }
    }
    env
}

/// How a confined process reaches the network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// The host's network (the Bash sandbox's `allowNetwork`, or a probe that opted out).
    Host,
    /// A namespace of its own with nothing but a loopback interface.
    #[default]
    Off,
    /// A namespace of its own where these loopback ports are relayed to the lab ([`Ports`]).
    Relayed(Ports),
}

/// Loopback ports relayed into a confined process's namespace ([`serve_ports`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ports {
    /// The relay (the probelab binary; run as `<relay> confine-relay PORT=SOCKET… -- ARGV…`).
    pub relay: PathBuf,
    /// The directory of the lab's sockets (bound into the namespace read-only).
    pub dir: PathBuf,
    /// Each port with its socket.
    pub sockets: Vec<(u16, PathBuf)>,
}

/// What makes the confinement: the one interface ([`Confinement`]) has two backends, with the same
/// guarantees (`harness/tests/it/confine.rs` runs its cases on each backend the machine has).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// bubblewrap, this binary.
    Bwrap(PathBuf),
    /// probelab's own launcher ([`ns`]): the kernel's namespaces made by the probelab binary given
    /// here (its `confine-ns` subcommand), no host package.
    Namespaces(PathBuf),
}

impl Backend {
    /// Its name in messages and in `PROBELAB_CONFINE`: `bwrap`, `namespaces`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Bwrap(_) => "bwrap",
            Backend::Namespaces(_) => "namespaces",
        }
    }
}

/// How one process is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// What makes it.
    pub backend: Backend,
    /// Directories visible read-only although under the private `/tmp` (the probe's sandbox, for a
    /// confinement that writes only part of it).
    pub visible: Vec<PathBuf>,
    /// The writable directories (the probe's sandbox; those that do not exist are left out).
    pub writable: Vec<PathBuf>,
    /// What of the host is hidden (issue 41: the host's homes, `/var`, `/run`, secret files of `/etc`):
    /// a directory becomes an empty read-only tmpfs, a file `/dev/null`; [`Confinement::visible`] and
    /// [`Confinement::writable`] paths under them are bound back.
    pub hidden: Vec<PathBuf>,
    /// Empty directories made inside the hidden ones, as the host has them (`/var/tmp`: a write there
    /// is refused as read-only, not as missing).
    pub skeleton: Vec<PathBuf>,
    /// The network.
    pub network: Network,
    /// Nested user namespaces allowed (a subject's own bubblewrap inside); false adds
    /// `--disable-userns` (the Bash sandbox: no namespace where a mount is allowed).
    pub nested: bool,
    /// Also unshare ipc and uts (the Bash sandbox's stricter set).
    pub strict: bool,
    /// A pid namespace of its own (and its own session; `/proc` its own, read-only): for a process
    /// that holds everything it starts (Claude Code, the Bash sandbox's command). Without it (the
    /// built-in's Bash commands, hooks and servers under the lab's confinement) pids stay the host's —
    /// a later command sees an earlier one's processes, as unconfined — `/proc` is the host's,
    /// read-only, and the process stays in the caller's process group, so the runtime's group and
    /// tree kills reach it as they reach an unconfined one.
    pub own_pids: bool,
    /// The session every process joins ([`Session`]): set, the process does not get namespaces of its
    /// own but enters the holder's (the fields above describe the holder's confinement).
    pub session: Option<Session>,
    /// The run's limits ([`Limits`]): the cgroups its launcher joins first.
    pub limits: Option<Limits>,
}

/// The `cgroup.procs` files of a run's limits, and the probelab binary that joins them (the launcher
/// itself, or a step before bubblewrap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The probelab binary.
    pub launcher: PathBuf,
    /// `cgroup.procs` files joined by a process that holds the subject (its launcher).
    pub whole: Vec<PathBuf>,
    /// Those joined by a process that joins a session (it may be in the Bash tool's guard group).
    pub joining: Vec<PathBuf>,
    /// The largest file any process of the subject may write (`RLIMIT_FSIZE`, set by its launcher and
    /// inherited by everything it starts): a write past it is refused (the writer gets `SIGXFSZ`).
    /// None: no such limit.
    pub max_file_bytes: Option<u64>,
}

/// A confined session: one set of namespaces (user, mount, pid, network, ipc, uts) made once by a
/// holder process ([`start_session`]) and joined by every process the subject starts, so that they
/// see each other as they would unconfined — a later Bash command sees an earlier one's processes —
/// and nothing of the host's: no host process is visible or can be signalled from inside, and what
/// outlives its command goes with the holder at the session's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The host pid of a process in the holder's namespaces (the namespace's init).
    pub holder: u32,
    /// The probelab binary that joins them ([`ns`]'s `--join`).
    pub launcher: PathBuf,
}

/// A running session's holder: killed (and with it every process left in its pid namespace) when
/// dropped.
#[derive(Debug)]
pub struct SessionHolder {
    /// What joins it.
    pub session: Session,
    _child: tokio::process::Child,
}

/// How long a session's holder may take to say it is ready (its confinement made) before the run
/// fails: an event waited for, with a bound.
pub const SESSION_READY_SECS: u64 = 20;

/// Why a session's holder could not be started ([`start_session`]).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The holder (the launcher, confined) could not be spawned.
    #[error("cannot start the session's holder")]
    Spawn(#[source] std::io::Error),
    /// It ended before it could be read from.
    #[error("the session's holder ended at once")]
    EndedAtOnce,
    /// It did not say `ready` within [`SESSION_READY_SECS`]; `said`: the first line of its stderr (the
    /// launcher's reason, as it wrote it).
    #[error("the session's holder did not get ready within {SESSION_READY_SECS} s: {said}")]
    NotReady {
        /// What it said.
        said: String,
    },
    /// It said ready, and no process of it is inside its namespaces.
    #[error("the session's holder has no process inside its namespaces")]
    NoProcessInside,
}

/// Starts the holder of a session confined as `c` (with `launcher`, the probelab binary, as the
/// program it holds with and the one that joins it): returns once the holder says it is ready.
pub async fn start_session(c: &Confinement, launcher: &Path) -> Result<SessionHolder, SessionError> {
    use tokio::io::AsyncBufReadExt;
    let cwd = c.writable.iter().find(|w| w.is_dir()).cloned().unwrap_or_else(|| PathBuf::from("/"));
    let mut cmd = c.wrap(launcher, [ns::HOLD_SUBCOMMAND], &cwd, &[]);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(SessionError::Spawn)?;
    let pid = child.id().ok_or(SessionError::EndedAtOnce)?;
    let stdout = child.stdout.take().ok_or(SessionError::EndedAtOnce)?;
    let mut line = String::new();
    let mut reader = tokio::io::BufReader::new(stdout);
    let read = tokio::time::timeout(std::time::Duration::from_secs(SESSION_READY_SECS), reader.read_line(&mut line));
    let ready = matches!(read.await, Ok(Ok(_))) && line == "ready\n";
    if !ready {
        let _ = child.start_kill();
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), e.read_to_string(&mut err)).await;
        }
        let said = err.lines().next().unwrap_or("it said nothing").to_string();
        return Err(SessionError::NotReady { said });
    }
    let holder = child_of(pid).ok_or(SessionError::NoProcessInside)?;
    Ok(SessionHolder { session: Session { holder, launcher: launcher.to_path_buf() }, _child: child })
}

/// A child of `pid` (from `/proc/*/stat`: the first one found).
fn child_of(pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let p: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // pid (comm) state ppid …: the comm may hold spaces and parentheses, so read after the last ')'
        let ppid: u32 = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == pid).then_some(p)
    })
}

impl Confinement {
    /// The lab's confinement of a subject whose writable directory is `sandbox` (the probe's sandbox
    /// root), with `bwrap`, `network`, and `own_pids` ([`Confinement::own_pids`]).
    pub fn lab(backend: Backend, sandbox: &Path, network: Network, own_pids: bool) -> Confinement {
        Confinement {
            backend,
            visible: Vec::new(),
            writable: vec![sandbox.to_path_buf()],
            hidden: Vec::new(),
            skeleton: Vec::new(),
            network,
            nested: true,
            strict: true,
            own_pids,
            session: None,
            limits: None,
        }
    }

    /// bubblewrap's arguments up to and including `--` (and the relay, when ports are relayed), for a
    /// process started in `cwd`.
    ///
    /// What takes every privilege from it (design: "The Bash sandbox drops every capability (user
    /// namespace, no mounts)"; BASH-3): a user namespace of its own (`--unshare-user`, the caller's uid
    /// and gid mapped to themselves), every capability dropped in it (`--cap-drop ALL`, and bubblewrap
    /// sets `no_new_privs`: no setuid binary gives them back), with [`Confinement::nested`] false no
    /// nested user namespace (`--disable-userns`, bubblewrap ≥ 0.8: `unshare -U` fails, so no namespace
    /// can be made where a mount would be allowed), its own session (`--new-session`: no `TIOCSTI` into
    /// a terminal of the host), and it dies with the lab (`--die-with-parent`). Without this, bubblewrap
    /// run by root leaves the command root with every capability: `mount -o remount,rw,bind /` succeeded
    /// and the command wrote to the host. `/proc` is mounted read-only besides (`--remount-ro /proc`): a
    /// command that is uid 0 of the host without capabilities may still write what only the owner's mode
    /// bits guard, and bubblewrap covers `/proc/sys` only when it looks writable at set-up time (it does
    /// not, from inside a user namespace: `kernel.core_pattern` was writable).
    pub fn args(&self, cwd: &Path) -> Vec<OsString> {
        self.args_running(cwd, None)
    }

    /// [`Confinement::args`] for a process that runs `program`: a program (or the relay) that lives under
    /// `/tmp` — a checkout, a cache or a build directory there — is bound back read-only over the private
    /// `/tmp`, or the namespace could not start it (`execvp …: No such file or directory`).
    fn args_running(&self, cwd: &Path, program: Option<&Path>) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |s: &[&str]| a.extend(s.iter().map(OsString::from));
        push(&["--unshare-user"]);
        if !self.nested {
            push(&["--disable-userns"]);
        }
        push(&["--cap-drop", "ALL"]);
        if self.own_pids {
            push(&["--new-session"]);
        }
        push(&["--die-with-parent"]);
        push(&["--uid", &nix::unistd::getuid().to_string(), "--gid", &nix::unistd::getgid().to_string()]);
        if self.own_pids {
            push(&["--unshare-pid"]);
        }
        if self.strict {
            push(&["--unshare-ipc", "--unshare-uts"]);
        }
        if self.network != Network::Host {
            push(&["--unshare-net"]);
        }
        push(&["--ro-bind", "/", "/", "--dev", "/dev"]);
        if self.own_pids && !self.nested {
            push(&["--proc", "/proc", "--remount-ro", "/proc"]);
        } else if self.own_pids {
            // a nested sandbox writes its uid map under /proc/self: /proc stays writable, and what a
            // process that is the host's uid 0 could write without capabilities is covered read-only
            push(&["--proc", "/proc"]);
            for p in ns::PROC_HOST_WIDE.iter().filter(|p| Path::new(p).exists()) {
                push(&["--ro-bind", p, p]);
            }
        }
        let writable: Vec<PathBuf> = self.writable.iter().filter(|w| w.is_dir()).cloned().collect();
        for step in ns::view_steps(&self.hidden, &self.visible, &writable) {
            let (how, from, to): (&str, &Path, &Path) = match step {
                ns::ViewStep::Hide(h) => match std::fs::symlink_metadata(h) {
                    Ok(m) if m.is_dir() => {
                        a.extend(["--tmpfs".into(), h.as_os_str().to_os_string()]);
                        continue;
                    }
                    Ok(m) if m.is_file() => ("--ro-bind", Path::new("/dev/null"), h),
                    _ => continue,
                },
                ns::ViewStep::Tmp => {
                    a.extend(["--tmpfs".into(), "/tmp".into()]);
                    continue;
                }
                ns::ViewStep::Show(v) => ("--ro-bind", v, v),
                ns::ViewStep::Write(w) => ("--bind", w, w),
            };
            a.extend([how.into(), from.as_os_str().to_os_string(), to.as_os_str().to_os_string()]);
        }
        for d in &self.skeleton {
            a.extend(["--dir".into(), d.clone().into_os_string()]);
        }
        let mut bind = |how: &str, p: &Path| {
            a.push(how.into());
            a.push(p.into());
            a.push(p.into());
        };
        if let Network::Relayed(p) = &self.network {
            bind("--ro-bind", &p.dir);
        }
        let relay = match &self.network {
            Network::Relayed(p) => Some(p.relay.as_path()),
            _ => None,
        };
        for exe in [relay, program].into_iter().flatten() {
            if exe.is_absolute() && exe.starts_with("/tmp") && exe.exists() {
                bind("--ro-bind", exe);
            }
        }
        for h in self.hidden.iter().filter(|h| h.is_dir()) {
            a.extend(["--remount-ro".into(), h.clone().into_os_string()]);
        }
        a.push("--chdir".into());
        a.push(cwd.into());
        a.push("--".into());
        if let Network::Relayed(p) = &self.network {
            a.push(p.relay.clone().into());
            a.push(RELAY_SUBCOMMAND.into());
            for (port, sock) in &p.sockets {
                let mut s = OsString::from(format!("{port}="));
                s.push(sock);
                a.push(s);
            }
            a.push("--".into());
        }
        a
    }

    /// `program args` started in `cwd` with exactly the environment `env`, confined: the program to
    /// start and its arguments — bubblewrap with its options then `program args`, or the probelab
    /// launcher with [`ns::Spec`]'s. The environment is an argument of the confinement, applied inside
    /// it (bubblewrap's `--clearenv --setenv`, the launcher's `--env`): the launcher itself starts with
    /// none, so nothing of it (`LD_PRELOAD` of a fixture's library) runs on the host before the
    /// confinement is made.
    pub fn invocation<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        cwd: &Path,
        env: &[(OsString, OsString)],
    ) -> (OsString, Vec<OsString>)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let program = program.as_ref();
        if let Some(session) = &self.session {
            let spec = ns::Spec {
                env: env.to_vec(),
                cwd: cwd.to_path_buf(),
                argv: std::iter::once(program.to_os_string())
                    .chain(args.into_iter().map(|x| x.as_ref().to_os_string()))
                    .collect(),
                join: Some(session.holder),
                parent: Some(std::process::id()),
                cgroups: self.limits.as_ref().map(|l| l.joining.clone()).unwrap_or_default(),
                max_file_bytes: self.limits.as_ref().and_then(|l| l.max_file_bytes),
                ..ns::Spec::default()
            };
            return ns::command_line(&session.launcher, &spec);
        }
        match &self.backend {
            Backend::Bwrap(bwrap) => {
                let mut a: Vec<OsString> = vec!["--clearenv".into()];
                for (k, v) in env {
                    a.extend([OsString::from("--setenv"), k.clone(), v.clone()]);
                }
                a.extend(self.args_running(cwd, Some(Path::new(program))));
                a.push(program.to_os_string());
                a.extend(args.into_iter().map(|x| x.as_ref().to_os_string()));
                let Some(limits) = &self.limits else { return (bwrap.clone().into_os_string(), a) };
                // the run's limits: the probelab binary joins its groups, then execs bubblewrap
                let step = ns::Spec {
                    cgroups: limits.whole.clone(),
                    max_file_bytes: limits.max_file_bytes,
                    passthrough: true,
                    parent: Some(std::process::id()),
                    cwd: cwd.to_path_buf(),
                    argv: std::iter::once(bwrap.clone().into_os_string()).chain(a).collect(),
                    ..ns::Spec::default()
                };
                ns::command_line(&limits.launcher, &step)
            }
            Backend::Namespaces(launcher) => {
                let exe = Path::new(program);
                let under_tmp =
                    (exe.is_absolute() && exe.starts_with("/tmp") && exe.exists()).then(|| exe.to_path_buf());
                let relayed = match &self.network {
                    Network::Relayed(p) => p.sockets.clone(),
                    _ => Vec::new(),
                };
                let spec = ns::Spec {
                    env: env.to_vec(),
                    hidden: self.hidden.clone(),
                    skeleton: self.skeleton.clone(),
                    visible: self.visible.iter().cloned().chain(under_tmp).collect(),
                    writable: self.writable.iter().filter(|w| w.is_dir()).cloned().collect(),
                    host_network: self.network == Network::Host,
                    relayed,
                    own_pids: self.own_pids,
                    strict: self.strict,
                    no_nested: !self.nested,
                    cwd: cwd.to_path_buf(),
                    argv: std::iter::once(program.to_os_string())
                        .chain(args.into_iter().map(|x| x.as_ref().to_os_string()))
                        .collect(),
                    join: None,
                    parent: Some(std::process::id()),
                    cgroups: self.limits.as_ref().map(|l| l.whole.clone()).unwrap_or_default(),
                    max_file_bytes: self.limits.as_ref().and_then(|l| l.max_file_bytes),
                    passthrough: false,
                    init: false,
                };
                ns::command_line(launcher, &spec)
            }
        }
    }

    /// `program args` started in `cwd` with exactly the environment `env`, confined
    /// ([`Confinement::invocation`]): the command to spawn (argv0 `bwrap` under bubblewrap), with an
    /// empty environment of its own. The caller adds stdio; an environment it adds would reach the
    /// launcher on the host, not the subject.
    pub fn wrap<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        cwd: &Path,
        env: &[(OsString, OsString)],
    ) -> tokio::process::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (launcher, a) = self.invocation(program, args, cwd, env);
        let mut c = tokio::process::Command::new(&launcher);
        c.env_clear();
        if matches!(self.backend, Backend::Bwrap(_)) && self.session.is_none() {
            c.arg0("bwrap");
        }
        c.args(a).current_dir(cwd);
        c
    }
}

/// The lab's confinement in a session (the built-in runtime: its Bash commands, hooks, MCP and LSP
/// servers); `None`, the default, starts them unconfined (the runtime's own tests, a probe that
/// opted out).
#[derive(Debug, Clone, Default)]
pub struct SessionConfinement(pub Option<Confinement>);

/// The environment variable that picks the backend: `namespaces`, `bwrap`, or `auto` (the default).
pub const BACKEND_ENV: &str = "PROBELAB_CONFINE";

/// Why no backend confines a subject on this host ([`backend`]), in words a skipped probe can print
/// on one line: each backend's reason ([`ns::Refused`], [`BwrapRefused`]) is part of the message, as
/// `auto` has two of them (neither is a `source`). What a backend said itself (the kernel's refusal
/// through the launcher, bubblewrap's stderr) is kept as it said it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoBackend {
    /// `PROBELAB_CONFINE=namespaces`, and the kernel refuses this user its namespaces.
    #[error("{BACKEND_ENV}=namespaces, and this host refuses: {0}")]
    Namespaces(ns::Refused),
    /// `PROBELAB_CONFINE=bwrap`, and bubblewrap is missing or cannot confine.
    #[error("{BACKEND_ENV}=bwrap, and {0}")]
    Bwrap(BwrapRefused),
    /// `auto`: neither can.
    #[error("neither the kernel's namespaces ({namespaces}) nor bubblewrap ({bwrap}) can confine a subject here")]
    Neither {
        /// Why the namespaces cannot.
        namespaces: ns::Refused,
        /// Why bubblewrap cannot.
        bwrap: BwrapRefused,
    },
    /// `PROBELAB_CONFINE` names no backend.
    #[error("{BACKEND_ENV}={0:?} is not a backend: write namespaces, bwrap or auto")]
    NotABackend(String),
}

/// Why bubblewrap cannot confine here ([`bwrap_check`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BwrapRefused {
    /// No `bwrap` on PATH.
    #[error("bubblewrap (bwrap) is not on PATH")]
    NotOnPath,
    /// It is there but could not be started.
    #[error("{} does not run: {error}", bwrap.display())]
    DoesNotRun {
        /// The program found on PATH.
        bwrap: PathBuf,
        /// Why it could not be started.
        error: std::sync::Arc<std::io::Error>,
    },
    /// It ran and failed to make the namespaces (a host that restricts them to packaged profiles).
    #[error("{} cannot make namespaces: {said}", bwrap.display())]
    CannotConfine {
        /// The program found on PATH.
        bwrap: PathBuf,
        /// The first line of its stderr, as it said it.
        said: String,
    },
}

/// The backend this host confines with ([`BACKEND_ENV`]); `launcher` is the probelab binary.
///
/// The decision (issue 39): `auto` takes probelab's own namespaces ([`ns`]) where the kernel lets this
/// user make them — no host package, the same on every machine — and bubblewrap where it does not but
/// a working `bwrap` is on PATH (a host that restricts unprivileged user namespaces while allowing its
/// packaged bubblewrap, as Ubuntu 24.04's AppArmor does). `namespaces` and `bwrap` take only that one.
/// `Err`: why neither confines here, in words a skipped probe can print. Each answer is checked for
/// real (the launcher or bubblewrap confines `true` once) and cached per process and choice.
pub fn backend(launcher: &Path) -> Result<Backend, NoBackend> {
    backend_chosen(&std::env::var(BACKEND_ENV).unwrap_or_default(), launcher)
}

/// [`backend`] for the choice `choice` (`namespaces`, `bwrap`, `auto` or empty) rather than the
/// environment's: the tests that run every backend the machine has.
pub fn backend_chosen(choice: &str, launcher: &Path) -> Result<Backend, NoBackend> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Answers = HashMap<(String, PathBuf), Result<Backend, NoBackend>>;
    static SEEN: OnceLock<Mutex<Answers>> = OnceLock::new();
    let choice = choice.to_string();
    let key = (choice.clone(), launcher.to_path_buf());
    let seen = SEEN.get_or_init(Mutex::default);
    if let Some(known) = seen.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return known;
    }
    let namespaces = || ns::check(launcher).map(|()| Backend::Namespaces(launcher.to_path_buf()));
    let answer = match choice.as_str() {
        "namespaces" => namespaces().map_err(NoBackend::Namespaces),
        "bwrap" => bwrap_check().map(Backend::Bwrap).map_err(NoBackend::Bwrap),
        "" | "auto" => namespaces().or_else(|namespaces| {
            bwrap_check().map(Backend::Bwrap).map_err(|bwrap| NoBackend::Neither { namespaces, bwrap })
        }),
        other => Err(NoBackend::NotABackend(other.to_string())),
    };
    if let Ok(mut m) = seen.lock() {
        m.insert(key, answer.clone());
    }
    answer
}

/// A bubblewrap on PATH that makes the lab's namespaces (it confines `true` once).
fn bwrap_check() -> Result<PathBuf, BwrapRefused> {
    let bwrap = bwrap_on_path().ok_or(BwrapRefused::NotOnPath)?;
    let out = std::process::Command::new(&bwrap)
        .args(["--unshare-user", "--die-with-parent", "--unshare-pid", "--unshare-net"])
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"])
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => Ok(bwrap),
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("").trim().to_string();
            Err(BwrapRefused::CannotConfine { bwrap, said })
        }
        Err(e) => Err(BwrapRefused::DoesNotRun { bwrap, error: std::sync::Arc::new(e) }),
    }
}

/// `bwrap` on the PATH.
pub fn bwrap_on_path() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("bwrap")).find(|b| b.is_file()))
}

/// The lab's end of relayed ports: one unix socket per port in a directory of its own, each
/// connection forwarded to `127.0.0.1:PORT`. Dropping it stops the listeners and removes the
/// directory.
#[derive(Debug)]
pub struct Served {
    dir: PathBuf,
    sockets: Vec<(u16, PathBuf)>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Served {
    /// The ports as a confined process reaches them through `relay`.
    pub fn ports(&self, relay: &Path) -> Ports {
        Ports { relay: relay.to_path_buf(), dir: self.dir.clone(), sockets: self.sockets.clone() }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Listens for `ports` (loopback ports of the lab's services) on unix sockets in `dir`, created (in the
/// probe's sandbox: it goes with it; a socket's path must stay under 108 bytes).
pub fn serve_ports(dir: &Path, ports: &[u16]) -> std::io::Result<Served> {
    std::fs::create_dir_all(dir)?;
    let mut served = Served { dir: dir.to_path_buf(), sockets: Vec::new(), tasks: Vec::new() };
    for &port in ports {
        let path = dir.join(format!("{port}.sock"));
        let listener = tokio::net::UnixListener::bind(&path)?;
        served.sockets.push((port, path));
        served.tasks.push(tokio::spawn(async move {
            while let Ok((mut inner, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut outer) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inner, &mut outer).await;
                    }
                });
            }
        }));
    }
    Ok(served)
}

/// `program args` started in `cwd` with exactly the environment `env`: under `confine` when there is
/// one ([`Confinement::wrap`]: the environment applied inside), else as is. The caller adds stdio.
pub fn command<I, S>(
    confine: Option<&Confinement>,
    program: impl AsRef<OsStr>,
    args: I,
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> tokio::process::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut c = match confine {
        Some(c) => c.wrap(program, args, cwd, env),
        None => {
            let mut c = tokio::process::Command::new(program);
            c.args(args).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
            c
        }
    };
    c.current_dir(cwd);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_whose_holder_cannot_start_or_get_ready_says_which() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let missing = Path::new("/nonexistent/probelab");
        let c = Confinement::lab(Backend::Namespaces(missing.into()), dir.path(), Network::Off, true);
        match start_session(&c, missing).await {
            Err(SessionError::Spawn(e)) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
            other => panic!("{:?}", other.map(|_| ())),
        }
        // a launcher that refuses at once: not ready, with its own words
        let launcher = dir.path().join("probelab");
        std::fs::write(&launcher, "#!/bin/sh\necho 'probelab confine-ns: unshare: EPERM' >&2\nexit 1\n")
            .unwrap_or_else(|e| panic!("{e}"));
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
        let c = Confinement::lab(Backend::Namespaces(launcher.clone()), dir.path(), Network::Off, true);
        match start_session(&c, &launcher).await {
            Err(SessionError::NotReady { said }) => assert_eq!(said, "probelab confine-ns: unshare: EPERM"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn why_no_backend_confines_is_one_line_holding_each_backend_s_reason() {
        let neither = NoBackend::Neither {
            namespaces: ns::Refused::Said { said: "unshare: EPERM".into() },
            bwrap: BwrapRefused::CannotConfine { bwrap: "/usr/bin/bwrap".into(), said: "setting up uid map".into() },
        };
        assert_eq!(
            neither.to_string(),
            "neither the kernel's namespaces (unshare: EPERM) nor bubblewrap (/usr/bin/bwrap cannot make \
             namespaces: setting up uid map) can confine a subject here"
        );
        assert!(std::error::Error::source(&neither).is_none(), "two reasons, neither a source");
        assert_eq!(
            NoBackend::Bwrap(BwrapRefused::NotOnPath).to_string(),
            "PROBELAB_CONFINE=bwrap, and bubblewrap (bwrap) is not on PATH"
        );
        match backend_chosen("bogus", Path::new("/nonexistent/probelab")) {
            Err(NoBackend::NotABackend(c)) => assert_eq!(c, "bogus"),
            other => panic!("{other:?}"),
        }
        match backend_chosen("namespaces", Path::new("/nonexistent/probelab")) {
            Err(NoBackend::Namespaces(ns::Refused::Start { .. })) => {}
            other => panic!("{other:?}"),
        }
    }

    use ns::{view_steps, ViewStep};

    #[test]
    fn a_visible_path_inside_another_is_not_bound_twice() {
        let p = |s: &str| PathBuf::from(s);
        let visible = [p("/tmp/lab/probes"), p("/tmp/lab"), p("/opt/x"), p("/tmp/lab"), p("/tmp/labx")];
        let got = view_steps(&[], &visible, &[]);
        use ViewStep::*;
        // one depth: the private /tmp first, then the shown paths in the order given
        let want = [Tmp, Show(Path::new("/tmp/lab")), Show(Path::new("/opt/x")), Show(Path::new("/tmp/labx"))];
        assert_eq!(got, want);
    }

    #[test]
    fn each_path_is_made_after_every_path_it_lies_under() {
        // the order that makes a hidden file inside a shown directory stay hidden, and a directory
        // shown inside a hidden one visible: by depth, whatever order they were given in
        let p = |s: &str| PathBuf::from(s);
        let hidden = [p("/tmp/proj/target"), p("/root/.cargo/credentials.toml"), p("/root")];
        let visible = [p("/tmp/proj/target/debug"), p("/root/.cargo"), p("/tmp/proj"), p("/tmp/proj/src")];
        let writable = [p("/tmp/probelab-1")];
        use ViewStep::*;
        let got = view_steps(&hidden, &visible, &writable);
        let want = [
            Hide(Path::new("/root")),
            Tmp,
            Show(Path::new("/root/.cargo")),
            Show(Path::new("/tmp/proj")),
            Write(Path::new("/tmp/probelab-1")),
            Hide(Path::new("/tmp/proj/target")),
            Hide(Path::new("/root/.cargo/credentials.toml")),
            Show(Path::new("/tmp/proj/target/debug")),
        ];
        assert_eq!(got, want, "/tmp/proj/src adds nothing to /tmp/proj; target/debug, under a hidden path, does");
    }

    fn args(c: &Confinement) -> Vec<String> {
        c.args(Path::new("/sb/work")).iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn a_relay_or_program_under_tmp_is_bound_back_over_the_private_tmp() {
        let d = tempfile::Builder::new().prefix("confine-exe-").tempdir_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let exe = d.path().join("probelab");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        let ports = Ports { relay: exe.clone(), dir: d.path().join(".net"), sockets: Vec::new() };
        let c = Confinement::lab(Backend::Bwrap("/usr/bin/bwrap".into()), d.path(), Network::Relayed(ports), true);
        let a: Vec<String> = c.args(Path::new("/")).iter().map(|x| x.to_string_lossy().into_owned()).collect();
        let e = exe.to_string_lossy().into_owned();
        let bound = a.windows(3).position(|w| w[0] == "--ro-bind" && w[1] == e && w[2] == e);
        let tmpfs = a.windows(2).position(|w| w[0] == "--tmpfs" && w[1] == "/tmp");
        assert!(bound.is_some() && bound > tmpfs, "the relay under /tmp is bound after the private /tmp: {a:?}");
        let prog = d.path().join("agent");
        std::fs::write(&prog, "").unwrap_or_else(|e| panic!("{e}"));
        let a: Vec<String> =
            c.args_running(Path::new("/"), Some(&prog)).iter().map(|x| x.to_string_lossy().into_owned()).collect();
        let p = prog.to_string_lossy().into_owned();
        assert!(a.windows(3).any(|w| w[0] == "--ro-bind" && w[1] == p), "{a:?}");
        // elsewhere nothing is added: the host is bound read-only as a whole
        let a: Vec<String> = c
            .args_running(Path::new("/"), Some(Path::new("/usr/bin/env")))
            .iter()
            .map(|x| x.to_string_lossy().into_owned())
            .collect();
        assert!(!a.iter().any(|x| x == "/usr/bin/env"), "{a:?}");
    }

    #[test]
    fn the_lab_writes_only_the_sandbox_and_relays_only_its_ports() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let sb = dir.path();
        let ports = Ports {
            relay: "/bin/probelab".into(),
            dir: sb.join(".net"),
            sockets: vec![(4242, sb.join(".net/4242.sock"))],
        };
        let c = Confinement::lab(Backend::Bwrap("/usr/bin/bwrap".into()), sb, Network::Relayed(ports), false);
        let a = args(&c);
        let s = sb.display().to_string();
        let pos = |x: &str| a.iter().position(|y| y == x).unwrap_or_else(|| panic!("no {x} in {a:?}"));
        // the host read-only, then the sandbox writable over it, the sockets read-only over that
        assert!(pos("--ro-bind") < pos("--bind"));
        assert_eq!(a.iter().filter(|x| x.as_str() == "--bind").count(), 1);
        assert_eq!(a[pos("--bind") + 1], s);
        assert!(a.windows(3).any(|w| w[0] == "--ro-bind" && w[1] == format!("{s}/.net")));
        assert!(a.contains(&"--unshare-net".to_string()) && a.contains(&"--unshare-user".to_string()));
        assert!(a.contains(&"--cap-drop".to_string()));
        // the built-in's processes keep the host's pids (and the caller's group); nested sandboxes allowed
        assert!(!a.contains(&"--unshare-pid".to_string()) && !a.contains(&"--new-session".to_string()));
        assert!(!a.contains(&"--disable-userns".to_string()));
        let tail: Vec<&str> = a[pos("--") + 1..].iter().map(String::as_str).collect();
        assert_eq!(tail[..2], ["/bin/probelab", RELAY_SUBCOMMAND]);
        assert_eq!(tail[2], format!("4242={s}/.net/4242.sock"));
        assert_eq!(tail[3], "--");
        // a whole subject: its own pids and session, /proc writable but what acts on the host covered
        let whole = args(&Confinement { own_pids: true, network: Network::Off, ..c });
        assert!(whole.contains(&"--unshare-pid".to_string()) && whole.contains(&"--new-session".to_string()));
        assert!(whole.windows(2).any(|w| w[0] == "--ro-bind" && w[1] == "/proc/sys"));
        assert!(!whole.contains(&"--remount-ro".to_string()));
        assert_eq!(whole.last().map(String::as_str), Some("--"));
    }

    #[test]
    fn the_namespaces_backend_is_given_what_bubblewrap_is() {
        let d = tempfile::Builder::new().prefix("confine-ns-").tempdir_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let exe = d.path().join("agent");
        std::fs::write(&exe, "").unwrap_or_else(|e| panic!("{e}"));
        let ports = Ports {
            relay: "/bin/probelab".into(),
            dir: d.path().join(".net"),
            sockets: vec![(4242, d.path().join(".net/4242.sock"))],
        };
        let mut c =
            Confinement::lab(Backend::Namespaces("/bin/probelab".into()), d.path(), Network::Relayed(ports), true);
        c.writable.push(d.path().join("missing"));
        let env: Env = vec![("LD_PRELOAD".into(), "/x.so".into()), ("A".into(), "b=c".into())];
        let (launcher, args) = c.invocation(&exe, ["--flag"], Path::new("/w"), &env);
        assert_eq!(launcher, OsString::from("/bin/probelab"));
        assert_eq!(args[0], OsString::from(ns::SUBCOMMAND));
        let spec = ns::Spec::parse(&args[1..]).unwrap_or_else(|e| panic!("{e}"));
        // the program under /tmp shown, only existing writable directories, the relayed ports, own pids
        assert_eq!(spec.visible, vec![exe.clone()]);
        assert_eq!(spec.writable, vec![d.path().to_path_buf()]);
        assert_eq!(spec.relayed, vec![(4242, d.path().join(".net/4242.sock"))]);
        assert!(spec.own_pids && !spec.host_network && spec.strict && !spec.no_nested);
        assert_eq!(spec.argv, vec![exe.clone().into_os_string(), OsString::from("--flag")]);
        assert_eq!(spec.cwd, Path::new("/w"));
        // the environment is the launcher's argument, applied inside: the launcher starts with none
        assert_eq!(spec.env, env);
        assert!(c.wrap(&exe, ["--flag"], Path::new("/w"), &env).as_std().get_envs().next().is_none());
        let bwrap = Confinement { backend: Backend::Bwrap("/usr/bin/bwrap".into()), ..c.clone() };
        let (_, a) = bwrap.invocation("bash", ["-c", "x"], Path::new("/"), &env);
        let a: Vec<String> = a.iter().map(|x| x.to_string_lossy().into_owned()).collect();
        assert_eq!(a[..4], ["--clearenv", "--setenv", "LD_PRELOAD", "/x.so"]);
        let host = Confinement { network: Network::Host, own_pids: false, nested: false, ..c.clone() };
        let (_, args) = host.invocation("bash", ["-c", "x"], Path::new("/"), &[]);
        let spec = ns::Spec::parse(&args[1..]).unwrap_or_else(|e| panic!("{e}"));
        assert!(spec.host_network && spec.relayed.is_empty() && !spec.own_pids && spec.no_nested);
        // in a session, whatever the backend: the launcher joins the holder's namespaces, nothing else
        for backend in [Backend::Bwrap("/usr/bin/bwrap".into()), Backend::Namespaces("/x".into())] {
            let session = Session { holder: 4321, launcher: "/bin/probelab".into() };
            let joined = Confinement { backend, session: Some(session), ..c.clone() };
            let (launcher, args) = joined.invocation("bash", ["-c", "x"], Path::new("/w"), &env);
            assert_eq!(launcher, OsString::from("/bin/probelab"));
            let spec = ns::Spec::parse(&args[1..]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.join, Some(4321));
            assert!(spec.visible.is_empty() && spec.writable.is_empty() && spec.relayed.is_empty());
            assert_eq!(spec.env, env);
            assert_eq!(spec.argv, ["bash", "-c", "x"].map(OsString::from).to_vec());
        }
    }

    #[test]
    fn the_relay_refuses_a_bad_command_line() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(relay_main(&a(&["1=/x"])), 2);
        assert_eq!(relay_main(&a(&["x=/x", "--", "true"])), 2);
        assert_eq!(relay_main(&a(&["1=/x", "--"])), 2);
    }
}
