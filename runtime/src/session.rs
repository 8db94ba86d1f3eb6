//! The session: what lives outside the conversation and outside any one call — the settings, how the
//! host answers asks, the session's model ([`Model`]), the root the permission rules are anchored at,
//! the texts waiting for the next request ([`Followups`]), and each tool's own state, attached by type
//! ([`Session::state`]). The core names no tool: a tool module defines its state type, the composition
//! root ([`crate::builtin`]) puts configured values in at the start, and a tool takes its state with
//! `ctx.session.state::<T>()` (a default value when nobody put one in).

use crate::model::Model;
use crate::permissions::{RuleError, Rules};
use crate::settings::{AskAnswer, Settings};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// The session's state.
#[derive(Default)]
pub struct Session {
    /// The session's settings (hooks of other events than PreToolUse, permissions for nested runtimes).
    pub settings: Settings,
    /// How the host answers permission asks.
    pub ask_answer: AskAnswer,
    /// The session's Messages API (`None` in unit tests).
    pub model: Option<Arc<dyn Model>>,
    /// Texts for the next request after a call's result: a skill's body, `Tool loaded.` (SKILL-1, TS-1).
    pub followups: Followups,
    /// The permission rules of `settings.permissions`, parsed once for the session: the pipeline's
    /// decisions and the tools' own (a search's deny-rule skip, Read's auto-allow, apply_patch, artifacts).
    rules: Rules,
    /// The project root the rules are anchored at when it is not the cwd: the active worktree (WT-1).
    active_root: RwLock<Option<PathBuf>>,
    state: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("settings", &self.settings).field("ask_answer", &self.ask_answer).finish()
    }
}

impl Session {
    /// A session with these settings and this ask answer; fails when the settings' permission rules do
    /// not parse (the session does not start).
    pub fn new(settings: Settings, ask_answer: AskAnswer, model: Option<Arc<dyn Model>>) -> Result<Session, RuleError> {
        let rules = Rules::from_settings(&settings.permissions)?;
        Ok(Session { settings, ask_answer, model, rules, ..Session::default() })
    }

    /// The session's permission rules (parsed from `settings.permissions` by [`Session::new`]).
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The state of type `T`: the value put in with [`Session::put`], else a default one (kept from then on).
    pub fn state<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut map = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = map.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(T::default()));
        match entry.clone().downcast::<T>() {
            Ok(v) => v,
            // unreachable: the map is keyed by the value's own type
            Err(_) => Arc::new(T::default()),
        }
    }

    /// Puts a configured value of type `T` in (the composition root, at the start); returns the session.
    pub fn put<T: Any + Send + Sync>(self, value: T) -> Session {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// Shares an existing value of type `T` with this session (a parent's host script with its child).
    pub fn share<T: Any + Send + Sync>(self, value: Arc<T>) -> Session {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).insert(TypeId::of::<T>(), value);
        self
    }

    /// The active project root when it is not the session's cwd (an entered worktree).
    pub fn active_root(&self) -> Option<PathBuf> {
        self.active_root.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Moves the project root (EnterWorktree), or back to the cwd (`None`: ExitWorktree).
    pub fn set_active_root(&self, root: Option<PathBuf>) {
        *self.active_root.write().unwrap_or_else(PoisonError::into_inner) = root;
    }
}

/// Content a call leaves for the next request, after the turn's results, keyed by the call's id; the
/// agent loop takes that of the calls its last message answered (SKILL-1's body after "Launching
/// skill", TS-1's `Tool loaded.`, a PDF Read's document, a paged Read's note).
#[derive(Debug, Default)]
pub struct Followups(Mutex<Vec<(String, serde_json::Value)>>);

impl Followups {
    /// Leaves `text` (a text block) for the request that carries the result of call `id`.
    pub fn push(&self, id: &str, text: String) {
        self.push_block(id, serde_json::json!({"type": "text", "text": text}));
    }

    /// Leaves a content block (`document`, `image`, `text`) for that request.
    pub fn push_block(&self, id: &str, block: serde_json::Value) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push((id.to_string(), block));
    }

    /// Takes the blocks of these calls, in the order they were left.
    pub fn take_blocks_for(&self, ids: &[&str]) -> Vec<serde_json::Value> {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (mine, rest): (Vec<_>, Vec<_>) = q.drain(..).partition(|(id, _)| ids.contains(&id.as_str()));
        *q = rest;
        mine.into_iter().map(|(_, b)| b).collect()
    }

    /// Takes the texts of these calls (their text blocks), in the order they were left.
    pub fn take_for(&self, ids: &[&str]) -> Vec<String> {
        self.take_blocks_for(ids).iter().filter_map(|b| b["text"].as_str().map(str::to_string)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Counter(std::sync::atomic::AtomicU32);

    #[test]
    fn state_is_attached_by_type_put_or_defaulted_once() {
        let s = Session::default().put(String::from("configured"));
        assert_eq!(*s.state::<String>(), "configured");
        let c = s.state::<Counter>();
        c.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(s.state::<Counter>().0.load(std::sync::atomic::Ordering::SeqCst), 1, "kept from then on");
    }

    #[test]
    fn followups_go_to_their_own_calls() {
        let f = Followups::default();
        f.push("a", "for a".into());
        f.push("b", "for b".into());
        f.push("a", "again a".into());
        assert_eq!(f.take_for(&["a"]), ["for a", "again a"]);
        assert_eq!(f.take_for(&["a"]), Vec::<String>::new());
        assert_eq!(f.take_for(&["b", "c"]), ["for b"]);
    }
}
