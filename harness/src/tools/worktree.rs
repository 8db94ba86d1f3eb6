//! EnterWorktree / ExitWorktree (WT-1) on real `git worktree`.

/// Worktrees this session created.
#[derive(Debug, Default)]
pub struct Worktrees {}
