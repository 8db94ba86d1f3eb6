//! The Bash sandbox (Linux): bubblewrap confines a command to a read-only view of the system with two
//! writable directories — the project (cwd) and the session's temp root (`$TMPDIR`, else `<sandbox>/tmp`),
//! as Claude Code 2.1.235's sandbox allows `.` and `$TMPDIR` (HOME is read-only in both; `/tmp` is a
//! private tmpfs here) — its own pid namespace (nothing outlives it) and, unless the settings allow it,
//! no network. `settings.sandbox` (a subset of Claude Code's settings.json `sandbox` table):
//!
//! ```toml
//! [settings.sandbox]
//! enabled = true                    # default false: commands run outside it (the lab still confines them: crate::confine)
//! allowUnsandboxedCommands = false  # honour a call's dangerouslyDisableSandbox (default true, like the reference)
//! allowNetwork = false              # keep the host's network (default false; not a Claude Code key)
//! failIfUnavailable = true          # Claude Code only (the built-in runtime always fails, see below)
//! enableWeakerNestedSandbox = true  # Claude Code only
//! ```
//!
//! A write outside or a network attempt fails inside the command, and the result is the command's own
//! output and exit code, as on the reference (below); the violation is kept in the call's structured
//! record (`sandboxViolations`, [`Plan::violations`]). With the network off the command has its own
//! network namespace holding only a loopback interface: an outside address is unreachable, and a local
//! listener of the host (127.0.0.1:port) is refused, since nothing listens on the namespace's own
//! loopback. Where bubblewrap is missing or cannot create namespaces, the call fails with that reason:
//! the runtime never silently runs a command unconfined that was meant to be confined.
//!
//! Claude Code 2.1.235's sandbox, measured on Linux (`probes/claude-code/bash-sandbox.toml`, and runs of
//! the binary by hand for the start-up texts):
//! - It runs commands under bubblewrap too (seen from outside, with `enableWeakerNestedSandbox`:
//!   `bwrap … --unshare-net --unshare-pid --unshare-user …`), and needs `socat` beside it. With
//!   `sandbox.enabled` but a dependency missing it warns on stderr (`⚠ Sandbox disabled: sandbox is enabled but dependencies are missing: socat not
//!   installed · …` / `Commands will run WITHOUT sandboxing. …`) and runs every command unconfined; with
//!   `failIfUnavailable = true` it refuses to start (`Error: sandbox required but unavailable: …`). The
//!   built-in runtime always fails the call instead (a deliberate difference: a probe that asks for a
//!   sandbox must never get an unconfined run, and the model is told why).
//! - As root in a container without nested user namespaces every confined command fails with `Exit code
//!   1` / `apply-seccomp: write /proc/self/uid_map: Operation not permitted` (its seccomp helper; nothing
//!   ran) unless `enableWeakerNestedSandbox` is set. The reference passes such a failure through as the
//!   command's own; the built-in runtime words bubblewrap's setup failures as `Sandbox unavailable (…)`
//!   (a difference kept: the model can tell a sandbox that does not work from a command that failed).
//! - A refused write is the command's own `Read-only file system` error, a refused connection its own
//!   error (`curl: (7) … Couldn't connect to server`, `/bin/bash: connect: Network is unreachable`), with no
//!   `<sandbox_violations>` block on Linux — nor after a write into HOME, or a domain its network proxy
//!   refuses (`curl: (56) CONNECT tunnel failed, response 502`; measured by a scratch run of
//!   `probes/bash/sandbox.toml` on 2.1.235): the built-in runtime sends none either.
//! - `dangerouslyDisableSandbox: true` is honoured by default (`allowUnsandboxedCommands` unset): the
//!   command runs unconfined and its result carries no note — as here. With `allowUnsandboxedCommands =
//!   false` the command runs confined, again without a note (`probes/bash/sandbox.toml`); the built-in
//!   keeps its note in the structured record only (`sandboxNote`).
//! - Its bubblewrap unshares the net, pid and user namespaces; the built-in runtime's also the ipc and
//!   uts ones (stricter; `probes/bash/sandbox-escape.toml`).
//! - Its Bash description gains a `## Command sandbox` section (the filesystem / network restrictions as
//!   JSON, when to retry with `dangerouslyDisableSandbox`); the built-in description does not (its text
//!   lists machine paths; not copied).
//!
//! The bubblewrap binary is `bwrap` on the PATH, or the probe env's [`BWRAP_ENV`] (a path; relative to the
//! project cwd), so tests can point it at a missing file or at a stand-in that fails the way bubblewrap
//! does without user namespaces. A setup failure is told apart from the command's own output by a marker
//! file the confined script writes first: no marker, a non-zero exit and a first line starting `bwrap: `
//! mean bubblewrap never ran the command.

use crate::confine::{Confinement, Network, SessionConfinement};
use crate::context::ToolContext;
use crate::tool::ToolError;
use std::path::{Path, PathBuf};

/// Env of the probe naming the bubblewrap binary to use instead of `bwrap` on the PATH (tests).
pub const BWRAP_ENV: &str = "PROBELAB_BWRAP";

/// The shell's `$0`, as Claude Code 2.1.235 starts it: its own messages read `/bin/bash: line 1: : command
/// not found`, `/bin/bash: connect: Network is unreachable` (`probes/bash/deny-bypass-beyond-reference.toml`,
/// `probes/bash/sandbox.toml` on both subjects).
pub const SHELL_NAME: &str = "/bin/bash";

/// How one command will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// bubblewrap's confinement (`None`: unconfined): the sandbox's own, or the lab's
    /// ([`crate::confine::SessionConfinement`]) when the sandbox is off.
    confine: Option<Confinement>,
    /// The command runs in the sandbox of `settings.sandbox` (the record's `sandboxed`, its violations);
    /// false under the lab's confinement alone, which the subject does not see as a sandbox of its own.
    sandboxed: bool,
    /// A note that dangerouslyDisableSandbox was ignored (for the structured record: the reference tells
    /// the model nothing).
    pub note: Option<String>,
}

/// Decides how a call runs: the settings, the call's `dangerouslyDisableSandbox`, whether bubblewrap is
/// there, and the lab's confinement of the session (what runs outside the sandbox runs there).
pub fn plan(ctx: &ToolContext, disable: bool) -> Result<Plan, ToolError> {
    let s = &ctx.sandbox;
    let lab = ctx.session.state::<SessionConfinement>();
    let outside = || Ok(Plan { confine: lab.0.clone(), sandboxed: false, note: None });
    if !s.enabled || (disable && s.allow_unsandboxed_commands.unwrap_or(true)) {
        return outside();
    }
    // not allowed: run confined anyway and say so
    let note = disable.then(|| {
        "dangerouslyDisableSandbox was ignored: settings.sandbox.allowUnsandboxedCommands is false".to_string()
    });
    let bwrap = available(ctx)?;
    // allowNetwork keeps the network the lab allows: the host's, or only the probe's services
    let network = match (s.allow_network, &lab.0) {
        (false, _) => Network::Off,
        (true, None) => Network::Host,
        (true, Some(l)) => l.network.clone(),
    };
    // writable: the project and the session's temp root, like the reference's `allowOnly` list
    // (`.` and `$TMPDIR`); HOME and the rest of the probe's sandbox stay read-only (and visible when
    // they live under /tmp)
    // the host as the lab's confinement shows it (what it hides stays hidden, what it shows again
    // under those is shown again)
    let (hidden, skeleton, shown) =
        lab.0.as_ref().map_or_else(Default::default, |l| (l.hidden.clone(), l.skeleton.clone(), l.visible.clone()));
    let confine = Confinement {
        backend: crate::confine::Backend::Bwrap(bwrap),
        visible: shown.into_iter().chain(ctx.roots.iter().cloned()).collect(),
        writable: vec![ctx.cwd.clone(), ctx.tmp_base()],
        hidden,
        skeleton,
        network,
        nested: false,
        strict: true,
        own_pids: true,
        // started from the lab's process, not in its session: the kernel refuses a user namespace of
        // the sandbox's own under the session's for the host's root (mapping the parent's uid 0 needs
        // CAP_SETFCAP there, which the session drops), and the sandbox is the stricter of the two
        session: None,
        // the run's limits all the same (issue 41): the largest file, and the memory group a process
        // joining the session joins (its pids group is the Bash tool's guard's, as for every command)
        limits: lab
            .0
            .as_ref()
            .and_then(|l| l.limits.as_ref())
            .map(|l| crate::confine::Limits { whole: l.joining.clone(), ..l.clone() }),
    };
    Ok(Plan { confine: Some(confine), sandboxed: true, note })
}

/// The bubblewrap binary: the probe env's [`BWRAP_ENV`], else `bwrap` on the PATH.
fn available(ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    if let Some(p) = ctx.env(BWRAP_ENV).filter(|p| !p.is_empty()) {
        let path = ctx.cwd.join(p);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(ToolError::Runtime(format!(
                "Sandbox unavailable: bubblewrap (bwrap) is not installed at {} ({BWRAP_ENV}); the command did not run, and it is not run unconfined.",
                path.display()
            )))
        };
    }
    crate::confine::bwrap_on_path().ok_or_else(|| {
        ToolError::Runtime(
            "Sandbox unavailable: bubblewrap (bwrap) is not installed; the command did not run. Install the Debian package `bubblewrap`, or turn settings.sandbox.enabled off.".into(),
        )
    })
}

impl Plan {
    #[cfg(test)]
    fn unconfined() -> Plan {
        Plan { confine: None, sandboxed: false, note: None }
    }

    /// Runs under bubblewrap (the sandbox's or the lab's).
    pub fn confined(&self) -> bool {
        self.confine.is_some()
    }

    /// Runs in the sandbox of `settings.sandbox`.
    pub fn sandboxed(&self) -> bool {
        self.sandboxed
    }

    /// The process to spawn for `script` in `cwd`; unconfined, with `join` (a cgroup's `cgroup.procs`)
    /// the shell writes its pid there first and then execs `bash -c script` (same pid, already inside).
    ///
    /// The shell is named [`SHELL_NAME`] (its `$0`, which prefixes its own messages), confined or not.
    ///
    /// Its environment is the session's, as the reference's shell gets the one the lab starts it with:
    /// the lab's [`crate::confine::PASSED_ENV`] only (never its keys and tokens), HOME the session's
    /// (`~` is `<sandbox>/home`, never the host's), TMPDIR its temp root, and the probe's `[env]` on
    /// top (`probes/claude-code/tasks-partial-write.toml` runs `chattr +i ~/.claude/tasks/…` on both
    /// subjects). Confined, it is applied inside the confinement.
    pub fn command(&self, ctx: &ToolContext, cwd: &Path, script: &str, join: Option<&Path>) -> tokio::process::Command {
        let env = crate::confine::with_env(
            crate::confine::passed_env(),
            [("HOME", ctx.home.as_os_str()), ("TMPDIR", ctx.tmp_base().as_os_str())],
        );
        let env = crate::confine::with_env(env, ctx.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        self.program(cwd, script, join, &env)
    }

    fn program(
        &self,
        cwd: &Path,
        script: &str,
        join: Option<&Path>,
        env: &crate::confine::Env,
    ) -> tokio::process::Command {
        let Some(confine) = &self.confine else {
            let mut c = tokio::process::Command::new("bash");
            c.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
            match join {
                Some(procs) => c
                    .args(["-c", r#"echo $$ >| "$1" 2>/dev/null; exec -a "$3" bash -c "$2""#, "bash"])
                    .arg(procs)
                    .arg(script)
                    .arg(SHELL_NAME),
                None => c.arg0(SHELL_NAME).arg("-c").arg(script),
            };
            c.current_dir(cwd);
            return c;
        };
        let shell = ["-c", r#"exec -a "$1" bash -c "$2""#, "bash", SHELL_NAME, script];
        match join.filter(|_| !self.sandboxed) {
            // the lab's confinement: a shell joins the cgroup, then execs bubblewrap (same pid), so
            // everything inside starts in it, as unconfined
            // (a shell of the host with no environment: the subject's is applied inside)
            Some(procs) => {
                let (launcher, args) = confine.invocation("bash", shell, cwd, env);
                let mut c = tokio::process::Command::new("bash");
                c.env_clear()
                    .args(["-c", r#"echo $$ >| "$1" 2>/dev/null; shift; exec "$@""#, "bash"])
                    .arg(procs)
                    .arg(launcher)
                    .args(args);
                c
            }
            None => confine.wrap("bash", shell, cwd, env),
        }
    }

    /// The error when the process could not be started at all (confined: the bubblewrap binary).
    pub fn spawn_failure(&self, e: &std::io::Error) -> String {
        if let Some(c) = &self.confine {
            let (launcher, _) = c.invocation("bash", [""; 0], Path::new("/"), &[]);
            format!(
                "Sandbox unavailable (cannot start {}: {e}); the command did not run, and it is not run unconfined.",
                Path::new(&launcher).display()
            )
        } else {
            format!("cannot start bash: {e}")
        }
    }

    /// bubblewrap's own failure (it could not set the sandbox up): the command did not run. `started`:
    /// the confined script's first line (its marker file) ran — then the output is the command's own.
    pub fn setup_failure(&self, code: i32, output: &str, started: bool) -> Option<String> {
        let first = output.lines().next().unwrap_or_default();
        // the launcher's own words (it starts bubblewrap under the run's limits) without its name: the
        // same reason as a bubblewrap that could not be started directly (`spawn_failure`)
        let launcher = first.strip_prefix(crate::confine::ns::FAILURE_PREFIX);
        let setup = first.starts_with("bwrap: ") || launcher.is_some();
        let reason = launcher.unwrap_or(first);
        (self.confined() && !started && code != 0 && setup)
            .then(|| format!("Sandbox unavailable ({reason}); the command did not run, and it is not run unconfined."))
    }

    /// The violations the output shows, as one line for the structured record (BASH-3), not the model's text.
    pub fn violations(&self, output: &str) -> Option<String> {
        let confine = self.confine.as_ref().filter(|_| self.sandboxed)?;
        let mut v = Vec::new();
        if output.contains("Read-only file system") {
            v.push("a write outside the sandbox's writable root was refused (Read-only file system)");
        }
        if output.lines().any(privilege_refused) {
            v.push("a privileged operation was refused: the sandbox holds no capabilities (no mount, no namespace, no device)");
        }
        let net = [
            "Network is unreachable",
            "Connection refused",
            "Couldn't connect to server",
            "Could not resolve host",
            "Temporary failure in name resolution",
            "Name or service not known",
        ];
        if confine.network == Network::Off && net.iter().any(|n| output.contains(n)) {
            v.push("network access is off in the sandbox");
        }
        (!v.is_empty()).then(|| format!("<sandbox_violations>{}</sandbox_violations>", v.join("; ")))
    }
}

/// Lines by which a command's tools say a privileged operation failed, as the sandbox makes them fail:
/// `EPERM` (`unshare -m`, `mknod`, `chroot`, `nsenter`, `date -s`, `ip link add`), util-linux's
/// wordings of it (`mount`, `umount`, `hostname`), and the `ENOSPC` a nested user namespace gets
/// under `--disable-userns` (`unshare -U`).
const PRIVILEGE_REFUSALS: &[&str] = &[
    "Operation not permitted",
    "unshare failed: No space left on device",
    "must be superuser to unmount",
    "you must be root to change the host name",
];

fn privilege_refused(line: &str) -> bool {
    PRIVILEGE_REFUSALS.iter().any(|r| line.contains(r))
        || (line.starts_with("mount: ") && line.contains(": permission denied"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confined(network: bool) -> Plan {
        let confine = Confinement {
            backend: crate::confine::Backend::Bwrap(PathBuf::from("/usr/bin/bwrap")),
            visible: Vec::new(),
            writable: Vec::new(),
            hidden: Vec::new(),
            skeleton: Vec::new(),
            network: if network { Network::Host } else { Network::Off },
            nested: false,
            strict: true,
            own_pids: true,
            session: None,
            limits: None,
        };
        Plan { confine: Some(confine), sandboxed: true, note: None }
    }

    #[test]
    fn refused_privileges_are_violations() {
        let want = Some(
            "<sandbox_violations>a privileged operation was refused: the sandbox holds no capabilities (no mount, no namespace, no device)</sandbox_violations>",
        );
        for out in [
            "mount: /: permission denied.\n       dmesg(1) may have more information after failed mount system call.",
            "unshare: unshare failed: Operation not permitted",
            "unshare: unshare failed: No space left on device",
            "mknod: disk: Operation not permitted",
            "umount: /tmp: must be superuser to unmount.",
            "hostname: you must be root to change the host name",
        ] {
            assert_eq!(confined(false).violations(out).as_deref(), want, "{out}");
            assert_eq!(Plan::unconfined().violations(out), None);
        }
        assert_eq!(confined(false).violations("mount: see the manual"), None);
    }

    #[test]
    fn a_refused_local_connection_is_a_violation_only_with_the_network_off() {
        let out = "bash: connect: Connection refused\ncurl: (7) Failed to connect to 127.0.0.1 port 1: Couldn't connect to server";
        assert_eq!(
            confined(false).violations(out).as_deref(),
            Some("<sandbox_violations>network access is off in the sandbox</sandbox_violations>")
        );
        assert_eq!(confined(true).violations(out), None);
        assert_eq!(Plan::unconfined().violations(out), None);
    }

    #[test]
    fn a_setup_failure_is_bwraps_line_before_the_command_started() {
        let out = "bwrap: No permissions to create new namespace";
        assert!(confined(false).setup_failure(1, out, false).is_some());
        // the command's own output that happens to look like bwrap's
        assert_eq!(confined(false).setup_failure(1, out, true), None);
        assert_eq!(confined(false).setup_failure(0, out, false), None);
        assert_eq!(Plan::unconfined().setup_failure(1, out, false), None);
    }
}
