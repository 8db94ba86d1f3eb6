//! Shared helpers of the probelab benchmarks: a session of the built-in runtime in a directory, as the
//! lab starts one, and its tools by name.

use probelab_runtime::builtin::{self, SessionConfig};
use probelab_runtime::config::PluginSpec;
use probelab_runtime::model::Model;
use probelab_runtime::{Runtime, Tool};
use std::path::Path;
use std::sync::Arc;

/// A built-in tool by name.
pub fn tool(name: &str) -> Arc<dyn Tool> {
    builtin::registry().get(name).unwrap_or_else(|| panic!("no {name} tool"))
}

/// A session of the built-in runtime with `root/work` as cwd and `root/home` as HOME (both created),
/// this model (token counting estimated without one) and these plugins.
pub async fn session(root: &Path, model: Option<Arc<dyn Model>>, plugins: Vec<PluginSpec>) -> Runtime {
    let root = root.canonicalize().unwrap_or_else(|e| panic!("{e}"));
    for d in ["work", "home"] {
        std::fs::create_dir_all(root.join(d)).unwrap_or_else(|e| panic!("{e}"));
    }
    let config = SessionConfig {
        cwd: root.join("work"),
        home: root.join("home"),
        roots: vec![root.clone()],
        model,
        plugins,
        ..SessionConfig::default()
    };
    builtin::start(config).await.unwrap_or_else(|e| panic!("{e}"))
}

/// The benches' tokio runtime: two workers (this machine's cores), timers and I/O on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start a tokio runtime: {e}"))
}
