//! WebSearch (WEB-2): a query of 2 chars or more, `allowed_domains` or `blocked_domains` (not both),
//! answered by the search provider behind the Messages API: like Claude Code 2.1.235, the tool sends a
//! side request carrying the `web_search` server tool (`web_search_20250305`, `max_uses` 8, the domain
//! lists, `tool_choice` forcing it) and turns the `server_tool_use` / `web_search_tool_result` / text
//! blocks of the answer into its result. In a probe the stub is that provider: it answers from the
//! probe's `[stub] search_results`, filtered by the domain lists (stub-messages' script doc), so both
//! subjects hit the same provider.
//!
//! Result text, as the reference words it: `Web search results for query: "Q"`, then per search
//! `Links: [{"title":…,"url":…}]` (or `No links found.`), the model's text between searches, and the
//! closing `REMINDER: You MUST include the sources above …`. A session may search
//! [`DEFAULT_MAX_SEARCHES_PER_SESSION`] times (`CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION`); past that a
//! call answers the reference's budget text without searching.
//!
//! Decisions: the returned links are filtered by the domain lists again on the client side (the
//! provider filters already; a provider that does not is not trusted); the query length is checked by
//! the tool, its text in the built-in runtime's InputValidationError style (the reference's is zod's).

use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use crate::wire::ContentBlock;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

/// Shortest query (WEB-2).
pub const MIN_QUERY_CHARS: usize = 2;
/// `max_uses` of the server tool (WEB-2; the reference's 8).
pub const MAX_USES: u64 = 8;
/// Searches a session may make (WEB-2; the reference's default 200).
pub const DEFAULT_MAX_SEARCHES_PER_SESSION: u64 = 200;
/// The env that changes [`DEFAULT_MAX_SEARCHES_PER_SESSION`].
pub const ENV_MAX_SEARCHES: &str = "CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION";
/// Result budget (PIPE-5; the reference's `maxResultSizeChars` 100,000).
pub const MAX_RESULT_SIZE_CHARS: usize = 100_000;
/// The server tool's type.
pub const SERVER_TOOL_TYPE: &str = "web_search_20250305";
/// System prompt of the search side request (the reference's).
pub const SEARCH_SYSTEM_PROMPT: &str = "You are an assistant for performing a web search tool use";
/// What the search side request's user message puts before the query (the reference's wording).
pub const SEARCH_PROMPT_PREFIX: &str = "Perform a web search for the query: ";
/// The closing line of every result.
pub const REMINDER: &str =
    "REMINDER: You MUST include the sources above in your response to the user using markdown hyperlinks.";

/// The WebSearch tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WebSearch;

#[derive(Debug, Deserialize)]
pub struct Args {
    query: String,
    #[serde(default)]
    allowed_domains: Option<Vec<String>>,
    #[serde(default)]
    blocked_domains: Option<Vec<String>>,
}

/// One part of a search result: the model's text, or a search's links (`None`: an error code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text between searches.
    Text(String),
    /// A search's hits as `(title, url)`.
    Links(Vec<(String, String)>),
}

/// The parts of a search answer, in the reference's order (text flushed at each `server_tool_use`).
pub fn parts(content: &[ContentBlock], allowed: &[String], blocked: &[String]) -> Vec<Part> {
    let mut out = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<Part>| {
        if !text.trim().is_empty() {
            out.push(Part::Text(text.trim().to_string()));
        }
        text.clear();
    };
    for b in content {
        match b {
            ContentBlock::ServerToolUse { .. } => flush(&mut text, &mut out),
            ContentBlock::WebSearchToolResult { content, .. } => match content.as_array() {
                Some(hits) => out.push(Part::Links(
                    hits.iter()
                        .map(|h| {
                            let s = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                            (s("title"), s("url"))
                        })
                        .filter(|(_, url)| domain_allowed(url, allowed, blocked))
                        .collect(),
                )),
                None => {
                    let code = content.get("error_code").and_then(Value::as_str).unwrap_or("unknown");
                    out.push(Part::Text(format!("Web search error: {code}")));
                }
            },
            ContentBlock::Text { text: t } => text.push_str(t),
            _ => {}
        }
    }
    flush(&mut text, &mut out);
    out
}

/// True when a result's URL passes the call's domain lists: its host is in some allowed domain (when
/// any is given) and in no blocked one. A domain covers itself and its subdomains; case, a trailing dot
/// and a leading `*.` do not matter. A URL without a host (unparseable) is in no domain.
pub fn domain_allowed(url: &str, allowed: &[String], blocked: &[String]) -> bool {
    let host = reqwest::Url::parse(url).ok().and_then(|u| u.host_str().map(|h| h.trim_end_matches('.').to_string()));
    let covers = |domain: &String| {
        let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
        let d = d.strip_prefix("*.").unwrap_or(&d);
        host.as_deref()
            .is_some_and(|h| !d.is_empty() && (h == d || h.strip_suffix(d).is_some_and(|p| p.ends_with('.'))))
    };
    (allowed.is_empty() || allowed.iter().any(covers)) && !blocked.iter().any(covers)
}

/// The tool_result text (the reference's `mapToolResultToToolResultBlockParam`).
pub fn result_text(query: &str, parts: &[Part]) -> String {
    let mut out = format!("Web search results for query: \"{query}\"\n\n");
    for p in parts {
        match p {
            Part::Text(t) => out.push_str(&format!("{t}\n\n")),
            Part::Links(l) if l.is_empty() => out.push_str("No links found.\n\n"),
            Part::Links(l) => {
                let v: Vec<Value> = l.iter().map(|(t, u)| json!({"title": t, "url": u})).collect();
                out.push_str(&format!("Links: {}\n\n", Value::Array(v)));
            }
        }
    }
    out.push('\n');
    out.push_str(REMINDER);
    out.trim().to_string()
}

/// The search side request's body.
pub fn request_body(model: &str, query: &str, allowed: &[String], blocked: &[String]) -> Value {
    let mut tool = json!({"type": SERVER_TOOL_TYPE, "name": "web_search", "max_uses": MAX_USES});
    if !allowed.is_empty() {
        tool["allowed_domains"] = json!(allowed);
    }
    if !blocked.is_empty() {
        tool["blocked_domains"] = json!(blocked);
    }
    json!({
        "model": model,
        "max_tokens": crate::agent::MAX_TOKENS,
        "stream": true,
        "system": [{"type": "text", "text": SEARCH_SYSTEM_PROMPT}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": format!("{SEARCH_PROMPT_PREFIX}{query}")}]}],
        "tools": [tool],
        "tool_choice": {"type": "tool", "name": "web_search"},
    })
}

fn session_cap(ctx: &ToolContext) -> u64 {
    ctx.env(ENV_MAX_SEARCHES).and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_MAX_SEARCHES_PER_SESSION)
}

/// The month line of the description: the current month, as the reference shows it.
fn current_month() -> String {
    jiff::Zoned::now().strftime("%B %Y").to_string()
}

impl TypedTool for WebSearch {
    const NAME: &'static str = "WebSearch";
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    const MAX_RESULT_SIZE_CHARS: Option<usize> = Some(MAX_RESULT_SIZE_CHARS);
    type Args = Args;

    fn description(&self) -> String {
        format!(
            "Search the web. Returns result blocks with titles and URLs. US-only.\n\n- The current month is {} \u{2014} use this when searching for recent information.\n- `allowed_domains` / `blocked_domains` filter results.\n- After answering from results, end with a \"Sources:\" list of the URLs you used as markdown links.",
            current_month()
        )
    }

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "query": {"description": "The search query to use", "type": "string", "minLength": MIN_QUERY_CHARS},
                "allowed_domains": {
                    "description": "Only include search results from these domains",
                    "type": "array",
                    "items": {"type": "string"}
                },
                "blocked_domains": {
                    "description": "Never include search results from these domains",
                    "type": "array",
                    "items": {"type": "string"}
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.query.chars().count() < MIN_QUERY_CHARS {
            return Err(ToolError::Validation(crate::validation::tool_failed(
                Self::NAME,
                &[crate::validation::too_short("query", MIN_QUERY_CHARS)],
            )));
        }
        let allowed = args.allowed_domains.unwrap_or_default();
        let blocked = args.blocked_domains.unwrap_or_default();
        if !allowed.is_empty() && !blocked.is_empty() {
            return Err(ToolError::Validation(
                "Error: Cannot specify both allowed_domains and blocked_domains in the same request".into(),
            ));
        }
        let web = ctx.session.state::<crate::tools::web_fetch::Web>();
        let cap = session_cap(ctx);
        let made = web.searches.load(Ordering::SeqCst);
        if made >= cap {
            return Ok(ToolOutput::Text(result_text(
                &args.query,
                &[Part::Text(format!("Web search was not performed: this session has used its web search budget ({made} of {cap} WebSearch calls). Continue with the information already gathered instead of issuing more searches. If more searches are genuinely needed, ask the user to raise {ENV_MAX_SEARCHES}."))],
            )));
        }
        web.searches.fetch_add(1, Ordering::SeqCst);
        let Some(model) = &ctx.session.model else {
            return Err(ToolError::Runtime("WebSearch needs the session's Messages API (the search provider)".into()));
        };
        let body = request_body(model.model(), &args.query, &allowed, &blocked);
        let message = model.create(&body).await.map_err(|e| ToolError::Runtime(format!("WebSearch: {e}")))?;
        let parts = parts(&message.content, &allowed, &blocked);
        Ok(ToolOutput::Text(result_text(&args.query, &parts)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_worded_like_the_reference() {
        let content = vec![
            ContentBlock::ServerToolUse { id: "s1".into(), name: "web_search".into(), input: json!({"query": "q"}) },
            ContentBlock::WebSearchToolResult {
                tool_use_id: "s1".into(),
                content: json!([{"type": "web_search_result", "title": "A", "url": "https://a.test/x"},
                                {"type": "web_search_result", "title": "B", "url": "https://b.test/y"}]),
            },
            ContentBlock::Text { text: "Found.".into() },
        ];
        let p = parts(&content, &[], &["b.test".to_string()]);
        assert_eq!(
            result_text("rust async", &p),
            "Web search results for query: \"rust async\"\n\nLinks: [{\"title\":\"A\",\"url\":\"https://a.test/x\"}]\n\nFound.\n\n\nREMINDER: You MUST include the sources above in your response to the user using markdown hyperlinks."
        );
        let empty = vec![ContentBlock::WebSearchToolResult { tool_use_id: "s".into(), content: json!([]) }];
        assert!(result_text("q", &parts(&empty, &[], &[])).contains("\n\nNo links found.\n\n\nREMINDER"));
    }

    #[test]
    fn domains_cover_themselves_and_their_subdomains_only() {
        let d = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(domain_allowed("https://docs.A.test/x", &d(&["a.test"]), &[]));
        assert!(domain_allowed("https://a.test:8/x", &d(&["*.a.test."]), &[]));
        assert!(!domain_allowed("https://nota.test/x", &d(&["a.test"]), &[]));
        assert!(!domain_allowed("https://u:p@b.a.test/?q", &[], &d(&["A.TEST"])));
        assert!(domain_allowed("https://b.test/", &[], &d(&["a.test"])));
        assert!(!domain_allowed("not a url", &d(&["a.test"]), &[]));
        assert!(domain_allowed("not a url", &[], &d(&["a.test"])));
    }

    #[test]
    fn the_side_request_carries_the_server_tool() {
        let b = request_body("m", "q", &["a.test".into()], &[]);
        assert_eq!(
            b["tools"][0],
            json!({"type": SERVER_TOOL_TYPE, "name": "web_search", "max_uses": 8, "allowed_domains": ["a.test"]})
        );
        assert_eq!(b["messages"][0]["content"][0]["text"], "Perform a web search for the query: q");
    }
}
