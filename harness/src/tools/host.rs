//! The host's scripted side of a session (`[host]` in a probe): answers to AskUserQuestion, approval
//! of a plan. Nobody is there to click; a probe says what the host does.

use serde::Deserialize;

/// `[host]` of a probe.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostScript {}
