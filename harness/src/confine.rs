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
use std::path::Path;

/// A run's confinement: what wraps the subject, and the lab's end of its relayed ports (kept alive for
/// the run).
#[derive(Debug)]
pub struct RunConfinement {
    /// The wrapper.
    pub confinement: Confinement,
    _served: Option<Served>,
    /// The built-in subject's session: its holder, killed with everything left in it at the run's end.
    _session: Option<probelab_runtime::confine::SessionHolder>,
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
) -> Result<Option<RunConfinement>, String> {
    if probe.unconfined_on(subject).is_some() {
        return Ok(None);
    }
    let launcher = crate::probe::placeholders::probelab_binary();
    let backend = probelab_runtime::confine::backend(&launcher).map_err(|why| {
        format!(
            "{}: the subject cannot be confined: {why}; it is not run unconfined (`[subject] unconfined = \"why\"` opts a probe out)",
            probe.path.display()
        )
    })?;
    let (network, served) = if ports.is_empty() {
        (Network::Off, None)
    } else {
        let served = probelab_runtime::confine::serve_ports(&sandbox.join(".net"), ports)
            .map_err(|e| format!("cannot serve the confined subject's ports: {e}"))?;
        (Network::Relayed(served.ports(&launcher)), Some(served))
    };
    let mut confinement = Confinement::lab(backend, sandbox, network, true);
    let session = if whole {
        None
    } else {
        let holder = probelab_runtime::confine::start_session(&confinement, &launcher)
            .await
            .map_err(|e| format!("{}: cannot confine the subject: {e}", probe.path.display()))?;
        confinement.session = Some(holder.session.clone());
        Some(holder)
    };
    Ok(Some(RunConfinement { confinement, _served: served, _session: session }))
}
