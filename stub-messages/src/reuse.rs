//! Requests parsed by prefix: every request carries the whole conversation (the API's rule), so parsing
//! and checking each one whole costs the square of the turns. The stub keeps the last requests it
//! accepted — their bytes, their layout ([`Layout`]), their messages parsed and what the rules knew of
//! them ([`Checked`]) — and a request whose bytes begin like one of them, up to some of its messages, is
//! parsed from the first message that differs: the kept messages are moved over (not copied, not parsed
//! again), the other members and the new messages are parsed from their bytes, and the rules take up
//! from the last message that is not a `system` one ([`crate::validate::check_request_after`]).
//!
//! **Same value.** The value is the one `serde_json` makes of the whole body: the request's layout is
//! that of a compact JSON object (no whitespace), every member and the new messages are parsed by
//! `serde_json` at the depth they have in the body, a kept message has the bytes, at the same place, of
//! one parsed before; a key with an escape or a repeated key, a piece that does not parse — anything else
//! — and the request is parsed whole, as before, for the same answer and the same error.
//!
//! **Ownership.** A request's messages live in its exchange until [`crate::Recorder::record`] stores it
//! by prefix ([`crate::stored`]): then the kept messages, with a copy of the new ones, come back here for
//! the next request. A request that extends one whose messages are not back yet (two requests in
//! flight) is parsed whole.

use crate::stored::Layout;
use crate::validate::Checked;
use bytes::Bytes;
use serde_json::{Map, Value};
use std::collections::VecDeque;

/// How many accepted requests are kept for a later one to extend (a conversation and its sub-agents'
/// in flight at once).
pub const KEPT_REQUESTS: usize = 8;

/// A request's messages and its other members (key, value), parsed.
type Parts = (Vec<Value>, Vec<(String, Value)>);

/// One accepted request.
#[derive(Debug)]
struct Entry {
    seq: u64,
    bytes: Bytes,
    layout: Layout,
    /// Its messages and its other members (by key), once its exchange was recorded.
    parts: Option<Parts>,
    checked: Checked,
}

/// The requests kept (in the recorder, which gives their messages back).
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    entries: VecDeque<Entry>,
}

/// What a request takes from the earlier one it extends.
#[derive(Debug)]
pub(crate) struct Taken {
    /// The request's layout.
    pub layout: Layout,
    /// How many leading messages are the earlier request's.
    pub kept: usize,
    /// Those messages, parsed.
    pub messages: Vec<Value>,
    /// What the rules knew of the earlier request.
    pub checked: Checked,
    /// The earlier request's bytes, layout and members other than `messages`, parsed: a member with the
    /// same bytes is taken over.
    pub base: Bytes,
    pub base_layout: Layout,
    pub members: Vec<(String, Value)>,
}

/// How many leading bytes `a` and `b` share (compared a page at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const STEP: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + STEP <= n && a[i..i + STEP] == b[i..i + STEP] {
        i += STEP;
    }
    i + a[i..n].iter().zip(&b[i..n]).take_while(|(x, y)| x == y).count()
}

impl Parsed {
    /// The earlier request `raw` extends the most (the longest common beginning), taken out with its
    /// messages when `raw` keeps at least its first message; `None` when none does or `raw` is not laid
    /// out as a compact JSON object.
    pub(crate) fn take(&mut self, raw: &[u8]) -> Option<Taken> {
        let (at, _) = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.parts.is_some())
            .map(|(i, e)| (i, common_prefix(raw, &e.bytes)))
            .max_by_key(|(_, n)| *n)?;
        let e = &self.entries[at];
        let layout = Layout::of(raw, Some((&e.bytes, &e.layout)))?;
        let (mine, theirs) = (layout.message_spans(), e.layout.message_spans());
        let kept = mine
            .iter()
            .zip(theirs)
            .take_while(|(a, b)| a == b && raw.get((*a).clone()) == e.bytes.get((*b).clone()))
            .count();
        if kept == 0 {
            return None;
        }
        let e = self.entries.remove(at)?;
        let (mut messages, members) = e.parts?;
        messages.truncate(kept);
        (messages.len() == kept).then_some(Taken {
            layout,
            kept,
            messages,
            checked: e.checked,
            base: e.bytes,
            base_layout: e.layout,
            members,
        })
    }

    /// Keeps an accepted request (its messages come with [`Parsed::fill`]).
    pub(crate) fn insert(&mut self, seq: u64, bytes: Bytes, layout: Layout, checked: Checked) {
        self.entries.retain(|e| e.seq != seq);
        if self.entries.len() >= KEPT_REQUESTS {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry { seq, bytes, layout, parts: None, checked });
    }

    /// Whether request `seq` waits for its messages.
    pub(crate) fn wants(&self, seq: u64) -> bool {
        self.entries.iter().any(|e| e.seq == seq && e.parts.is_none())
    }

    /// Request `seq`'s messages and other members, as parsed.
    pub(crate) fn fill(&mut self, seq: u64, messages: Vec<Value>, members: Vec<(String, Value)>) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.seq == seq) {
            if e.layout.message_spans().len() == messages.len() {
                e.parts = Some((messages, members));
            }
        }
    }

    /// Forgets every request.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

/// Parses `bytes` as `serde_json` does after `open` (brackets that put it at its depth in the body),
/// the value inside them.
fn parse_at(open: &[u8], bytes: &[u8], close: &[u8]) -> Option<Value> {
    let mut buf = Vec::with_capacity(open.len() + bytes.len() + close.len());
    buf.extend_from_slice(open);
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(close);
    match serde_json::from_slice::<Value>(&buf).ok()? {
        Value::Array(mut a) if a.len() == 1 => a.pop(),
        _ => None,
    }
}

/// The value of request `raw` laid out as `t.layout`, its first `t.kept` messages being `t.messages`:
/// the value `serde_json` makes of `raw`, or `None` where this cannot tell (then `raw` is parsed whole).
pub(crate) fn value(raw: &[u8], t: Taken) -> Option<(Value, Layout, usize, Checked)> {
    let Taken { layout, kept, messages, checked, base, base_layout, mut members } = t;
    let mut out = Map::new();
    let mut messages = Some(messages);
    for (n, (key, v)) in layout.member_spans().iter().enumerate() {
        let k = raw.get(key.clone())?;
        if k.contains(&b'\\') {
            return None;
        }
        let name: String = serde_json::from_slice(k).ok()?;
        if out.contains_key(&name) {
            return None;
        }
        let value = if layout.messages_member() == Some(n) {
            let mut all = messages.take()?;
            let spans = layout.message_spans();
            if let (Some(first), Some(last)) = (spans.get(kept), spans.last()) {
                // the new messages, as elements of an array in an array (their depth in the body)
                match parse_at(b"[[", raw.get(first.start..last.end)?, b"]]")? {
                    Value::Array(new) if new.len() == spans.len() - kept => all.extend(new),
                    _ => return None,
                }
            }
            Value::Array(all)
        } else {
            // the earlier request's value of this member when its bytes are the same
            let bytes = raw.get(v.clone())?;
            let same = base_layout
                .member_spans()
                .iter()
                .any(|(bk, bv)| base.get(bk.clone()) == Some(k) && base.get(bv.clone()) == Some(bytes));
            match members.iter().position(|(m, _)| *m == name).filter(|_| same) {
                Some(at) => members.swap_remove(at).1,
                None => parse_at(b"[", bytes, b"]")?,
            }
        };
        out.insert(name, value);
    }
    messages.is_none().then_some((Value::Object(out), layout, kept, checked))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(raw: &str) -> Layout {
        Layout::of(raw.as_bytes(), None).unwrap_or_else(|| panic!("not laid out: {raw}"))
    }

    fn messages(raw: &str) -> Vec<Value> {
        serde_json::from_str::<Value>(raw)
            .ok()
            .and_then(|v| v.get("messages").cloned())
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default()
    }

    /// Keeps `raw` as accepted and recorded.
    fn accept(p: &mut Parsed, seq: u64, raw: &str) {
        p.insert(seq, Bytes::from(raw.to_string()), layout(raw), Checked::default());
        let v: Value = serde_json::from_str(raw).unwrap_or_default();
        let members = v
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| *k != "messages")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        p.fill(seq, messages(raw), members);
    }

    /// The value the fast path makes of `raw` (`None`: parsed whole).
    fn fast(p: &mut Parsed, raw: &str) -> Option<Value> {
        let t = p.take(raw.as_bytes())?;
        value(raw.as_bytes(), t).map(|(v, ..)| v)
    }

    #[test]
    fn a_request_extending_a_kept_one_is_the_value_of_its_bytes() {
        let base = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Read"}]}"#;
        let cases = [
            // appended messages; a member changed; a number, an escape, deep nesting
            r#"{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"n":1.5e3,"s":"caf\u00e9\n"}]},{"role":"user","content":[[[[]]]]}],"tools":[{"name":"Read"}]}"#,
            r#"{"model":"n","messages":[{"role":"user","content":"hi"}],"tools":[],"stream":true}"#,
            // history rewritten after the first message
            r#"{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"x"}],"tools":[{"name":"Read"}]}"#,
        ];
        for raw in cases {
            let mut p = Parsed::default();
            accept(&mut p, 1, base);
            let whole: Value = serde_json::from_str(raw).unwrap_or_default();
            assert_eq!(fast(&mut p, raw), Some(whole.clone()), "{raw}");
            // the keys in the same order too
            assert_eq!(serde_json::to_string(&fast_again(base, raw)).ok(), serde_json::to_string(&whole).ok());
        }
    }

    fn fast_again(base: &str, raw: &str) -> Value {
        let mut p = Parsed::default();
        accept(&mut p, 1, base);
        fast(&mut p, raw).unwrap_or_default()
    }

    #[test]
    fn what_the_fast_path_cannot_vouch_for_is_parsed_whole() {
        let base = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let refused = [
            // a first message that differs, a body with whitespace, a repeated key, an escaped key
            r#"{"model":"m","messages":[{"role":"user","content":"ho"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}, {"role":"user","content":"x"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"model":"n"}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"\u006dodel":"n"}"#,
            // a new message or a member that is not JSON
            r#"{"model":"m","messages":[{"role":"user","content":"hi"},{"role":tru}]}"#,
            r#"{"model":m,"messages":[{"role":"user","content":"hi"}]}"#,
        ];
        for raw in refused {
            let mut p = Parsed::default();
            accept(&mut p, 1, base);
            assert_eq!(fast(&mut p, raw), None, "{raw}");
        }
        // nested as deep as the body allows: parsed alone it would pass, in the body it does not
        let deep = format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}},{}{}]}}"#,
            "[".repeat(126),
            "]".repeat(126)
        );
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        let mut p = Parsed::default();
        accept(&mut p, 1, base);
        assert_eq!(fast(&mut p, &deep), None);
        // messages not back yet (a request in flight): not extended
        let mut p = Parsed::default();
        p.insert(1, Bytes::from(base), layout(base), Checked::default());
        assert_eq!(
            fast(&mut p, r#"{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"x"}]}"#),
            None
        );
    }
}
