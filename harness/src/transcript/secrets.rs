//! Secrets never reach a golden (issue 41, item 4). Goldens are committed and published, and a subject
//! is untrusted: whatever it read or was given can come back in a tool result. Two guards, both at the
//! golden's door ([`crate::lab::golden_step`]):
//! - **Known secret shapes are redacted** before a transcript is compared or blessed ([`redact`]):
//!   Anthropic, GitHub, GitLab, Slack, AWS and Google keys and PEM private keys become
//!   `<redacted:KIND>` (the lab's own dummy key, [`DUMMY_KEYS`], stays: it is what the probes send).
//! - **The lab's own secrets are refused** ([`leaked`]): a transcript that holds the value of one of
//!   the lab's environment variables that looks secret — by its name (`…KEY…`, `…TOKEN…`,
//!   `…SECRET…`, `…PASSWORD…`, …) or by its shape (20 characters or more of letters and digits, no
//!   `/`, no space: a token, not a path or a setting) — is not blessed; the error names the variable
//!   and the line, never the value.
//!
//! Decision: refuse rather than redact the lab's values — a redacted value would still say the
//! subject could read the lab's environment, which confinement must prevent; the refusal makes that a
//! failure someone fixes.

use regex::Regex;
use std::sync::OnceLock;

/// The keys the lab itself gives subjects (never secrets): left as they are.
pub const DUMMY_KEYS: &[&str] = &[crate::subject::claude_code::FAKE_API_KEY, crate::subject::agent::DUMMY_KEY];

/// Secret shapes, each with its kind.
fn shapes() -> &'static [(Regex, &'static str)] {
    static SHAPES: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        [
            (r"sk-ant-[A-Za-z0-9_-]{8,}", "anthropic-key"),
            (r"\bgh[pousr]_[A-Za-z0-9]{30,}", "github-token"),
            (r"\bgithub_pat_[A-Za-z0-9_]{20,}", "github-token"),
            (r"\bglpat-[A-Za-z0-9_-]{20,}", "gitlab-token"),
            (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "slack-token"),
            (r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", "aws-key"),
            (r"\bAIza[0-9A-Za-z_-]{35}", "google-key"),
            (r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|\z)", "private-key"),
        ]
        .into_iter()
        .filter_map(|(re, kind)| Regex::new(re).ok().map(|r| (r, kind)))
        .collect()
    })
}

/// `text` with every known secret shape replaced by `<redacted:KIND>` (the lab's dummy keys kept).
pub fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out = std::borrow::Cow::Borrowed(text);
    for (re, kind) in shapes() {
        if !re.is_match(&out) {
            continue;
        }
        let replaced = re.replace_all(&out, |c: &regex::Captures<'_>| {
            let found = &c[0];
            if DUMMY_KEYS.contains(&found) {
                found.to_string()
            } else {
                format!("<redacted:{kind}>")
            }
        });
        out = std::borrow::Cow::Owned(replaced.into_owned());
    }
    out
}

/// Whether a variable's name says it holds a secret.
fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "PRIVATE", "SESSION"]
        .iter()
        .any(|w| n.contains(w))
}

/// Whether a value has a token's shape: 20 characters or more, letters and digits (and `-_.+=`), no
/// `/`, no space.
fn token_shape(value: &str) -> bool {
    value.len() >= 20
        && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_.+=".contains(c))
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
}

/// The lab's environment variables that hold secrets: (name, value), values of 6 characters or more.
pub fn lab_secrets() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, v)| v.len() >= 6 && (secret_name(k) || token_shape(v)))
        .filter(|(_, v)| !DUMMY_KEYS.contains(&v.as_str()))
        .collect()
}

/// The first of `secrets` that `text` holds: its name and the line (1-based) it is on.
pub fn leaked(text: &str, secrets: &[(String, String)]) -> Option<(String, usize)> {
    secrets.iter().find_map(|(name, value)| {
        let at = text.find(value.as_str())?;
        Some((name.clone(), text[..at].matches('\n').count() + 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_shapes_are_redacted_and_the_labs_dummy_key_is_kept() {
        let text = format!(
            "a ghp_{} b sk-ant-api03-AbCdEfGh123 c {} d AKIAABCDEFGHIJKLMNOP\n-----BEGIN RSA PRIVATE KEY-----\nxyz\n-----END RSA PRIVATE KEY-----\n",
            "a".repeat(36),
            crate::subject::claude_code::FAKE_API_KEY
        );
        let r = redact(&text);
        assert_eq!(
            r,
            format!(
                "a <redacted:github-token> b <redacted:anthropic-key> c {} d <redacted:aws-key>\n<redacted:private-key>\n",
                crate::subject::claude_code::FAKE_API_KEY
            )
        );
        assert!(matches!(redact("nothing here"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn a_value_of_the_labs_secrets_is_found_by_name_and_line_never_shown() {
        let secrets = vec![("MY_TOKEN".to_string(), "s3cr3t-value".to_string())];
        assert_eq!(leaked("one\ntwo s3cr3t-value\n", &secrets), Some(("MY_TOKEN".into(), 2)));
        assert_eq!(leaked("nothing", &secrets), None);
        assert!(secret_name("GITHUB_TOKEN") && secret_name("anthropic_api_key") && !secret_name("PATH"));
        assert!(token_shape("abcdef0123456789abcdef") && !token_shape("/usr/local/bin:/usr/bin:/bin/x"));
        assert!(!token_shape("C.UTF-8") && !token_shape("aaaaaaaaaaaaaaaaaaaaaaaa"));
    }
}
