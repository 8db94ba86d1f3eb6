//! The lab's policy of confinement: every subject runs confined ([`probelab_runtime::confine`], the
//! one bubblewrap wrapper: the host read-only, only the probe's sandbox writable, no network but the
//! stub and the probe's services) unless its probe opts out with a reason (`[subject] unconfined =
//! "why"`). The built-in subject's processes (Bash outside its own sandbox, hooks, MCP and LSP servers)
//! get it through [`probelab_runtime::builtin::SessionConfig::confine`]; the Claude Code binary is
//! started under it whole ([`crate::subject::claude_code::run`]).
//!
//! Two backends make it, with the same guarantees ([`probelab_runtime::confine::Backend`]): probelab's
//! own launcher where the kernel lets this user make namespaces (no host package), else bubblewrap;
//! `PROBELAB_CONFINE=namespaces|bwrap` picks one ([`probelab_runtime::confine::backend`]). Where
//! neither can, the probe is skipped by its `requires` ([`crate::probe::Probe::requires_on`] adds
//! `confinement`), and a run that gets here anyway refuses: a subject never runs unconfined silently.

pub use probelab_runtime::confine::{Confinement, Network, Served};
use std::path::{Path, PathBuf};

/// A run's confinement: what wraps the subject, and the lab's end of its relayed ports (kept alive for
/// the run).
#[derive(Debug)]
pub struct RunConfinement {
    /// The wrapper.
    pub confinement: Confinement,
    _served: Option<Served>,
    /// The built-in subject's session: its holder, killed with everything left in it at the run's end.
    _session: Option<probelab_runtime::confine::SessionHolder>,
    /// The run's limits (dropped last: removed once the processes are gone).
    limits: crate::limits::RunLimits,
}

impl RunConfinement {
    /// The limits the subject reached, in words ([`crate::limits::RunLimits::reached`], and a file of
    /// `sandbox` at the largest-file limit: [`crate::limits::files_at_limit`]).
    pub fn limits_reached(&self, sandbox: &Path) -> Vec<String> {
        let mut out = self.limits.reached();
        if let Some(n) = self.confinement.limits.as_ref().and_then(|l| l.max_file_bytes) {
            out.extend(crate::limits::files_at_limit(sandbox, n));
        }
        out
    }
}

/// Why a run's subject cannot be confined ([`for_run`]): the runtime's typed reasons
/// (`probelab_runtime::confine::NoBackend`, `SessionError`), whose own words from the launcher or
/// bubblewrap are kept as they wrote them.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// Neither backend can confine on this host; the probe did not opt out.
    #[error(
        "{}: the subject cannot be confined: {why}; it is not run unconfined (`[subject] unconfined = \"why\"` opts a probe out)",
        probe.display()
    )]
    Refused {
        /// The probe file.
        probe: PathBuf,
        /// The runtime's reason.
        why: probelab_runtime::confine::NoBackend,
    },
    /// The loopback ports of the stub and the services cannot be relayed into the confinement.
    #[error("cannot serve the confined subject's ports")]
    Ports(#[source] std::io::Error),
    /// The built-in subject's session could not be started.
    #[error("{}: cannot confine the subject", probe.display())]
    Session {
        /// The probe file.
        probe: PathBuf,
        /// The runtime's reason.
        #[source]
        why: probelab_runtime::confine::SessionError,
    },
}

/// The confinement of `probe`'s `subject` (`builtin`, `claude-code@V`) writing only `sandbox`, reaching the loopback `ports` (the stub,
/// the probe's services): `Ok(None)` when the probe opted out; an error when the host cannot confine.
/// `whole`: the confinement wraps the whole subject (Claude Code: its namespaces its own); else each
/// process the built-in runtime starts joins one session made for the run
/// ([`probelab_runtime::confine::Session`]: one pid, ipc, uts, network and mount namespace for all of
/// them, the lab's processes outside it).
pub async fn for_run(
    probe: &crate::probe::Probe,
    subject: &crate::subject::id::SubjectId,
    sandbox: &Path,
    ports: &[u16],
    whole: bool,
) -> Result<Option<RunConfinement>, ConfineError> {
    if probe.unconfined_on(subject).is_some() {
        return Ok(None);
    }
    let launcher = crate::probe::placeholders::probelab_binary();
    let backend = probelab_runtime::confine::backend(&launcher)
        .map_err(|why| ConfineError::Refused { probe: probe.path.clone(), why })?;
    let (network, served) = if ports.is_empty() {
        (Network::Off, None)
    } else {
        let served =
            probelab_runtime::confine::serve_ports(&sandbox.join(".net"), ports).map_err(ConfineError::Ports)?;
        (Network::Relayed(served.ports(&launcher)), Some(served))
    };
    let mut confinement = Confinement::lab(backend, sandbox, network, true);
    let set = crate::limits::Limits::of(&probe.limits);
    let limits = crate::limits::RunLimits::create(&set);
    confinement.limits = Some(probelab_runtime::confine::Limits {
        launcher: launcher.clone(),
        whole: limits.procs_files(true),
        joining: limits.procs_files(false),
        max_file_bytes: Some(set.file_bytes),
    });
    let view = host_view(probe, &launcher);
    confinement.hidden = view.hidden;
    confinement.skeleton = view.skeleton;
    confinement.visible = view.shown;
    let session = if whole {
        None
    } else {
        let holder = probelab_runtime::confine::start_session(&confinement, &launcher)
            .await
            .map_err(|why| ConfineError::Session { probe: probe.path.clone(), why })?;
        confinement.session = Some(holder.session.clone());
        Some(holder)
    };
    Ok(Some(RunConfinement { confinement, _served: served, _session: session, limits }))
}

pub use crate::host_view::{host_view_showing, project_private, HostView, HIDDEN_CREDENTIALS, HIDDEN_DIRS, HIDDEN_ETC};

/// The host as `probe`'s subject sees it, `launcher` being the probelab binary: [`HIDDEN_DIRS`] and
/// [`HIDDEN_ETC`] hidden; shown again under them (and under the host's /tmp, which the subject's own
/// /tmp covers): the install cache (Claude Code versions, agents, the
/// venv), the probelab binary's directory, the project (the directory probelab runs in, and the probe
/// file's), and the programs on PATH — a PATH directory under a home is shown with the tool it
/// belongs to (`~/.pyenv/shims` → `~/.pyenv`, `~/.cargo/bin` → `~/.cargo`, but `~/.local/bin` alone),
/// its credential files ([`HIDDEN_CREDENTIALS`]) hidden.
pub fn host_view(probe: &crate::probe::Probe, launcher: &Path) -> HostView {
    let dir = probe.path.parent().map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()));
    let also: Vec<PathBuf> = std::iter::once(crate::versions::cache_root()).chain(dir).collect();
    host_view_showing(&also, launcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_subject_needs_under_the_host_tmp_is_shown_again_never_tmp_itself() {
        // a project (and a probe file) under the host's /tmp: the subject's own /tmp would cover it
        let d = tempfile::Builder::new().tempdir_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let probes = d.path().join("probes");
        std::fs::create_dir_all(&probes).unwrap_or_else(|e| panic!("{e}"));
        let text = "id = \"t.p\"\nclaims = [\"READ-1\"]\nabout = \"x\"\n[[turn]]\ntext = \"done\"\n";
        let probe = crate::probe::parse(&probes.join("p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let launcher = d.path().join("bin/probelab");
        std::fs::create_dir_all(d.path().join("bin")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&launcher, "").unwrap_or_else(|e| panic!("{e}"));
        let view = host_view(&probe, &launcher);
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|e| panic!("{e}"));
        assert!(view.shown.contains(&canon(&probes)), "{:?}", view.shown);
        assert!(view.shown.contains(&canon(&d.path().join("bin"))), "{:?}", view.shown);
        assert!(!view.shown.iter().any(|s| s == Path::new("/tmp")), "{:?}", view.shown);
        // a probe right in /tmp shows nothing of /tmp; a binary right in /tmp is shown alone
        let loose = crate::probe::parse(Path::new("/tmp/p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let binary = tempfile::Builder::new().prefix("probelab-").tempfile_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let view = host_view(&loose, binary.path());
        assert!(!view.shown.iter().any(|s| s == Path::new("/tmp")), "{:?}", view.shown);
        assert!(view.shown.contains(&canon(binary.path())), "{:?}", view.shown);
    }
}
