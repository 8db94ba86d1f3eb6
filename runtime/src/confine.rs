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

/// What of `/proc` acts on the whole host (sysctls, the SysRq trigger, IRQ affinities, bus devices)
/// and is guarded by its owner's mode bits alone: bound read-only over a writable `/proc`.
const PROC_HOST_WIDE: &[&str] = &["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"];

/// The probelab subcommand that is the relay ([`relay_main`]).
pub const RELAY_SUBCOMMAND: &str = "confine-relay";

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

/// How one process is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// The bubblewrap binary.
    pub bwrap: PathBuf,
    /// Directories visible read-only although under the private `/tmp` (the probe's sandbox, for a
    /// confinement that writes only part of it).
    pub visible: Vec<PathBuf>,
    /// The writable directories (the probe's sandbox; those that do not exist are left out).
    pub writable: Vec<PathBuf>,
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
}

impl Confinement {
    /// The lab's confinement of a subject whose writable directory is `sandbox` (the probe's sandbox
    /// root), with `bwrap`, `network`, and `own_pids` ([`Confinement::own_pids`]).
    pub fn lab(bwrap: PathBuf, sandbox: &Path, network: Network, own_pids: bool) -> Confinement {
        Confinement {
            bwrap,
            visible: Vec::new(),
            writable: vec![sandbox.to_path_buf()],
            network,
            nested: true,
            strict: false,
            own_pids,
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
            for p in PROC_HOST_WIDE.iter().filter(|p| Path::new(p).exists()) {
                push(&["--ro-bind", p, p]);
            }
        }
        push(&["--tmpfs", "/tmp"]);
        let mut bind = |how: &str, p: &Path| {
            a.push(how.into());
            a.push(p.into());
            a.push(p.into());
        };
        for v in &self.visible {
            bind("--ro-bind", v);
        }
        for w in self.writable.iter().filter(|w| w.is_dir()) {
            bind("--bind", w);
        }
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

    /// `program args` started in `cwd`, confined: the command to spawn (bubblewrap with `program` as
    /// its command, argv0 `bwrap`). The caller adds the environment and stdio (bubblewrap passes its
    /// environment on).
    pub fn wrap<I, S>(&self, program: impl AsRef<OsStr>, args: I, cwd: &Path) -> tokio::process::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = tokio::process::Command::new(&self.bwrap);
        let confined = self.args_running(cwd, Some(Path::new(program.as_ref())));
        c.arg0("bwrap").args(confined).arg(program).args(args).current_dir(cwd);
        c
    }
}

/// The lab's confinement in a session (the built-in runtime: its Bash commands, hooks, MCP and LSP
/// servers); `None`, the default, starts them unconfined (the runtime's own tests, a probe that
/// opted out).
#[derive(Debug, Clone, Default)]
pub struct SessionConfinement(pub Option<Confinement>);

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

/// The relay inside a confined process's namespace: `PORT=SOCKET… -- ARGV…`. Binds `127.0.0.1:PORT`
/// for each, starts ARGV (its stdio, env and cwd inherited), forwards every connection to its socket,
/// and exits with ARGV's status (128 + the signal that ended it). Returns the exit code.
pub fn relay_main(args: &[OsString]) -> i32 {
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("probelab confine-relay: usage: PORT=SOCKET... -- ARGV...");
        return 2;
    };
    let (pairs, argv) = (&args[..split], &args[split + 1..]);
    let Some((program, rest)) = argv.split_first() else {
        eprintln!("probelab confine-relay: no command after --");
        return 2;
    };
    for pair in pairs {
        let s = pair.to_string_lossy();
        let Some((port, sock)) = s.split_once('=').and_then(|(p, s)| Some((p.parse::<u16>().ok()?, s.to_string())))
        else {
            eprintln!("probelab confine-relay: {s:?} is not PORT=SOCKET");
            return 2;
        };
        let listener = match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("probelab confine-relay: cannot listen on 127.0.0.1:{port}: {e}");
                return 2;
            }
        };
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let sock = sock.clone();
                std::thread::spawn(move || forward(conn, &sock));
            }
        });
    }
    let status = match std::process::Command::new(program).args(rest).status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("probelab confine-relay: cannot start {}: {e}", program.to_string_lossy());
            return 127;
        }
    };
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

fn forward(conn: std::net::TcpStream, sock: &str) {
    let Ok(out) = std::os::unix::net::UnixStream::connect(sock) else { return };
    let (Ok(mut conn2), Ok(mut out2)) = (conn.try_clone(), out.try_clone()) else { return };
    let up = std::thread::spawn(move || {
        let mut conn = conn;
        let mut out = out;
        let _ = std::io::copy(&mut conn, &mut out);
        let _ = out.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut out2, &mut conn2);
    let _ = conn2.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
}

/// `program args` started in `cwd`: under `confine` when there is one ([`Confinement::wrap`]), else as
/// is. The caller adds the environment and stdio.
pub fn command<I, S>(
    confine: Option<&Confinement>,
    program: impl AsRef<OsStr>,
    args: I,
    cwd: &Path,
) -> tokio::process::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut c = match confine {
        Some(c) => c.wrap(program, args, cwd),
        None => {
            let mut c = tokio::process::Command::new(program);
            c.args(args);
            c
        }
    };
    c.current_dir(cwd);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(c: &Confinement) -> Vec<String> {
        c.args(Path::new("/sb/work")).iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn a_relay_or_program_under_tmp_is_bound_back_over_the_private_tmp() {
        let d = tempfile::Builder::new().prefix("confine-exe-").tempdir_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let exe = d.path().join("probelab");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        let ports = Ports { relay: exe.clone(), dir: d.path().join(".net"), sockets: Vec::new() };
        let c = Confinement::lab("/usr/bin/bwrap".into(), d.path(), Network::Relayed(ports), true);
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
        let c = Confinement::lab("/usr/bin/bwrap".into(), sb, Network::Relayed(ports), false);
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
    fn the_relay_refuses_a_bad_command_line() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(relay_main(&a(&["1=/x"])), 2);
        assert_eq!(relay_main(&a(&["x=/x", "--", "true"])), 2);
        assert_eq!(relay_main(&a(&["1=/x", "--"])), 2);
    }
}
