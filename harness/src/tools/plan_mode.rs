//! EnterPlanMode / ExitPlanMode (PLAN-1) and the session's permission mode.

/// The session's permission mode.
#[derive(Debug, Default)]
pub struct ModeState {}
