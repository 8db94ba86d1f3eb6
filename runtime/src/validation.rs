//! The reference's input-validation texts, built in one place: every `InputValidationError: …` a call
//! gets before its tool runs. Claude Code words them two ways, and so does the runtime:
//!
//! - the schema check of the pipeline ([`crate::schema`]) and the checks written in its words:
//!   [`tool_failed`] — `InputValidationError: Read failed due to the following issue:` then one line per
//!   issue ([`missing_parameter`], [`unexpected_parameter`], [`wrong_type`], …);
//! - the checks of the tools whose reference validates with zod: [`issues_error`] — `InputValidationError: `
//!   then the issue list as 2-space JSON, each issue built by one of the constructors below
//!   ([`custom`], [`invalid_type`], [`too_small`], …) with its keys in the order the reference prints them
//!   (measured on Claude Code 2.1.235: goldens under `golden/claude-code@2.1.235/`).
//!
//! A text here is the reference's text: the unit tests below pin each one, and the goldens show them.

use crate::profile::{Profile, Switch};
use serde_json::{json, Value};

/// What every validation text starts with.
pub const PREFIX: &str = "InputValidationError: ";

// ---- the schema check's wording -------------------------------------------------------------------

/// `InputValidationError: <tool> failed due to the following issue(s):` then the issues, one per line.
pub fn tool_failed(tool: &str, issues: &[String]) -> String {
    let noun = if issues.len() == 1 { "issue" } else { "issues" };
    format!("{PREFIX}{tool} failed due to the following {noun}:\n{}", issues.join("\n"))
}

/// The input is not an object.
pub fn input_not_object(got: &Value) -> String {
    format!("The input is expected as `object` but provided as `{}`", js_type(got))
}

/// A required parameter is missing.
pub fn missing_parameter(name: &str) -> String {
    format!("The required parameter `{name}` is missing")
}

/// A parameter the schema does not have.
pub fn unexpected_parameter(name: &str) -> String {
    format!("An unexpected parameter `{name}` was provided")
}

/// A parameter of the wrong JSON type (`expected` as the schema names it, `integer` shown as `number`).
pub fn wrong_type(name: &str, expected: &str, got: &Value) -> String {
    let shown = if expected == "integer" { "number" } else { expected };
    format!("The parameter `{name}` type is expected as `{shown}` but provided as `{}`", js_type(got))
}

/// A number where the schema wants an integer.
pub fn not_integer(name: &str) -> String {
    format!("The parameter `{name}` must be an integer")
}

/// A number below the schema's `minimum`.
pub fn below_minimum(name: &str, minimum: f64) -> String {
    format!("The parameter `{name}` must be greater than or equal to {minimum}")
}

/// A string shorter than `min` characters (WebSearch's `query`).
pub fn too_short(name: &str, min: usize) -> String {
    format!("The parameter `{name}` must have at least {min} characters")
}

// ---- zod's wording ---------------------------------------------------------------------------------

/// `InputValidationError: [ … ]`: the issues as the reference prints its zod issues (2-space JSON).
pub fn issues_error(issues: &[Value]) -> String {
    let body = serde_json::to_string_pretty(issues).unwrap_or_else(|_| "[]".into());
    format!("{PREFIX}{body}")
}

/// The type name zod reports for a value (`received …`).
pub fn js_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A `.refine()` issue at `path`: keys `code`, `path`, `message`.
pub fn custom(path: Value, message: &str) -> Value {
    json!({"code": "custom", "path": path, "message": message})
}

/// An issue a `superRefine` added with its own fields: keys `code`, `message`, `path`, as written there
/// (EnterWorktree's name rule).
pub fn custom_added(message: &str, path: Value) -> Value {
    json!({"code": "custom", "message": message, "path": path})
}

/// A value of the wrong type (`None`: the field is missing, zod's `undefined`).
pub fn invalid_type(path: Value, expected: &str, got: Option<&Value>) -> Value {
    let received = got.map(js_type).unwrap_or("undefined");
    json!({"expected": expected, "code": "invalid_type", "path": path,
        "message": format!("Invalid input: expected {expected}, received {received}")})
}

/// A value outside an enum (`values`) or a literal, with zod's message for it.
pub fn invalid_value(path: Value, values: Value, message: &str) -> Value {
    json!({"code": "invalid_value", "values": values, "path": path, "message": message})
}

/// zod's message for `values`: `Invalid option: expected one of "a"|"b"` (an enum), or `Invalid input:
/// expected "a"` (a single literal).
pub fn invalid_value_message(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    match quoted.as_slice() {
        [one] => format!("Invalid input: expected {one}"),
        _ => format!("Invalid option: expected one of {}", quoted.join("|")),
    }
}

/// The unit zod counts a size in, per origin.
fn unit(origin: &str) -> &'static str {
    match origin {
        "array" | "set" => " items",
        "string" => " characters",
        _ => "",
    }
}

/// A size or number below `minimum` (`inclusive`: `>=`, else `>`); `message` is the schema's own (a
/// `.min(1, "…")`), else zod's default (`Too small: expected array to have >=1 items`, `Too small:
/// expected number to be >0`).
pub fn too_small(origin: &str, minimum: u64, inclusive: bool, path: Value, message: Option<&str>) -> Value {
    let op = if inclusive { ">=" } else { ">" };
    let verb = if origin == "number" { "to be" } else { "to have" };
    let message = message
        .map(str::to_string)
        .unwrap_or_else(|| format!("Too small: expected {origin} {verb} {op}{minimum}{}", unit(origin)));
    json!({"origin": origin, "code": "too_small", "minimum": minimum, "inclusive": inclusive, "path": path,
        "message": message})
}

/// A size or number above `maximum` (`inclusive`: `<=`, else `<`), with zod's default message.
pub fn too_big(origin: &str, maximum: u64, inclusive: bool, path: Value) -> Value {
    let op = if inclusive { "<=" } else { "<" };
    let verb = if origin == "number" { "to be" } else { "to have" };
    json!({"origin": origin, "code": "too_big", "maximum": maximum, "inclusive": inclusive, "path": path,
        "message": format!("Too big: expected {origin} {verb} {op}{maximum}{}", unit(origin))})
}

/// Keys a strict object does not have.
pub fn unrecognized_keys(path: Value, keys: &[&String]) -> Value {
    let names: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
    let noun = if keys.len() == 1 { "key" } else { "keys" };
    json!({"code": "unrecognized_keys", "keys": keys, "path": path,
        "message": format!("Unrecognized {noun}: {}", names.join(", "))})
}

/// A value that fits none of a union's members: `errors` holds each member's issues.
pub fn invalid_union(path: Value, errors: Vec<Vec<Value>>) -> Value {
    json!({"code": "invalid_union", "errors": errors, "path": path, "message": "Invalid input"})
}

// ---- the wording by release -------------------------------------------------------------------------

/// From Claude Code 2.1.260 the validation texts lost their detail: every zod issue but a `custom` one
/// says `Invalid input`, and the schema check calls each value's type `unknown` (a missing required
/// parameter reads `The parameter `x` type is expected as `string` but provided as `unknown``).
/// [`DETAIL_BACK`] takes it back.
pub const DETAIL_LOST: Switch = Switch {
    name: "validation: zod messages say Invalid input and the schema check says unknown",
    since: "2.1.260",
    probe: "tasks.basics",
};

/// From Claude Code 2.1.285 the validation texts have their detail again (reverts [`DETAIL_LOST`]).
pub const DETAIL_BACK: Switch = Switch {
    name: "validation: the detailed texts are back (reverts the 2.1.260 wording)",
    since: "2.1.285",
    probe: "tasks.basics",
};

/// A validation text (`text`, built in the reference's wording above for a tool whose input schema is
/// `schema`) as the session's release words it ([`DETAIL_LOST`], [`DETAIL_BACK`]); any other text as it is.
pub fn as_released(text: &str, profile: Profile, schema: &Value) -> String {
    if !profile.has(&DETAIL_LOST) || profile.has(&DETAIL_BACK) {
        return text.to_string();
    }
    // zod's form: a prefix, then the issues as JSON
    for prefix in [PREFIX, "Invalid input: "] {
        let Some(body) = text.strip_prefix(prefix) else { continue };
        let Ok(Value::Array(mut issues)) = serde_json::from_str::<Value>(body) else { continue };
        issues.iter_mut().for_each(undetailed);
        return format!("{prefix}{}", serde_json::to_string_pretty(&issues).unwrap_or_else(|_| "[]".into()));
    }
    // the schema check's words
    if !(text.starts_with(PREFIX) && text.contains(" failed due to the following issue")) {
        return text.to_string();
    }
    let types = schema.get("properties");
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if let Some(name) =
                line.strip_prefix("The required parameter `").and_then(|r| r.strip_suffix("` is missing"))
            {
                let expected = types.and_then(|p| p.get(name)).and_then(|p| p.get("type")).and_then(Value::as_str);
                let shown = match expected {
                    Some("integer") => "number",
                    Some(t) => t,
                    None => "unknown",
                };
                return format!("The parameter `{name}` type is expected as `{shown}` but provided as `unknown`");
            }
            match line.rfind(" but provided as `") {
                Some(k) if line.ends_with('`') => format!("{} but provided as `unknown`", &line[..k]),
                _ => line.to_string(),
            }
        })
        .collect();
    lines.join("\n")
}

/// An issue without its detail: zod's own message (and those of a union's members) `Invalid input`; a
/// message the schema wrote (a `custom` issue's, a `.regex(…, "must be …")`'s: measured on 2.1.268,
/// `claude-code.send-message`) stays.
fn undetailed(issue: &mut Value) {
    if let Some(errors) = issue.get_mut("errors").and_then(Value::as_array_mut) {
        errors.iter_mut().filter_map(Value::as_array_mut).flatten().for_each(undetailed);
    }
    if issue.get("code").and_then(Value::as_str) == Some("custom") {
        return;
    }
    if let Some(m) = issue.get_mut("message") {
        let zods_own = m.as_str().is_some_and(|t| {
            ["Invalid ", "Too small: ", "Too big: ", "Unrecognized "].iter().any(|p| t.starts_with(p))
        });
        if zods_own {
            *m = json!("Invalid input");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts before DETAIL_LOST (2.1.259), without detail from it (2.1.260, measured: tasks.basics,
    /// bash.schema, write.errors, notebook.edit, lsp-inputs), with it again from DETAIL_BACK (2.1.285).
    #[test]
    fn detail_by_release() {
        let at = |v: &str| Profile::at(v).unwrap_or_else(|e| panic!("{e}"));
        let schema = json!({"properties": {"command": {"type": "string"}, "limit": {"type": "integer"}}});
        let words = tool_failed("Bash", &[missing_parameter("command"), wrong_type("limit", "integer", &json!("3"))]);
        let zod = issues_error(&[
            invalid_union(
                json!(["status"]),
                vec![vec![invalid_value(json!([]), json!(["a", "b"]), &invalid_value_message(&["a", "b"]))]],
            ),
            custom(json!([]), "Must provide script, name, or scriptPath"),
            too_small("number", 0, false, json!(["line"]), None),
            json!({"code": "invalid_format", "path": ["to"], "message": "must be a single-line recipient name or address"}),
        ]);
        for v in ["2.1.259", "2.1.285", "2.1.333"] {
            assert_eq!(as_released(&words, at(v), &schema), words, "{v}");
            assert_eq!(as_released(&zod, at(v), &schema), zod, "{v}");
        }
        assert_eq!(
            as_released(&words, at("2.1.260"), &schema),
            "InputValidationError: Bash failed due to the following issues:\nThe parameter `command` type is expected as `string` but provided as `unknown`\nThe parameter `limit` type is expected as `number` but provided as `unknown`"
        );
        let lost = as_released(&zod, at("2.1.284"), &schema);
        assert_eq!(lost.matches("\"message\": \"Invalid input\"").count(), 3, "{lost}");
        assert!(lost.contains("\"message\": \"Must provide script, name, or scriptPath\""), "{lost}");
        assert!(lost.contains("\"message\": \"must be a single-line recipient name or address\""), "{lost}");
        assert!(
            lost.starts_with("InputValidationError: [\n  {\n    \"code\": \"invalid_union\",\n    \"errors\": [\n"),
            "{lost}"
        );
        assert_eq!(as_released("Invalid workflow script: x", at("2.1.260"), &schema), "Invalid workflow script: x");
    }

    #[test]
    fn schema_wording() {
        assert_eq!(
            tool_failed("Read", &[missing_parameter("file_path")]),
            "InputValidationError: Read failed due to the following issue:\nThe required parameter `file_path` is missing"
        );
        assert_eq!(
            tool_failed("Grep", &[unexpected_parameter("zz"), not_integer("-A")]),
            "InputValidationError: Grep failed due to the following issues:\nAn unexpected parameter `zz` was provided\nThe parameter `-A` must be an integer"
        );
        assert_eq!(input_not_object(&json!([])), "The input is expected as `object` but provided as `array`");
        assert_eq!(
            wrong_type("limit", "integer", &json!("3")),
            "The parameter `limit` type is expected as `number` but provided as `string`"
        );
        assert_eq!(
            wrong_type("x", "boolean", &Value::Null),
            "The parameter `x` type is expected as `boolean` but provided as `null`"
        );
        assert_eq!(below_minimum("limit", 1.0), "The parameter `limit` must be greater than or equal to 1");
        assert_eq!(
            tool_failed("WebSearch", &[too_short("query", 2)]),
            "InputValidationError: WebSearch failed due to the following issue:\nThe parameter `query` must have at least 2 characters"
        );
    }

    #[test]
    fn zod_issue_list_is_two_space_json_in_the_references_key_order() {
        assert_eq!(
            issues_error(&[custom(json!([]), "Must provide script, name, or scriptPath")]),
            "InputValidationError: [\n  {\n    \"code\": \"custom\",\n    \"path\": [],\n    \"message\": \"Must provide script, name, or scriptPath\"\n  }\n]"
        );
        assert_eq!(
            issues_error(&[custom_added("Invalid worktree name: must be 64 characters or fewer (got 65)", json!(["name"]))]),
            "InputValidationError: [\n  {\n    \"code\": \"custom\",\n    \"message\": \"Invalid worktree name: must be 64 characters or fewer (got 65)\",\n    \"path\": [\n      \"name\"\n    ]\n  }\n]"
        );
        assert_eq!(issues_error(&[]), "InputValidationError: []");
    }

    #[test]
    fn zod_issues() {
        let s = |v: Value| v.to_string();
        assert_eq!(
            s(invalid_type(json!(["todos"]), "array", None)),
            r#"{"expected":"array","code":"invalid_type","path":["todos"],"message":"Invalid input: expected array, received undefined"}"#
        );
        assert_eq!(
            s(invalid_type(json!([]), "string", Some(&json!(3)))),
            r#"{"expected":"string","code":"invalid_type","path":[],"message":"Invalid input: expected string, received number"}"#
        );
        assert_eq!(
            s(invalid_value(
                json!([]),
                json!(["pending", "in_progress", "completed"]),
                &invalid_value_message(&["pending", "in_progress", "completed"])
            )),
            r#"{"code":"invalid_value","values":["pending","in_progress","completed"],"path":[],"message":"Invalid option: expected one of \"pending\"|\"in_progress\"|\"completed\""}"#
        );
        assert_eq!(invalid_value_message(&["deleted"]), "Invalid input: expected \"deleted\"");
        assert_eq!(
            s(too_small("array", 1, true, json!(["questions"]), None)),
            r#"{"origin":"array","code":"too_small","minimum":1,"inclusive":true,"path":["questions"],"message":"Too small: expected array to have >=1 items"}"#
        );
        assert_eq!(
            s(too_small("number", 0, false, json!(["line"]), None)),
            r#"{"origin":"number","code":"too_small","minimum":0,"inclusive":false,"path":["line"],"message":"Too small: expected number to be >0"}"#
        );
        assert_eq!(
            s(too_small("string", 1, true, json!(["todos", 0, "content"]), Some("Content cannot be empty"))),
            r#"{"origin":"string","code":"too_small","minimum":1,"inclusive":true,"path":["todos",0,"content"],"message":"Content cannot be empty"}"#
        );
        assert_eq!(
            s(too_big("array", 4, true, json!(["questions"]))),
            r#"{"origin":"array","code":"too_big","maximum":4,"inclusive":true,"path":["questions"],"message":"Too big: expected array to have <=4 items"}"#
        );
        let (a, b) = ("a".to_string(), "b".to_string());
        assert_eq!(
            s(unrecognized_keys(json!(["todos", 0]), &[&a])),
            r#"{"code":"unrecognized_keys","keys":["a"],"path":["todos",0],"message":"Unrecognized key: \"a\""}"#
        );
        assert_eq!(unrecognized_keys(json!([]), &[&a, &b])["message"], "Unrecognized keys: \"a\", \"b\"");
        assert_eq!(
            s(invalid_union(json!(["status"]), vec![vec![custom(json!([]), "x")], vec![]])),
            r#"{"code":"invalid_union","errors":[[{"code":"custom","path":[],"message":"x"}],[]],"path":["status"],"message":"Invalid input"}"#
        );
        assert_eq!(js_type(&json!({})), "object");
        assert_eq!(js_type(&json!(true)), "boolean");
    }
}
