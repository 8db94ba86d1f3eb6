//! Requests stored by prefix (`stub_messages::stored`), on a real record: Claude Code 2.1.235 running
//! `probes/claude-code/edit-texts.toml` (9 turns; kept with `probelab run --subject claude-code@2.1.235
//! --keep`). Its turn requests after the first are stored by reference to the previous one; read back
//! whole, they are recorded again to the same record, byte for byte.

use crate::support::{Sink, CLAUDE_CODE_RECORD as RECORD};
use stub_messages::{read_record, Requests};

#[test]
fn a_real_claude_code_record_reads_back_whole_and_records_again_byte_for_byte() {
    let read: Vec<_> = read_record(RECORD.as_bytes()).collect::<Result<_, _>>().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read.len(), RECORD.lines().count());
    // every turn after the first by reference; Claude Code moves its cache_control marker to the newest
    // message, so each request rewrites the last message of the one before, and that shows
    let turns: Vec<_> = read.iter().filter(|r| r.exchange.conversation.is_some()).collect();
    assert_eq!(turns.len(), 9);
    assert!(turns[0].stored_as.is_none());
    for t in &turns[1..] {
        let rb = t.stored_as.as_ref().unwrap_or_else(|| panic!("seq {} stored whole", t.exchange.seq));
        assert_eq!(rb.messages + 1, rb.of, "seq {}: {rb:?}", t.exchange.seq);
        assert!(rb.same.iter().any(|s| s == "tools") && rb.same.iter().any(|s| s == "system"), "{rb:?}");
    }
    // whole: each request's bytes parse to the request read, and hold every message so far
    let mut count = 0;
    for t in &turns {
        let bytes = t.exchange.request_bytes.as_ref().unwrap_or_else(|| panic!("no bytes"));
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Some(&v), t.exchange.request.as_ref());
        let n = v["messages"].as_array().map_or(0, Vec::len);
        assert!(n > count, "messages grow: {n} after {count}");
        count = n;
        assert!(v["tools"].as_array().is_some_and(|t| t.len() > 10), "tools restored");
    }
    // recorded again from the whole bytes (as the stub receives them): the same record
    let sink = Sink::default();
    let recorder = sink.recorder();
    for r in &read {
        recorder.record(r.exchange.clone());
    }
    let again = sink.text();
    assert!(again == RECORD, "the record made again differs");
    // the stored form is a fraction of the whole requests
    let whole: usize = turns.iter().filter_map(|t| t.exchange.request_bytes.as_ref()).map(|b| b.len()).sum();
    assert!(RECORD.len() * 3 < whole, "{} bytes stored for {whole} bytes of requests", RECORD.len());
    // in memory: the stored form, answered whole by `Requests` as the reader gave it
    let stored = recorder.take();
    let requests = Requests::new(&stored);
    for (i, r) in read.iter().enumerate() {
        assert_eq!(requests.whole(i), r.exchange.request, "seq {}", r.exchange.seq);
        if let Some(req) = &r.exchange.request {
            assert_eq!(requests.field(i, "tools"), req.get("tools"));
            let n = req["messages"].as_array().map_or(0, Vec::len);
            assert_eq!(requests.message_count(i), n);
            assert_eq!(requests.message(i, n.saturating_sub(1)), req["messages"].as_array().and_then(|m| m.last()));
        }
    }
}

#[test]
fn a_base_that_is_not_there_is_an_error_naming_the_line() {
    let second = RECORD.lines().nth(2).unwrap_or_default();
    let errs: Vec<_> = read_record(format!("{second}\n").as_bytes()).filter_map(Result::err).collect();
    assert_eq!(errs.len(), 1);
    let e = &errs[0];
    assert_eq!(e.line, 1);
    assert!(
        matches!(&e.problem, stub_messages::RecordProblem::BaseNotPrevious { seq: 2, conversation } if conversation == "main"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "record line 1");
    assert!(std::error::Error::source(e).is_some_and(|s| s.to_string().starts_with("request 2 (its base)")), "{e:?}");
}
