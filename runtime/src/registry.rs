//! The tool pool: [`Registry`], built-ins sorted by name as one prefix, then MCP tools (PIPE-7).
//! Which tools a session has is decided by the composition root ([`crate::builtin`]), not here.

use crate::tool::Tool;
use serde_json::Value;
use std::sync::Arc;

/// The prefix of MCP tool names (`mcp__<server>__<tool>`, MCP-1).
pub const MCP_PREFIX: &str = "mcp__";

/// PIPE-7's order of the pool: built-ins by name, then MCP tools (`mcp__…`) by name.
pub fn pool_order(a: &str, b: &str) -> std::cmp::Ordering {
    (a.starts_with(MCP_PREFIX), a).cmp(&(b.starts_with(MCP_PREFIX), b))
}

/// The tool pool: built-ins sorted by name (PIPE-7), removable by deny rules (PIPE-6).
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    /// [`Registry::api_tools`], made at its first call: a tool's description and schema are functions
    /// of the tool alone ([`Tool::description`]), and building them took a third of a turn's cost in the
    /// lab (`benches/lab/benches/turn.rs`). Reset by whatever changes the pool.
    api: std::sync::OnceLock<Vec<Value>>,
    /// Descriptions and schemas sent in place of the tools' own (a version profile's texts:
    /// [`crate::tool_texts`]), by name.
    texts: std::collections::BTreeMap<&'static str, (String, Value)>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Registry {
    /// A pool of these tools, sorted by name; on a name clash the first one given wins.
    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Registry {
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for t in tools {
            if !out.iter().any(|o| o.name() == t.name()) {
                out.push(t);
            }
        }
        out.sort_by(|a, b| pool_order(a.name(), b.name()));
        Registry { tools: out, api: std::sync::OnceLock::new(), texts: Default::default() }
    }

    /// The pool with a session's MCP tools added (MCP-1, PIPE-7): built-ins stay one contiguous prefix
    /// sorted by name, MCP tools (`mcp__…`) follow, sorted by name; on a name clash the tool already in
    /// the pool (the built-in) wins.
    pub fn with_mcp(mut self, tools: Vec<Arc<dyn Tool>>) -> Registry {
        for t in tools {
            if self.get(t.name()).is_none() {
                self.tools.push(t);
            }
        }
        self.tools.sort_by(|a, b| pool_order(a.name(), b.name()));
        self.api = std::sync::OnceLock::new();
        self
    }

    /// The pool with these descriptions and schemas sent for the tools they name, in place of the tools'
    /// own ([`Registry::api_tools`]); a call's input is still validated against the tool's own schema.
    pub fn with_texts(mut self, texts: std::collections::BTreeMap<&'static str, (String, Value)>) -> Registry {
        self.texts = texts;
        self.api = std::sync::OnceLock::new();
        self
    }

    /// The input schema the pool sends for `tool` ([`Registry::with_texts`], else the tool's own).
    pub fn sent_schema(&self, tool: &dyn Tool) -> Value {
        self.texts.get(tool.name()).map(|(_, schema)| schema.clone()).unwrap_or_else(|| tool.input_schema())
    }

    /// Keeps the tools `keep` says yes to.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.tools.retain(|t| keep(t.name()));
        self.api = std::sync::OnceLock::new();
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Names in pool order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The `tools` array of a Messages request: every tool's name, description and schema, in pool order.
    pub fn api_tools(&self) -> &[Value] {
        self.api.get_or_init(|| {
            self.tools
                .iter()
                .map(|t| match self.texts.get(t.name()) {
                    Some((description, schema)) => {
                        serde_json::json!({"name": t.name(), "description": description, "input_schema": schema})
                    }
                    None => serde_json::json!({"name": t.name(), "description": t.description(), "input_schema": t.input_schema()}),
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ToolContext;
    use crate::tool::{ToolError, ToolOutput};
    use futures_util::future::BoxFuture;

    /// A tool named `.0` that answers `.1`.
    struct Named(&'static str, &'static str);

    impl Tool for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn description(&self) -> String {
            String::new()
        }
        fn input_schema(&self) -> Value {
            serde_json::json!({"type": "object"})
        }
        fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::Text(self.1.into())) })
        }
    }

    #[test]
    fn mcp_tools_follow_the_sorted_builtins_and_lose_clashes() {
        // PIPE-7: `zz` sorts after `mcp__…` by bytes, yet built-ins stay one prefix
        let builtins: Vec<Arc<dyn Tool>> = vec![Arc::new(Named("zz", "builtin")), Arc::new(Named("Read", "r"))];
        let pool = Registry::from_tools(builtins).with_mcp(vec![
            Arc::new(Named("mcp__s__b", "b")),
            Arc::new(Named("ListMcpResourcesTool", "l")),
            Arc::new(Named("mcp__a__z", "z")),
            Arc::new(Named("zz", "mcp")),
        ]);
        assert_eq!(pool.names(), ["ListMcpResourcesTool", "Read", "zz", "mcp__a__z", "mcp__s__b"]);
        let ctx =
            crate::context::ToolContext::for_sandbox(&std::env::temp_dir(), Arc::new(crate::model::EstimateTokens));
        let ctx = ctx.unwrap_or_else(|e| panic!("{e}"));
        let kept = pool.get("zz").unwrap_or_else(|| panic!("zz"));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rt.block_on(kept.call(Value::Null, &ctx)), Ok(ToolOutput::Text("builtin".into())));
    }
}
