//! Requests stored by prefix: a turn request whose message list extends the previous request of its
//! conversation is kept (in memory and in the record line) as a reference to that request plus what is
//! new, so a record grows with the turns, not with their square.
//!
//! **The stored form.** Request `R` of a conversation whose previous request is `B` (both compact JSON
//! objects, as Claude Code, the built-in client and most SDKs send them) is stored as the JSON object of
//! `R`'s members in `R`'s order, where
//! - `messages` holds only `R`'s messages from index `k` on, `k ≥ 1` being how many leading messages are
//!   byte-for-byte those of `B`;
//! - a member whose bytes are `B`'s (the system prompt, the tools…) is left out, and named in `same`
//!   (only when `R`'s keys are `B`'s in the same order);
//!
//! beside [`RequestBase`] `{ seq, messages: k, of, same }` in the exchange (`request_base` in the line).
//! [`rebuild`] makes `R`'s bytes again from the stored form and `B`'s bytes: `{`, the members in `B`'s
//! key order when `same` is not empty (else in the stored order), a member of `same` with `B`'s bytes,
//! `messages` as `[` `B`'s first `k` messages, then the stored ones, joined by `,` `]`, members joined by
//! `,`, `}`. The recorder stores a request so only when that rebuild gives its bytes exactly (checked per
//! request); else — a client that rewrote the history from its first message (a compaction), JSON that is
//! not compact, a key to redact — it stores the request whole.
//!
//! **Rewrites show.** `of` is how many messages `B` had: `messages < of` says `R` rewrote `B`'s history
//! from message `messages` on (moved `cache_control` markers, stripped thinking…), and the rewritten
//! messages are in the stored part, as sent.
//!
//! **Reading.** [`crate::record::read_record`] reads a record (JSONL) back with every request whole, byte for byte as it
//! arrived; [`crate::record::Requests`] answers the same questions over exchanges kept in memory in the stored form
//! (the fields and messages of a request, its new part) without rebuilding every request.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::ops::Range;

/// How a request is stored by reference to an earlier one ([`crate::stored`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestBase {
    /// The `seq` of the earlier request (the previous one of the same conversation, earlier in the record).
    pub seq: u64,
    /// How many leading messages are the earlier request's, byte for byte (the stored `messages` are the
    /// rest).
    pub messages: usize,
    /// How many messages the earlier request had: more than `messages` means this request rewrote its
    /// history from message `messages` on.
    pub of: usize,
    /// Top-level members left out because their bytes are the earlier request's, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub same: Vec<String>,
}

/// Where the parts of a compact JSON request object are: its members (key with quotes, value) and the
/// elements of its `messages` array.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    members: Vec<(Range<usize>, Range<usize>)>,
    /// The index of the `messages` member and its elements' spans.
    messages: Option<(usize, Vec<Range<usize>>)>,
}

fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = j + memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[k] == b'\\' {
            j = k + 2;
        } else {
            return Some(k + 1);
        }
    }
}

/// The end of the JSON value starting at `i` (valid JSON assumed; `None` where it is not).
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let n = b[i..].iter().position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'));
            Some(n.map_or(b.len(), |n| i + n))
        }
    }
}

impl Layout {
    /// The layout of a compact JSON object (no whitespace between tokens), `None` for anything else.
    /// The `messages` elements that `reuse` (an earlier request and its layout) shows at the same place
    /// with the same bytes are not scanned again: a conversation's requests are laid out in time linear
    /// in their new part.
    pub fn of(raw: &[u8], reuse: Option<(&[u8], &Layout)>) -> Option<Layout> {
        if raw.first() != Some(&b'{') {
            return None;
        }
        let mut out = Layout::default();
        let mut i = 1;
        if raw.get(1) == Some(&b'}') {
            return (raw.len() == 2).then_some(out);
        }
        loop {
            let key_end = (*raw.get(i)? == b'"').then(|| skip_string(raw, i))??;
            if raw.get(key_end) != Some(&b':') {
                return None;
            }
            let v = key_end + 1;
            let end = if &raw[i..key_end] == b"\"messages\"" && raw.get(v) == Some(&b'[') {
                let (elements, end) = Self::elements(raw, v, reuse)?;
                out.messages = Some((out.members.len(), elements));
                end
            } else {
                skip_value(raw, v)?
            };
            out.members.push((i..key_end, v..end));
            match raw.get(end) {
                Some(b',') => i = end + 1,
                Some(b'}') if end + 1 == raw.len() => return Some(out),
                _ => return None,
            }
        }
    }

    /// The elements of the array at `v`, and its end.
    fn elements(raw: &[u8], v: usize, reuse: Option<(&[u8], &Layout)>) -> Option<(Vec<Range<usize>>, usize)> {
        let mut elements = Vec::new();
        let mut j = v + 1;
        if raw.get(j) == Some(&b']') {
            return Some((elements, j + 1));
        }
        // the earlier request's elements where they are here too: same start, same bytes (a JSON value's
        // extent is fixed by its bytes), everything before them the same
        if let Some((old, Some((_, spans)))) = reuse.map(|(o, l)| (o, l.messages.as_ref())) {
            if spans.first().map(|s| s.start) == Some(j) && raw.get(..j) == old.get(..j) {
                for s in spans {
                    if s.start != j || raw.get(s.clone()) != old.get(s.clone()) {
                        break;
                    }
                    elements.push(s.clone());
                    match raw.get(s.end) {
                        Some(b',') => j = s.end + 1,
                        Some(b']') => return Some((elements, s.end + 1)),
                        _ => return None,
                    }
                }
            }
        }
        loop {
            let end = skip_value(raw, j)?;
            elements.push(j..end);
            match raw.get(end) {
                Some(b',') => j = end + 1,
                Some(b']') => return Some((elements, end + 1)),
                _ => return None,
            }
        }
    }

    pub(crate) fn member<'r>(&self, raw: &'r [u8], key: &[u8]) -> Option<&'r [u8]> {
        self.members.iter().find(|(k, _)| &raw[k.clone()] == key).map(|(_, v)| &raw[v.clone()])
    }

    fn messages(&self) -> &[Range<usize>] {
        self.messages.as_ref().map(|(_, m)| m.as_slice()).unwrap_or_default()
    }

    /// The spans of the `messages` elements (none when there is no `messages` array).
    pub(crate) fn message_spans(&self) -> &[Range<usize>] {
        self.messages()
    }

    /// The spans of the members: key (with its quotes) and value.
    pub(crate) fn member_spans(&self) -> &[(Range<usize>, Range<usize>)] {
        &self.members
    }

    /// Which member is the `messages` array.
    pub(crate) fn messages_member(&self) -> Option<usize> {
        self.messages.as_ref().map(|(n, _)| *n)
    }
}

/// Where [`assemble`] puts the bytes it makes.
trait Sink {
    fn put(&mut self, b: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
}

/// A sink that compares what it is given with `raw`, from its start: the check of a stored form
/// without making the request again (no copy of a large request per turn).
struct Compare<'a> {
    raw: &'a [u8],
    at: usize,
    same: bool,
}

impl Sink for Compare<'_> {
    fn put(&mut self, b: &[u8]) {
        self.same = self.same && self.raw.get(self.at..self.at + b.len()) == Some(b);
        self.at += b.len();
    }
}

/// Why a request stored by reference cannot be rebuilt ([`rebuild`]): the record is damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RebuildError {
    /// The stored form is not a compact JSON object.
    #[error("the stored request is not a compact JSON object")]
    StoredNotCompact,
    /// The request it refers to is not a compact JSON object.
    #[error("request {seq} is not a compact JSON object")]
    BaseNotCompact {
        /// The request referred to.
        seq: u64,
    },
    /// It keeps more messages of the request it refers to than that one has, or has no messages.
    #[error("request {seq} has {has} messages, {kept} are kept")]
    TooManyKept {
        /// The request referred to.
        seq: u64,
        /// Its messages.
        has: usize,
        /// The messages the stored form keeps of it.
        kept: usize,
    },
    /// A member it does not say is the same is missing from it.
    #[error("the stored request lacks member {member} of request {seq}")]
    LacksMember {
        /// The member's key, as written (quoted).
        member: String,
        /// The request referred to.
        seq: u64,
    },
}

/// The bytes of `R` made from its stored form, the earlier request's bytes and their layouts, into `out`.
fn assemble(
    stored: &[u8],
    ls: &Layout,
    base: &[u8],
    lb: &Layout,
    rb: &RequestBase,
    out: &mut impl Sink,
) -> Result<(), RebuildError> {
    let kept = lb.messages();
    if rb.messages > kept.len() || ls.messages.is_none() {
        return Err(RebuildError::TooManyKept { seq: rb.seq, has: kept.len(), kept: rb.messages });
    }
    out.put(b"{");
    let mut first = true;
    let quoted: Vec<Vec<u8>> = rb.same.iter().map(|s| format!("\"{s}\"").into_bytes()).collect();
    let mut member = |out: &mut dyn FnMut(&[u8]), key: &[u8], value: &[u8], is_messages: bool| {
        if !first {
            out(b",");
        }
        first = false;
        out(key);
        out(b":");
        if is_messages {
            out(b"[");
            let parts = kept[..rb.messages]
                .iter()
                .map(|s| &base[s.clone()])
                .chain(ls.messages().iter().map(|s| &stored[s.clone()]));
            for (n, p) in parts.enumerate() {
                if n > 0 {
                    out(b",");
                }
                out(p);
            }
            out(b"]");
        } else {
            out(value);
        }
    };
    let mut put = |b: &[u8]| out.put(b);
    let is_messages = |key: &[u8]| key == b"\"messages\"";
    if rb.same.is_empty() {
        for (k, v) in &ls.members {
            member(&mut put, &stored[k.clone()], &stored[v.clone()], is_messages(&stored[k.clone()]));
        }
    } else {
        for (k, v) in &lb.members {
            let key = &base[k.clone()];
            if quoted.iter().any(|q| q.as_slice() == key) {
                member(&mut put, key, &base[v.clone()], false);
            } else {
                let value = ls.member(stored, key).ok_or_else(|| RebuildError::LacksMember {
                    member: String::from_utf8_lossy(key).into_owned(),
                    seq: rb.seq,
                })?;
                member(&mut put, key, value, is_messages(key));
            }
        }
    }
    put(b"}");
    Ok(())
}

/// The bytes of a request stored by reference ([`RequestBase`]), from its stored bytes and the earlier
/// request's (whole) bytes.
pub fn rebuild(stored: &[u8], base: &[u8], rb: &RequestBase) -> Result<Vec<u8>, RebuildError> {
    let ls = Layout::of(stored, None).ok_or(RebuildError::StoredNotCompact)?;
    let lb = Layout::of(base, None).ok_or(RebuildError::BaseNotCompact { seq: rb.seq })?;
    let mut out = Vec::with_capacity(base.len() + stored.len());
    assemble(stored, &ls, base, &lb, rb, &mut out)?;
    Ok(out)
}

/// The stored form of `raw` (laid out as `lr`) by reference to the earlier request `base` (`seq`, laid
/// out as `lb`), when it extends at least its first message and the stored form rebuilds `raw` exactly.
pub(crate) fn store(raw: &[u8], lr: &Layout, seq: u64, base: &[u8], lb: &Layout) -> Option<(Vec<u8>, RequestBase)> {
    let (mine, theirs) = (lr.messages(), lb.messages());
    let k = mine.iter().zip(theirs).take_while(|(a, b)| raw[(*a).clone()] == base[(*b).clone()]).count();
    if k == 0 || lr.messages.is_none() {
        return None;
    }
    let same_order = lr.members.len() == lb.members.len()
        && lr.members.iter().zip(&lb.members).all(|((a, _), (b, _))| raw[a.clone()] == base[b.clone()]);
    let mut same = Vec::new();
    let mut stored = Vec::with_capacity(raw.len() / 4);
    stored.push(b'{');
    for (n, (key, value)) in lr.members.iter().enumerate() {
        let k_bytes = &raw[key.clone()];
        let is_messages = lr.messages.as_ref().map(|(m, _)| *m) == Some(n);
        let plain = !k_bytes.contains(&b'\\');
        if !is_messages
            && same_order
            && plain
            && lb.members.get(n).map(|(_, v)| &base[v.clone()]) == Some(&raw[value.clone()])
        {
            same.push(String::from_utf8_lossy(&k_bytes[1..k_bytes.len() - 1]).into_owned());
            continue;
        }
        if stored.len() > 1 {
            stored.push(b',');
        }
        stored.extend_from_slice(k_bytes);
        stored.push(b':');
        if is_messages {
            stored.push(b'[');
            for (i, s) in mine[k..].iter().enumerate() {
                if i > 0 {
                    stored.push(b',');
                }
                stored.extend_from_slice(&raw[s.clone()]);
            }
            stored.push(b']');
        } else {
            stored.extend_from_slice(&raw[value.clone()]);
        }
    }
    stored.push(b'}');
    let rb = RequestBase { seq, messages: k, of: theirs.len(), same };
    // verified byte for byte: stored so only if it gives the request back exactly
    let ls = Layout::of(&stored, None)?;
    let mut check = Compare { raw, at: 0, same: true };
    assemble(&stored, &ls, base, lb, &rb, &mut check).ok()?;
    (check.same && check.at == raw.len()).then_some((stored, rb))
}

/// The stored form of a parsed request (the value [`store`] made bytes of): `messages` cut to the new
/// ones, the members of `same` left out.
/// The kept messages and the members left out come back (moved out).
pub(crate) fn store_value(v: &mut Value, rb: &RequestBase) -> (Vec<Value>, Vec<(String, Value)>) {
    let Some(o) = v.as_object_mut() else { return Default::default() };
    let members = rb.same.iter().filter_map(|k| o.shift_remove_entry(k)).collect();
    let messages = match o.get_mut("messages") {
        Some(Value::Array(m)) => {
            let kept = m.drain(..rb.messages.min(m.len())).collect();
            // the stored form is kept for the run: not with the room of the whole conversation's array
            m.shrink_to_fit();
            kept
        }
        _ => Vec::new(),
    };
    (messages, members)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(raw: &str) -> Layout {
        Layout::of(raw.as_bytes(), None).unwrap_or_else(|| panic!("not laid out: {raw}"))
    }

    #[test]
    fn a_compact_object_is_laid_out_and_anything_else_is_not() {
        let raw = r#"{"model":"m","messages":[{"a":"]\"["},[1,{"b":2}],3],"n":-1.5e3,"t":true}"#;
        let l = parts(raw);
        let spans: Vec<&str> = l.messages().iter().map(|s| &raw[s.clone()]).collect();
        assert_eq!(spans, [r#"{"a":"]\"["}"#, r#"[1,{"b":2}]"#, "3"]);
        assert_eq!(l.member(raw.as_bytes(), b"\"n\""), Some(&b"-1.5e3"[..]));
        for bad in ["{ \"a\":1}", "{\"a\": 1}", "[1]", "{\"a\":1}x", "{\"a\":\"1}", ""] {
            assert!(Layout::of(bad.as_bytes(), None).is_none(), "{bad}");
        }
        assert_eq!(Layout::of(b"{}", None), Some(Layout::default()));
    }

    #[test]
    fn a_request_extending_its_base_is_stored_as_its_new_part_and_rebuilt_exactly() {
        let base =
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Read"}],"stream":true}"#;
        let raw = r#"{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"},{"role":"user","content":"caf\u00e9"}],"tools":[{"name":"Read"}],"stream":false}"#;
        let lb = parts(base);
        let lr = Layout::of(raw.as_bytes(), Some((base.as_bytes(), &lb))).unwrap_or_else(|| panic!("laid out"));
        assert_eq!(lr, parts(raw), "reusing the base's layout lays out the same");
        let (stored, rb) = store(raw.as_bytes(), &lr, 7, base.as_bytes(), &lb).unwrap_or_else(|| panic!("stored"));
        assert_eq!(rb, RequestBase { seq: 7, messages: 1, of: 1, same: vec!["model".into(), "tools".into()] });
        assert_eq!(
            String::from_utf8_lossy(&stored),
            r#"{"messages":[{"role":"assistant","content":"x"},{"role":"user","content":"caf\u00e9"}],"stream":false}"#
        );
        assert_eq!(rebuild(&stored, base.as_bytes(), &rb).unwrap_or_default(), raw.as_bytes());
        // the parsed value cut the same way
        let mut v: Value = serde_json::from_str(raw).unwrap_or_default();
        let (kept, left_out) = store_value(&mut v, &rb);
        assert_eq!(v, serde_json::from_slice::<Value>(&stored).unwrap_or_default());
        assert_eq!((kept.len(), left_out.len()), (1, 2), "what was cut comes back");
        // a long conversation's stored form keeps the room of its new messages, not of the whole array
        // (kept for the run: 143 MB of a 1,000-turn run's 172 MB were such room)
        let mut v = json!({"messages": vec![json!({"role": "user", "content": "x"}); 1000]});
        store_value(&mut v, &RequestBase { seq: 1, messages: 998, of: 998, same: Vec::new() });
        let room = v["messages"].as_array().map_or(0, Vec::capacity);
        assert!(room <= 2, "room for {room} messages kept");
    }

    #[test]
    fn a_rewritten_history_shows_and_a_rewrite_from_the_start_is_stored_whole() {
        let base = r#"{"messages":[{"c":1},{"c":2,"cache_control":{}}],"tools":[]}"#;
        // the marker moved: message 2 rewritten, so only message 1 is kept, and of = 2 shows the rewrite
        let raw = r#"{"messages":[{"c":1},{"c":2},{"c":3,"cache_control":{}}],"tools":[]}"#;
        let (lb, lr) = (parts(base), parts(raw));
        let (stored, rb) = store(raw.as_bytes(), &lr, 1, base.as_bytes(), &lb).unwrap_or_else(|| panic!("stored"));
        assert_eq!((rb.messages, rb.of), (1, 2));
        assert_eq!(String::from_utf8_lossy(&stored), r#"{"messages":[{"c":2},{"c":3,"cache_control":{}}]}"#);
        assert_eq!(rebuild(&stored, base.as_bytes(), &rb).unwrap_or_default(), raw.as_bytes());
        // compacted: nothing in common from the first message: whole
        let compacted = r#"{"messages":[{"c":"summary"}],"tools":[]}"#;
        assert!(store(compacted.as_bytes(), &parts(compacted), 1, base.as_bytes(), &lb).is_none());
        // keys in another order: messages by reference, every other member kept
        let reordered = r#"{"tools":[],"messages":[{"c":1},{"c":9}]}"#;
        let (stored, rb) =
            store(reordered.as_bytes(), &parts(reordered), 1, base.as_bytes(), &lb).unwrap_or_else(|| panic!("stored"));
        assert!(rb.same.is_empty());
        assert_eq!(String::from_utf8_lossy(&stored), r#"{"tools":[],"messages":[{"c":9}]}"#);
        assert_eq!(rebuild(&stored, base.as_bytes(), &rb).unwrap_or_default(), reordered.as_bytes());
    }
}
