//! The host's scripted side of a session (`[host]` in a probe): answers to AskUserQuestion (ASK-1) and
//! the verdict on a plan (PLAN-1). Nobody is there to click; a probe says what the host does, call by
//! call, in order:
//!
//! ```toml
//! [host]
//! ask = [
//!   { answers = { "Which colour?" = "Red" } },            # 1st AskUserQuestion: an option's label
//!   { answers = { "Which sizes?" = ["S", "M"] } },        # 2nd: several labels (multiSelect)
//!   { answers = { "Anything else?" = "free text" } },     # a text that is no label: the client's "Other"
//!   { cancel = true },                                    # the host dismisses the dialog
//! ]
//! plan = [
//!   { approve = false, feedback = "Add tests first" },    # 1st ExitPlanMode: refused, with feedback
//!   { approve = true },                                   # 2nd: approved
//! ]
//! ```
//!
//! A call with no entry left (or a question its entry does not answer) got no answer from the host:
//! the tool reports the timeout or the missing answer as it is, never an invented one. Each call takes
//! the next entry of its list; the cursors live in the session (a fresh [`HostScript`] per run).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The host's answer to one question: an option's label, several labels (multiSelect), or free text
/// (what the client's "Other" choice sends).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Answer {
    /// One label, or free text.
    One(String),
    /// Several labels (multiSelect questions).
    Many(Vec<String>),
}

/// What the host does with one AskUserQuestion call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskReply {
    /// Answers by question text.
    #[serde(default)]
    pub answers: BTreeMap<String, Answer>,
    /// The host dismissed the dialog: nothing is answered.
    #[serde(default)]
    pub cancel: bool,
}

/// What the host does with one ExitPlanMode call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanReply {
    /// The plan is approved (the session leaves plan mode).
    #[serde(default)]
    pub approve: bool,
    /// What the host says when refusing.
    #[serde(default)]
    pub feedback: Option<String>,
}

/// Where the session stands in the host's lists (not part of the script: equal whatever it holds).
#[derive(Debug, Default)]
pub struct Cursors {
    ask: AtomicUsize,
    plan: AtomicUsize,
}

impl Clone for Cursors {
    fn clone(&self) -> Cursors {
        Cursors {
            ask: AtomicUsize::new(self.ask.load(Ordering::SeqCst)),
            plan: AtomicUsize::new(self.plan.load(Ordering::SeqCst)),
        }
    }
}

impl PartialEq for Cursors {
    fn eq(&self, _: &Cursors) -> bool {
        true
    }
}

impl Eq for Cursors {}

/// `[host]` of a probe.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostScript {
    /// Replies to AskUserQuestion calls, in call order.
    #[serde(default)]
    pub ask: Vec<AskReply>,
    /// Replies to ExitPlanMode calls, in call order.
    #[serde(default)]
    pub plan: Vec<PlanReply>,
    #[serde(skip)]
    cursors: Cursors,
}

impl HostScript {
    /// The reply to the next AskUserQuestion call (`None`: the host never answers it).
    pub fn next_ask(&self) -> Option<&AskReply> {
        self.ask.get(self.cursors.ask.fetch_add(1, Ordering::SeqCst))
    }

    /// The reply to the next ExitPlanMode call (`None`: the host never answers it).
    pub fn next_plan(&self) -> Option<&PlanReply> {
        self.plan.get(self.cursors.plan.fetch_add(1, Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_come_in_order_then_run_out() {
        let h: HostScript = toml::from_str(
            "ask = [{ answers = { \"Q?\" = \"A\", \"M?\" = [\"x\", \"y\"] } }, { cancel = true }]\nplan = [{ approve = true }]",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let first = h.next_ask().cloned().unwrap_or_default();
        assert_eq!(first.answers.get("Q?"), Some(&Answer::One("A".into())));
        assert_eq!(first.answers.get("M?"), Some(&Answer::Many(vec!["x".into(), "y".into()])));
        assert!(h.next_ask().is_some_and(|r| r.cancel));
        assert!(h.next_ask().is_none());
        assert!(h.next_plan().is_some_and(|p| p.approve));
        assert!(h.next_plan().is_none());
        assert!(toml::from_str::<HostScript>("answer = []").is_err());
    }
}
