//! AskUserQuestion (ASK-1): 1–4 questions with unique texts, each with a header of at most 12 chars,
//! 2–4 options with unique labels and `multiSelect` (default false). The client adds the "Other"
//! choice itself: the model must not offer one, and the host may answer any question with free text.
//! The host's replies are scripted by the probe (`[host] ask`, see [`crate::tools::host`]).
//!
//! Claude Code 2.1.235 has no AskUserQuestion in `-p` runs: neither the default pool nor
//! `--allowedTools AskUserQuestion` nor `--tools AskUserQuestion` brings it (the call gets `No such tool
//! available: AskUserQuestion. AskUserQuestion is disabled for this session, in subagents as well as
//! here.`; `probes/claude-code/ask-plan-absent.toml`). The schema's words and the result texts below are
//! the binary's own (its embedded tool definition), not measured on a run:
//! - answered with options' labels: `Your questions have been answered: "Q"="A", "Q2"="B, C". You can
//!   now continue with these answers in mind.` (several labels are joined with `, `);
//! - any free-text ("Other") answer: `The user answered: "Q"="…". Read the answers carefully — …`;
//! - nothing answered: `The user did not answer the questions.`
//!
//! Decisions where the reference is silent or differs:
//! - the header limit is enforced ([`ASK_HEADER_MAX_CHARS`]); the reference only states it in the
//!   schema's description. Issues are reported in the reference's `InputValidationError: [ … ]` form
//!   ([`crate::validation`]).
//! - a host cancel is a rejected tool use ([`crate::settings::REJECTED`], is_error), the text the
//!   reference sends when the user dismisses a permission dialog; a call the host never answers ends
//!   after [`ASK_HOST_TIMEOUT_SECS`] with the reference's away-from-keyboard text. Neither invents an
//!   answer (ASK-1).
//! - the client-side fields of the reference's schema (`answers`, `annotations`: filled by its
//!   permission dialog) and option `preview`s are not offered to the model.

use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use crate::tools::host::Answer;
use crate::validation::{self, custom, invalid_type, issues_error};
use serde_json::{json, Value};

/// Fewest questions of one call (ASK-1).
pub const ASK_MIN_QUESTIONS: usize = 1;
/// Most questions of one call (ASK-1).
pub const ASK_MAX_QUESTIONS: usize = 4;
/// Fewest options of a question (ASK-1; "Other" is added by the client, not counted).
pub const ASK_MIN_OPTIONS: usize = 2;
/// Most options of a question (ASK-1).
pub const ASK_MAX_OPTIONS: usize = 4;
/// Longest header, in characters (ASK-1).
pub const ASK_HEADER_MAX_CHARS: usize = 12;
/// How long the host is given to answer before the call ends without an answer (ASK-1: a timeout is a
/// control result). The probe's host answers at once or never, so this is only the number reported.
pub const ASK_HOST_TIMEOUT_SECS: u64 = 60;

/// The reference's uniqueness message.
pub const NOT_UNIQUE: &str = "Question texts must be unique, option labels must be unique within each question";

const DESCRIPTION: &str = "Use this tool only when you are blocked on a decision that is genuinely the user's to make: one you cannot resolve from the request, the code, or sensible defaults.

Usage notes:
- Users will always be able to select \"Other\" to provide custom text input
- Use multiSelect: true to allow multiple answers to be selected for a question
- If you recommend a specific option, make that the first option in the list and add \"(Recommended)\" at the end of the label

Plan mode note: To switch into plan mode, use EnterPlanMode (not this tool). Once in plan mode, use this tool to clarify requirements or choose between approaches BEFORE finalizing your plan. Do NOT use this tool to ask \"Is my plan ready?\", \"Should I proceed?\", or otherwise reference \"the plan\" in questions \u{2014} the user cannot see the plan until you call ExitPlanMode for approval.
";

fn count_issue(path: Value, len: usize, min: usize, max: usize) -> Option<Value> {
    if len < min {
        Some(validation::too_small("array", min as u64, true, path, None))
    } else if len > max {
        Some(validation::too_big("array", max as u64, true, path))
    } else {
        None
    }
}

/// One question as asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question's text.
    pub question: String,
    /// Its chip label.
    pub header: String,
    /// The options' labels.
    pub labels: Vec<String>,
    /// Several labels may be chosen.
    pub multi_select: bool,
}

/// Checks a call's questions against ASK-1; the issues (empty when valid) or the questions.
pub fn parse_questions(input: &Value) -> Result<Vec<Question>, Vec<Value>> {
    let mut issues = Vec::new();
    let Some(qs) = input.get("questions").and_then(Value::as_array) else {
        return Err(vec![invalid_type(json!(["questions"]), "array", input.get("questions"))]);
    };
    if let Some(i) = count_issue(json!(["questions"]), qs.len(), ASK_MIN_QUESTIONS, ASK_MAX_QUESTIONS) {
        issues.push(i);
    }
    let mut out = Vec::new();
    for (n, q) in qs.iter().enumerate() {
        let text = |key: &str, issues: &mut Vec<Value>| match q.get(key) {
            Some(Value::String(s)) => s.clone(),
            other => {
                issues.push(invalid_type(json!(["questions", n, key]), "string", other));
                String::new()
            }
        };
        let question = text("question", &mut issues);
        let header = text("header", &mut issues);
        let len = header.chars().count();
        if len > ASK_HEADER_MAX_CHARS {
            issues.push(custom(
                json!(["questions", n, "header"]),
                &format!("Header must be at most {ASK_HEADER_MAX_CHARS} characters (got {len})"),
            ));
        }
        let multi_select = match q.get("multiSelect") {
            None => false,
            Some(Value::Bool(b)) => *b,
            other => {
                issues.push(invalid_type(json!(["questions", n, "multiSelect"]), "boolean", other));
                false
            }
        };
        let mut labels = Vec::new();
        match q.get("options").and_then(Value::as_array) {
            None => issues.push(invalid_type(json!(["questions", n, "options"]), "array", q.get("options"))),
            Some(opts) => {
                if let Some(i) =
                    count_issue(json!(["questions", n, "options"]), opts.len(), ASK_MIN_OPTIONS, ASK_MAX_OPTIONS)
                {
                    issues.push(i);
                }
                for (k, o) in opts.iter().enumerate() {
                    for key in ["label", "description"] {
                        match o.get(key) {
                            Some(Value::String(s)) if key == "label" => labels.push(s.clone()),
                            Some(Value::String(_)) => {}
                            other => {
                                issues.push(invalid_type(json!(["questions", n, "options", k, key]), "string", other))
                            }
                        }
                    }
                }
            }
        }
        out.push(Question { question, header, labels, multi_select });
    }
    if issues.is_empty() {
        let mut texts: Vec<&str> = out.iter().map(|q| q.question.as_str()).collect();
        texts.sort_unstable();
        let dup_question = texts.windows(2).any(|w| w[0] == w[1]);
        let dup_label = out.iter().any(|q| {
            let mut l: Vec<&str> = q.labels.iter().map(String::as_str).collect();
            l.sort_unstable();
            l.windows(2).any(|w| w[0] == w[1])
        });
        if dup_question || dup_label {
            issues.push(custom(json!([]), NOT_UNIQUE));
        }
    }
    if issues.is_empty() {
        Ok(out)
    } else {
        Err(issues)
    }
}

/// The text the model gets for the host's answers (the reference's wording): only answered questions
/// are listed; labels only → "answered", any free text → "The user answered", none → "did not answer".
pub fn answer_text(questions: &[Question], answers: &std::collections::BTreeMap<String, Answer>) -> String {
    let mut parts = Vec::new();
    let mut all_labels = true;
    for q in questions {
        let Some(a) = answers.get(&q.question) else { continue };
        let (shown, labels_only) = match a {
            Answer::One(s) => (s.clone(), q.labels.contains(s)),
            Answer::Many(v) => {
                (v.join(", "), q.multi_select && !v.is_empty() && v.iter().all(|s| q.labels.contains(s)))
            }
        };
        all_labels &= labels_only;
        parts.push(format!("\"{}\"=\"{shown}\"", q.question));
    }
    if parts.is_empty() {
        return "The user did not answer the questions.".into();
    }
    let s = parts.join(", ");
    if all_labels {
        format!("Your questions have been answered: {s}. You can now continue with these answers in mind.")
    } else {
        format!("The user answered: {s}. Read the answers carefully \u{2014} they may request clarification, changes, or that you not proceed \u{2014} and follow what they actually say.")
    }
}

/// The text of a call the host never answered (the reference's away-from-keyboard result).
pub fn timeout_text(secs: u64) -> String {
    format!("No response after {secs}s \u{2014} the user may be away from keyboard. Proceed using your best judgment based on the context so far; you can re-ask this question later if it's still relevant.")
}

/// AskUserQuestion.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskUserQuestion;

impl TypedTool for AskUserQuestion {
    const NAME: &'static str = "AskUserQuestion";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = Value;

    fn input_schema(&self) -> Value {
        let option = json!({
            "type": "object",
            "properties": {
                "label": {"description": "The display text for this option that the user will see and select. Should be concise (1-5 words) and clearly describe the choice.", "type": "string"},
                "description": {"description": "Explanation of what this option means or what will happen if chosen. Useful for providing context about trade-offs or implications.", "type": "string"}
            },
            "required": ["label", "description"],
            "additionalProperties": false
        });
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "questions": {
                    "description": "Questions to ask the user (1-4 questions)",
                    "minItems": ASK_MIN_QUESTIONS,
                    "maxItems": ASK_MAX_QUESTIONS,
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"description": "The complete question to ask the user. Should be clear, specific, and end with a question mark. Example: \"Which library should we use for date formatting?\" If multiSelect is true, phrase it accordingly, e.g. \"Which features do you want to enable?\"", "type": "string"},
                            "header": {"description": format!("Very short label displayed as a chip/tag (max {ASK_HEADER_MAX_CHARS} chars). Examples: \"Auth method\", \"Library\", \"Approach\"."), "type": "string"},
                            "options": {"description": "The available choices for this question. Must have 2-4 options. Each option should be a distinct, mutually exclusive choice (unless multiSelect is enabled). There should be no 'Other' option, that will be provided automatically.", "minItems": ASK_MIN_OPTIONS, "maxItems": ASK_MAX_OPTIONS, "type": "array", "items": option},
                            "multiSelect": {"description": "Set to true to allow the user to select multiple options instead of just one. Use when choices are not mutually exclusive.", "default": false, "type": "boolean"}
                        },
                        "required": ["question", "header", "options"],
                        "additionalProperties": false
                    }
                },
                "metadata": {
                    "description": "Optional metadata for tracking and analytics purposes. Not displayed to user.",
                    "type": "object",
                    "properties": {"source": {"description": "Optional identifier for the source of this question (e.g., \"remember\" for /remember command). Used for analytics tracking.", "type": "string"}},
                    "additionalProperties": false
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let questions = parse_questions(&input).map_err(|i| ToolError::Validation(issues_error(&i)))?;
        let host = ctx.session.state::<crate::tools::host::HostScript>();
        let Some(reply) = host.next_ask() else {
            return Ok(ToolOutput::Data {
                text: timeout_text(ASK_HOST_TIMEOUT_SECS),
                data: json!({"questions": input["questions"], "answers": {}, "afkTimeoutMs": ASK_HOST_TIMEOUT_SECS * 1000}),
            });
        };
        if reply.cancel {
            return Err(ToolError::Runtime(crate::settings::REJECTED.into()));
        }
        let answers: serde_json::Map<String, Value> = questions
            .iter()
            .filter_map(|q| {
                let a = reply.answers.get(&q.question)?;
                let s = match a {
                    Answer::One(s) => s.clone(),
                    Answer::Many(v) => v.join(", "),
                };
                Some((q.question.clone(), Value::String(s)))
            })
            .collect();
        Ok(ToolOutput::Data {
            text: answer_text(&questions, &reply.answers),
            data: json!({"questions": input["questions"], "answers": answers}),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn q(question: &str, header: &str, labels: &[&str]) -> Value {
        json!({"question": question, "header": header,
            "options": labels.iter().map(|l| json!({"label": l, "description": "d"})).collect::<Vec<_>>()})
    }

    #[test]
    fn ask1_limits() {
        assert!(parse_questions(&json!({"questions": [q("A?", "Hdr", &["x", "y"])]})).is_ok());
        let five: Vec<Value> = (0..5).map(|i| q(&format!("Q{i}?"), "H", &["x", "y"])).collect();
        let e = parse_questions(&json!({"questions": five})).err().unwrap_or_default();
        assert_eq!(e[0]["code"], "too_big");
        let e = parse_questions(&json!({"questions": []})).err().unwrap_or_default();
        assert_eq!(e[0]["code"], "too_small");
        let e =
            parse_questions(&json!({"questions": [q("A?", "Thirteen chrs", &["x", "y"])]})).err().unwrap_or_default();
        assert_eq!(e[0]["message"], "Header must be at most 12 characters (got 13)");
        assert!(parse_questions(&json!({"questions": [q("A?", "Twelve chars", &["x", "y"])]})).is_ok());
        let e = parse_questions(&json!({"questions": [q("A?", "H", &["x"])]})).err().unwrap_or_default();
        assert_eq!(e[0]["path"], json!(["questions", 0, "options"]));
        let e = parse_questions(&json!({"questions": [q("A?", "H", &["x", "y"]), q("A?", "H", &["x", "y"])]}))
            .err()
            .unwrap_or_default();
        assert_eq!(e, vec![custom(json!([]), NOT_UNIQUE)]);
        let e = parse_questions(&json!({"questions": [q("A?", "H", &["x", "x"])]})).err().unwrap_or_default();
        assert_eq!(e.len(), 1);
        let ok = parse_questions(&json!({"questions": [q("A?", "H", &["x", "y"])]})).unwrap_or_default();
        assert!(!ok[0].multi_select, "multiSelect defaults to false");
    }

    #[test]
    fn answer_texts() {
        let qs = vec![
            Question {
                question: "A?".into(),
                header: "H".into(),
                labels: vec!["x".into(), "y".into()],
                multi_select: false,
            },
            Question {
                question: "B?".into(),
                header: "H".into(),
                labels: vec!["x".into(), "y".into()],
                multi_select: true,
            },
        ];
        let mut a = BTreeMap::new();
        assert_eq!(answer_text(&qs, &a), "The user did not answer the questions.");
        a.insert("A?".to_string(), Answer::One("x".into()));
        a.insert("B?".to_string(), Answer::Many(vec!["x".into(), "y".into()]));
        assert_eq!(
            answer_text(&qs, &a),
            "Your questions have been answered: \"A?\"=\"x\", \"B?\"=\"x, y\". You can now continue with these answers in mind."
        );
        a.insert("A?".to_string(), Answer::One("something else".into()));
        assert!(answer_text(&qs, &a).starts_with("The user answered: \"A?\"=\"something else\", \"B?\"=\"x, y\". Read"));
    }
}
