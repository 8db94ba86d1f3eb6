//! What every process subject (Claude Code, a command subject) shares: its spawn goes through one
//! function ([`spawn`]: stdin closed, stdout / stderr piped, a process group of its own, killed on drop —
//! the place a confinement wrapper goes), then [`run`] waits for it until the deadline or the record's
//! cap, kills its whole tree (its group and whatever it started in sessions of its own,
//! [`probelab_runtime::process::Group`]) and collects its exit, stdout and stderr.

use super::error::ConverseError;
use std::time::Instant;

/// Spawns a subject's process: every process subject's spawn goes through here.
pub fn spawn(cmd: &mut tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd.spawn()
}

/// How a subject's process ended.
#[derive(Debug, Clone)]
pub struct Exited {
    /// Exit code (None: killed, or ended by a signal).
    pub code: Option<i32>,
    /// The signal that ended it, when it was not the lab's kill.
    pub signal: Option<i32>,
    /// Killed at the deadline.
    pub timed_out: bool,
    /// Killed because the run's record passed its cap.
    pub stopped: bool,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// When it was started.
    pub spawned: Instant,
    /// When it exited (or was killed).
    pub exited: Instant,
}

impl Exited {
    /// How the conversation of a process subject named `name` ended, and its record: the run's end
    /// (the cap, the deadline of `deadline_secs`, exit 0, another exit or a signal with the stderr's
    /// tail), the artefact (`extra` fields, then exit, signal, timed_out, stdout, stderr) and its
    /// lifetime. One reading for every subject that is a command (a project's command subject, a
    /// third-party agent).
    pub fn ended(
        self,
        name: &str,
        deadline_secs: u64,
        extra: serde_json::Map<String, serde_json::Value>,
    ) -> super::api::Ended {
        use super::api::RunEnd;
        let end = match (self.stopped, self.timed_out, self.code, self.signal) {
            (true, ..) => RunEnd::cap_passed(),
            (_, true, ..) => RunEnd::Failed(format!(
                "{name} passed the deadline of {deadline_secs}s: killed, with everything it started"
            )),
            (_, _, Some(0), _) => RunEnd::Finished,
            (_, _, Some(code), _) => {
                RunEnd::Failed(format!("{name} exited with {code}; its stderr ends:\n{}", self.stderr_tail(5)))
            }
            (_, _, None, sig) => RunEnd::Failed(format!(
                "{name} was ended by signal {}; its stderr ends:\n{}",
                sig.unwrap_or(0),
                self.stderr_tail(5)
            )),
        };
        let mut artefact = extra;
        for (k, v) in [
            ("exit", serde_json::json!(self.code)),
            ("signal", serde_json::json!(self.signal)),
            ("timed_out", serde_json::json!(self.timed_out)),
            ("stdout", serde_json::json!(self.stdout)),
            ("stderr", serde_json::json!(self.stderr)),
        ] {
            artefact.insert(k.to_string(), v);
        }
        super::api::Ended {
            end,
            within_deadline: !self.timed_out,
            artefact: Some(serde_json::Value::Object(artefact)),
            lifetime: (self.spawned, self.exited),
        }
    }

    /// The last `n` lines of stderr.
    pub fn stderr_tail(&self, n: usize) -> String {
        let lines: Vec<&str> = self.stderr.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// Spawns `cmd` ([`spawn`]) and waits for it until `until` or `stop`; then kills its tree and collects
/// its output. `what` names it in errors.
pub async fn run(
    mut cmd: tokio::process::Command,
    what: &str,
    until: Instant,
    stop: &tokio::sync::Notify,
) -> Result<Exited, ConverseError> {
    let spawned = Instant::now();
    let mut child = spawn(&mut cmd).map_err(|source| ConverseError::Spawn { what: what.to_string(), source })?;
    // the process, what it starts in its group and in sessions of its own: killed as a tree at the end,
    // while it still holds them; its group goes when this call ends anyway (also when it is dropped)
    let group = probelab_runtime::process::Group::led_by(child.id());
    type Reader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
    let read = |r: Option<Reader>| {
        tokio::spawn(async move {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                tokio::io::AsyncReadExt::read_to_end(&mut r, &mut buf).await?;
            }
            Ok::<_, std::io::Error>(String::from_utf8_lossy(&buf).into_owned())
        })
    };
    // a pipe that fails to read (or a reader that panicked) is an error of the run, not an empty output
    let collect = |r: Result<std::io::Result<String>, tokio::task::JoinError>, stream: &'static str| match r {
        Err(source) => Err(ConverseError::Reader { what: what.to_string(), stream, source }),
        Ok(r) => r.map_err(|source| ConverseError::Output { what: what.to_string(), stream, source }),
    };
    let stdout = read(child.stdout.take().map(|s| Box::new(s) as Reader));
    let stderr = read(child.stderr.take().map(|s| Box::new(s) as Reader));
    let (waited, stopped) = tokio::select! {
        w = tokio::time::timeout_at(until.into(), child.wait()) => (Some(w), false),
        _ = stop.notified() => (None, true),
    };
    let exited = Instant::now();
    let timed_out = matches!(waited, Some(Err(_)));
    if let Some(g) = &group {
        g.kill();
    }
    let status = match waited {
        Some(Ok(Ok(st))) => Some(st),
        Some(Ok(Err(source))) => return Err(ConverseError::Wait { what: what.to_string(), source }),
        _ => {
            let _ = child.start_kill();
            child.wait().await.ok()
        }
    };
    let killed = timed_out || stopped;
    let stdout = collect(stdout.await, "stdout")?;
    let stderr = collect(stderr.await, "stderr")?;
    use std::os::unix::process::ExitStatusExt;
    Ok(Exited {
        code: if killed { None } else { status.and_then(|s| s.code()) },
        signal: if killed { None } else { status.and_then(|s| s.signal()) },
        timed_out,
        stopped,
        stdout,
        stderr,
        spawned,
        exited,
    })
}
