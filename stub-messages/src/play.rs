//! The stub's play of its script: where each conversation stands (a cursor per conversation, its
//! tickets and what was released), the values captured from requests, the prelude, and the decision for
//! each request — serve a turn, spoil it with a fault, answer a side request, or say the script is
//! exhausted. No I/O and no clock: [`crate::server`] holds it under a lock, turns the decisions into
//! answers and does the waiting.

use crate::fault::Fault;
use crate::script::{Route, Script, Wait};
use crate::wire::{Message, MessagesRequest};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(crate) struct Cursor {
    pub(crate) next: usize,
    pub(crate) faults_used: usize,
    /// Laps of a `[stub] cycle` script started over.
    pub(crate) lap: usize,
    /// Requests routed to the conversation (spoiled attempts and retries included).
    pub(crate) arrived: usize,
    /// Turns handed out to be served, in order: the n-th gets ticket n (from 0).
    pub(crate) tickets: usize,
    /// Tickets served (or skipped) so far: ticket n is served when `released == n`.
    pub(crate) released: usize,
    /// Tickets whose request will never be served (timed out, client gone), skipped when reached.
    pub(crate) skipped: std::collections::BTreeSet<usize>,
}

impl Cursor {
    /// Ticket `n` is done (served or skipped): move past it and past the skipped ones after it.
    pub(crate) fn pass(&mut self, n: usize) {
        if self.released == n {
            self.released += 1;
            while self.skipped.remove(&self.released) {
                self.released += 1;
            }
        } else {
            self.skipped.insert(n);
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Play {
    /// Index 0: main; 1..: named conversations.
    pub(crate) cursors: Vec<Cursor>,
    pub(crate) side_requests: u64,
    /// Values captured from requests so far ([`crate::script::Turn::capture`]).
    pub(crate) captures: BTreeMap<String, String>,
    /// The prelude was served (or was not due).
    pub(crate) prelude_done: bool,
}

/// What the play state decided for one request.
pub(crate) enum Decision {
    Spoil {
        conversation: String,
        turn: usize,
        fault: Fault,
        message: Message,
    },
    Serve {
        conversation: String,
        slot: usize,
        turn: usize,
        message: Message,
        delay_ms: u64,
        ticket: usize,
        wait: Option<Wait>,
    },
    Prelude(Message),
    Side(Message),
    Exhausted {
        conversation: String,
        turn: usize,
        turns: usize,
    },
}

impl Play {
    /// The play of `script` before any request: a cursor per conversation, main first.
    pub(crate) fn new(script: &Script) -> Play {
        let n = script.conversations.len() + 1;
        Play { cursors: (0..n).map(|_| Cursor::default()).collect(), ..Play::default() }
    }

    /// Turns served so far per conversation (`main` first), with each one's turns (an optional
    /// conversation never started has none).
    pub(crate) fn progress(&self, script: &Script) -> Vec<(String, usize, usize)> {
        let served = |slot: usize| self.cursors.get(slot).map_or(0, |c| c.next);
        let mut out = vec![(crate::script::MAIN.to_string(), served(0), script.turns.len())];
        for (i, c) in script.conversations.iter().enumerate() {
            let n = Route::Named(i).slot().map_or(0, served);
            let total = if c.optional && n == 0 { 0 } else { c.turns.len() };
            out.push((c.name.clone(), n, total));
        }
        out
    }

    /// Turn `turn` of the conversation at cursor `slot` was not delivered (its client left mid-stream):
    /// the cursor steps back to it, its faults counted as spent, so the next request gets it whole. Not
    /// when a later turn of that conversation was served meanwhile; true when it stepped back.
    pub(crate) fn give_back(&mut self, script: &Script, slot: usize, turn: usize) -> bool {
        let faults =
            script.conversation(Route::of_slot(slot)).and_then(|(_, t)| t.get(turn)).map_or(0, |t| t.fault.len());
        match self.cursors.get_mut(slot) {
            Some(c) if c.next == turn + 1 => {
                c.next = turn;
                c.faults_used = faults;
                true
            }
            _ => false,
        }
    }

    /// A request was routed to `route`: counted for `arrived` waits (not a side request).
    pub(crate) fn arrive(&mut self, route: Route) {
        if let Some(c) = route.slot().and_then(|slot| self.cursors.get_mut(slot)) {
            c.arrived += 1;
        }
    }

    /// Whether the counts of a wait hold (its file part is looked at outside the lock).
    pub(crate) fn counts_hold(&self, script: &Script, w: &Wait) -> bool {
        let Some(slot) = w.conversation.as_deref().and_then(|c| script.slot_of(c)) else { return true };
        let Some(c) = self.cursors.get(slot) else { return false };
        w.served.is_none_or(|n| c.released >= n) && w.arrived.is_none_or(|n| c.arrived >= n)
    }

    /// What to answer a request routed to `route` (`request` its body, for the prelude's tools and the
    /// turn's captures): the state moves on as the decision says.
    pub(crate) fn decide(
        &mut self,
        script: &Script,
        route: Route,
        req: &MessagesRequest<'_>,
        request: &Value,
    ) -> Decision {
        let model = req.model();
        let Some(slot) = route.slot() else {
            self.side_requests += 1;
            return Decision::Side(script.side_answer(self.side_requests, req));
        };
        let Some((name, turns)) = script.conversation(route) else {
            return Decision::Exhausted { conversation: "?".into(), turn: 0, turns: 0 };
        };
        let conversation = name.to_string();
        if slot == 0 && !self.prelude_done && self.cursors[0].next == 0 {
            self.prelude_done = true;
            let offered: Vec<&str> = request
                .get("tools")
                .and_then(Value::as_array)
                .map(|ts| ts.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect())
                .unwrap_or_default();
            if let Some(m) = script.prelude(&offered, model) {
                return Decision::Prelude(m);
            }
        }
        let repeats = match route {
            Route::Named(i) => script.conversations.get(i).is_some_and(|c| c.repeat),
            _ => false,
        };
        let cursor = &mut self.cursors[slot];
        if (script.stub.cycle || repeats) && cursor.next >= turns.len() {
            cursor.next = 0;
            cursor.lap += 1;
        }
        let (turn, lap) = (cursor.next, cursor.lap);
        let Some(t) = turns.get(turn) else {
            return Decision::Exhausted { conversation, turn, turns: turns.len() };
        };
        let captured = crate::script::capture_values(t, request);
        self.captures.extend(captured);
        let Some(message) = script.message_in_lap(route, turn, lap, model, &self.captures) else {
            return Decision::Exhausted { conversation, turn, turns: turns.len() };
        };
        let cursor = &mut self.cursors[slot];
        if let Some(fault) = t.fault.get(cursor.faults_used) {
            cursor.faults_used += 1;
            return Decision::Spoil { conversation, turn, fault: fault.clone(), message };
        }
        cursor.next += 1;
        cursor.faults_used = 0;
        let ticket = cursor.tickets;
        cursor.tickets += 1;
        Decision::Serve { conversation, slot, turn, message, delay_ms: t.delay_ms, ticket, wait: t.wait.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_cursors_map_one_way_and_back() {
        for route in [Route::Main, Route::Named(0), Route::Named(3)] {
            assert_eq!(route.slot().map(Route::of_slot), Some(route));
        }
        assert_eq!(Route::Side.slot(), None);
        let script = Script::from_toml(
            "t",
            "[[turn]]\ntext = \"a\"\n[[conversation]]\nname = \"w\"\nselect = { system_contains = \"worker\" }\n[[conversation.turn]]\ntext = \"b\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((script.slot_of("main"), script.slot_of("w"), script.slot_of("x")), (Some(0), Some(1), None));
    }

    #[test]
    fn a_fault_spoils_the_turn_once_and_a_turn_given_back_is_served_again() {
        let script = Script::from_toml(
            "t",
            "[[turn]]\ntext = \"one\"\nfault = [{ kind = \"http\", status = 529, retry_after = 0 }]\n[[turn]]\ntext = \"two\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut play = Play::new(&script);
        let body = serde_json::json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]});
        let req = MessagesRequest::parse(&body).unwrap_or_else(|e| panic!("{e}"));
        let turn_of = |d: Decision| match d {
            Decision::Serve { turn, .. } => format!("serve {turn}"),
            Decision::Spoil { turn, .. } => format!("spoil {turn}"),
            Decision::Exhausted { turn, .. } => format!("exhausted {turn}"),
            Decision::Prelude(_) => "prelude".into(),
            Decision::Side(_) => "side".into(),
        };
        let next = |play: &mut Play| turn_of(play.decide(&script, Route::Main, &req, &body));
        assert_eq!(next(&mut play), "spoil 0");
        assert_eq!(next(&mut play), "serve 0");
        assert!(play.give_back(&script, 0, 0), "the client left: turn 1 again");
        assert_eq!(next(&mut play), "serve 0", "given back whole, its fault spent");
        assert_eq!(next(&mut play), "serve 1");
        assert!(!play.give_back(&script, 0, 0), "a later turn was served meanwhile");
        assert_eq!(next(&mut play), "exhausted 2");
        assert_eq!(play.progress(&script), [("main".to_string(), 2, 2)]);
    }
}
