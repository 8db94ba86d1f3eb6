//! Input validation against a tool's JSON Schema (the subset the runtime's schemas use: object,
//! properties with type / enum / minimum, required, additionalProperties false): which issues an input
//! has. Their texts are the reference's ([`crate::validation`]): `InputValidationError: Read failed due
//! to the following issue:` then one line per issue.

use crate::validation::{
    below_minimum, input_not_object, invalid_value, invalid_value_message, issues_error, missing_parameter,
    not_integer, tool_failed, unexpected_parameter, wrong_type,
};
use serde_json::Value;

fn type_ok(expected: &str, v: &Value) -> bool {
    match expected {
        "integer" => v.as_i64().is_some() || v.as_u64().is_some(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// The issues of `input` against `schema`, in a stable order (missing, unexpected, then per property in
/// schema order), in words; a value outside an `enum` is not among them ([`enum_issues`]).
pub fn issues(schema: &Value, input: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = input.as_object() else {
        return vec![input_not_object(input)];
    };
    let props = schema.get("properties").and_then(Value::as_object);
    for r in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if !obj.contains_key(r) {
            out.push(missing_parameter(r));
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        for k in obj.keys() {
            if !props.is_some_and(|p| p.contains_key(k)) {
                out.push(unexpected_parameter(k));
            }
        }
    }
    for (name, spec) in props.into_iter().flatten() {
        let Some(v) = obj.get(name) else { continue };
        if let Some(t) = spec.get("type").and_then(Value::as_str) {
            if !type_ok(t, v) {
                out.push(if t == "integer" && v.is_number() { not_integer(name) } else { wrong_type(name, t, v) });
                continue;
            }
        }
        if let (Some(min), Some(n)) = (spec.get("minimum").and_then(Value::as_f64), v.as_f64()) {
            if n < min {
                out.push(below_minimum(name, min));
            }
        }
    }
    out
}

/// The values outside their property's `enum`, as zod's `invalid_value` issues (of properties whose type
/// is right).
pub fn enum_issues(schema: &Value, input: &Value) -> Vec<Value> {
    let (Some(obj), Some(props)) = (input.as_object(), schema.get("properties").and_then(Value::as_object)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, spec) in props {
        let (Some(v), Some(options)) = (obj.get(name), spec.get("enum").and_then(Value::as_array)) else { continue };
        if spec.get("type").and_then(Value::as_str).is_some_and(|t| !type_ok(t, v)) || options.contains(v) {
            continue;
        }
        let names: Vec<&str> = options.iter().filter_map(Value::as_str).collect();
        out.push(invalid_value(
            serde_json::json!([name]),
            Value::Array(options.clone()),
            &invalid_value_message(&names),
        ));
    }
    out
}

/// The error text for a failed validation, or `None` when the input is valid. As Claude Code 2.1.235
/// words its zod errors: the issues it knows (missing, unexpected, wrong type) in words; when there are
/// none of those, zod's own message — the issues as JSON — so a value outside an enum reads
/// `InputValidationError: [ { "code": "invalid_value", … } ]`, and is not named when an issue in
/// words is there too (`probes/notebook/edit.toml`, both subjects).
pub fn validate(tool: &str, schema: &Value, input: &Value) -> Option<String> {
    let found = issues(schema, input);
    if !found.is_empty() {
        return Some(tool_failed(tool, &found));
    }
    let zod = enum_issues(schema, input);
    (!zod.is_empty()).then(|| issues_error(&zod))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_name_each_issue() {
        let schema = json!({"type": "object", "properties": {"file_path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}, "mode": {"type": "string", "enum": ["a", "b"]}}, "required": ["file_path"], "additionalProperties": false});
        assert_eq!(validate("Read", &schema, &json!({"file_path": "x"})), None);
        assert_eq!(
            validate("Read", &schema, &json!({"limit": "3", "zz": 1})).unwrap_or_default(),
            "InputValidationError: Read failed due to the following issues:\nThe required parameter `file_path` is missing\nAn unexpected parameter `zz` was provided\nThe parameter `limit` type is expected as `number` but provided as `string`"
        );
        assert_eq!(
            issues(&schema, &json!({"file_path": "x", "limit": 0})),
            ["The parameter `limit` must be greater than or equal to 1"]
        );
        assert_eq!(
            validate("Read", &schema, &json!({"file_path": "x", "mode": "c"})).unwrap_or_default(),
            "InputValidationError: [\n  {\n    \"code\": \"invalid_value\",\n    \"values\": [\n      \"a\",\n      \"b\"\n    ],\n    \"path\": [\n      \"mode\"\n    ],\n    \"message\": \"Invalid option: expected one of \\\"a\\\"|\\\"b\\\"\"\n  }\n]"
        );
        // an issue in words is there: the enum's is not named
        assert_eq!(
            validate("Read", &schema, &json!({"mode": "c"})).unwrap_or_default(),
            "InputValidationError: Read failed due to the following issue:\nThe required parameter `file_path` is missing"
        );
        assert_eq!(
            issues(&schema, &json!({"file_path": "x", "limit": 1.5})),
            ["The parameter `limit` must be an integer"]
        );
    }
}
