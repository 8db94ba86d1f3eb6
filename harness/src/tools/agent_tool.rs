//! The Agent (Task) tool (AGENT-1): a nested agent loop with its own conversation.

/// Sub-agents of the session.
#[derive(Debug, Default)]
pub struct Agents {}
