//! The script engine of the Workflow tool (WF-1): QuickJS-NG through `rquickjs`, one runtime per run, on
//! a thread of its own (the caller's blocking thread).
//!
//! The body (the script after its `meta` header) runs inside an `async` function, so top-level `await`
//! and `return` work as in the reference. The globals are the reference's hooks: `agent`, `parallel`,
//! `pipeline`, `phase`, `log`, `console`, `args`, `budget`, `workflow` (which refuses: nesting is not
//! implemented). There is no filesystem, module loader, timer or host API beyond these.
//!
//! `agent()` is synchronous underneath: the host call blocks this thread until the caller's agent loop
//! answers, then returns a settled promise. `parallel()` and `pipeline()` therefore start their agents
//! one at a time, in the order the script's promises reach them — the journal order and the stub's
//! request order are the same on every run (the reference runs up to 16 at once).
//!
//! Determinism at run time: `Date.now`, `Math.random`, `Date()` and argless `new Date()` throw; `new
//! Date(x)` and the rest of `Date` work. The static check (`check.rs`) refuses inline scripts that name
//! them; scripts from a file or a name meet these throwing globals instead.

use rquickjs::{Context, Ctx, Function, Runtime};
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Heap of a script's runtime (WF-1: scripts are orchestration code, not data processing).
pub const SCRIPT_MEMORY_LIMIT: usize = 256 * 1024 * 1024;
/// JavaScript stack of a script's runtime.
pub const SCRIPT_STACK_LIMIT: usize = 1024 * 1024;
/// Items one `parallel()` / `pipeline()` call accepts (WF-1: the reference's "at most 4096 items").
pub const MAX_PARALLEL_ITEMS: usize = 4096;

/// How a script ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// It returned this value (`None`: `undefined`).
    Returned(Option<Value>),
    /// It threw (or its promise rejected) with this message.
    Threw(String),
    /// It was stopped (TaskStop, the session's end).
    Stopped,
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// How it ended.
    pub end: End,
    /// `log()` / `console.*` lines, in order.
    pub logs: Vec<String>,
    /// `phase()` titles, in order.
    pub phases: Vec<String>,
}

const PRELUDE: &str = r#"
(() => {
  const g = globalThis;
  const host = { agent: g.__wf_agent, log: g.__wf_log, phase: g.__wf_phase, finish: g.__wf_finish };
  const argsJson = g.__wf_args;
  for (const k of ['__wf_agent', '__wf_log', '__wf_phase', '__wf_finish', '__wf_args']) delete g[k];
  const refuse = (what) => function () {
    throw new Error(what + ' is unavailable in workflow scripts (it would break resume). Pass timestamps in via args, stamp results after the workflow returns, and vary prompts by index instead of randomness.');
  };
  const RealDate = Date;
  RealDate.now = refuse('Date.now()');
  Math.random = refuse('Math.random()');
  g.Date = new Proxy(RealDate, {
    construct(target, a, nt) {
      if (a.length === 0) refuse('new Date()')();
      return Reflect.construct(target, a, nt);
    },
    apply() { refuse('Date()')(); },
  });
  const show = (x) => {
    if (typeof x === 'string') return x;
    try { const s = JSON.stringify(x); return s === undefined ? String(x) : s; } catch (e) { return String(x); }
  };
  const promptText = (p) => (p !== null && (typeof p === 'object' || typeof p === 'function')) ? '[' + typeof p + ']' : String(p);
  g.agent = (prompt, opts) => {
    let answer;
    try {
      answer = JSON.parse(host.agent(promptText(prompt), JSON.stringify(opts === undefined ? null : opts) ?? 'null'));
    } catch (e) {
      return Promise.reject(e);
    }
    return 'error' in answer ? Promise.reject(new Error(answer.error)) : Promise.resolve(answer.ok);
  };
  const tooMany = (name, n) => new RangeError(name + '() accepts at most __MAX__ items; got ' + n + '. Split the list.');
  g.parallel = (thunks) => {
    if (!Array.isArray(thunks)) return Promise.reject(new TypeError('parallel() expects an array of functions'));
    if (thunks.length > __MAX__) return Promise.reject(tooMany('parallel', thunks.length));
    return Promise.all(thunks.map((t) => Promise.resolve().then(() => t()).catch(() => null)));
  };
  g.pipeline = (items, ...stages) => {
    if (!Array.isArray(items)) return Promise.reject(new TypeError('pipeline() expects an array of items'));
    if (items.length > __MAX__) return Promise.reject(tooMany('pipeline', items.length));
    return Promise.all(items.map(async (item, i) => {
      let r = item;
      for (const stage of stages) {
        try { r = await stage(r, item, i); } catch (e) { return null; }
      }
      return r;
    }));
  };
  g.log = (m) => { host.log(show(m)); };
  g.phase = (t) => { host.phase(String(t)); };
  const line = (prefix) => (...a) => { host.log(prefix + a.map(show).join(' ')); };
  g.console = { log: line(''), info: line(''), debug: line(''), warn: line('[warn] '), error: line('[error] ') };
  g.budget = Object.freeze({ total: null, spent: () => 0, remaining: () => Infinity });
  g.workflow = () => Promise.reject(new Error('workflow() is not available in this runtime: run the other workflow with its own Workflow call.'));
  g.args = argsJson === undefined ? undefined : JSON.parse(argsJson);
  g.__wf_settle = (p) => p.then(
    (v) => {
      let out;
      try { out = v === undefined ? '{"undefined":true}' : JSON.stringify({ ok: v }); }
      catch (e) { out = JSON.stringify({ error: 'the workflow returned a value that is not JSON: ' + String(e && e.message !== undefined ? e.message : e) }); }
      host.finish(out);
    },
    (e) => { host.finish(JSON.stringify({ error: String(e && e.message !== undefined ? e.message : e) })); },
  );
})();
"#;

/// Why an `agent()` call rejects: the message of the error its promise rejects with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejection(pub String);

/// An exception raised while the script was being set up: its message (with the line for a syntax
/// error), what the run ends with.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Thrown(String);

/// Runs `body` with `args` as the global `args`. `agent(prompt, opts)` is answered by `agent`: `Ok(value)`
/// resolves the script's promise with it, a [`Rejection`] rejects it. `stop` set interrupts the script.
pub fn run(
    body: &str,
    args: Option<&Value>,
    agent: impl FnMut(String, Value) -> Result<Value, Rejection> + 'static,
    stop: Arc<AtomicBool>,
) -> Outcome {
    let logs = Rc::new(RefCell::new(Vec::new()));
    let phases = Rc::new(RefCell::new(Vec::new()));
    let end = run_inner(body, args, agent, stop.clone(), logs.clone(), phases.clone());
    let end = if stop.load(Ordering::SeqCst) { End::Stopped } else { end };
    let logs = logs.borrow().clone();
    let phases = phases.borrow().clone();
    Outcome { end, logs, phases }
}

fn run_inner(
    body: &str,
    args: Option<&Value>,
    agent: impl FnMut(String, Value) -> Result<Value, Rejection> + 'static,
    stop: Arc<AtomicBool>,
    logs: Rc<RefCell<Vec<String>>>,
    phases: Rc<RefCell<Vec<String>>>,
) -> End {
    let rt = match Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return End::Threw(format!("the script engine cannot start: {e}")),
    };
    rt.set_memory_limit(SCRIPT_MEMORY_LIMIT);
    rt.set_max_stack_size(SCRIPT_STACK_LIMIT);
    rt.set_interrupt_handler(Some(Box::new(move || stop.load(Ordering::SeqCst))));
    let ctx = match Context::full(&rt) {
        Ok(c) => c,
        Err(e) => return End::Threw(format!("the script engine cannot start: {e}")),
    };
    let done: Rc<RefCell<Option<String>>> = Rc::default();
    let agent = Rc::new(RefCell::new(agent));
    let started = ctx.with(|ctx| -> Result<(), Thrown> {
        let g = ctx.globals();
        let a = agent.clone();
        let f = Function::new(ctx.clone(), move |prompt: String, opts: String| -> String {
            let opts: Value = serde_json::from_str(&opts).unwrap_or(Value::Null);
            let answer = match a.try_borrow_mut() {
                Ok(mut call) => (*call)(prompt, opts),
                Err(_) => Err(Rejection("agent() cannot be called from inside an agent() call".into())),
            };
            match answer {
                Ok(v) => serde_json::json!({ "ok": v }).to_string(),
                Err(e) => serde_json::json!({ "error": e.0 }).to_string(),
            }
        });
        set(&ctx, &g, "__wf_agent", f)?;
        let l = logs.clone();
        set(&ctx, &g, "__wf_log", Function::new(ctx.clone(), move |m: String| l.borrow_mut().push(m)))?;
        let p = phases.clone();
        set(&ctx, &g, "__wf_phase", Function::new(ctx.clone(), move |t: String| p.borrow_mut().push(t)))?;
        let d = done.clone();
        set(&ctx, &g, "__wf_finish", Function::new(ctx.clone(), move |out: String| *d.borrow_mut() = Some(out)))?;
        if let Some(a) = args {
            g.set("__wf_args", a.to_string()).map_err(|e| exception(&ctx, e))?;
        }
        let prelude = PRELUDE.replace("__MAX__", &MAX_PARALLEL_ITEMS.to_string());
        ctx.eval::<(), _>(prelude).map_err(|e| exception(&ctx, e))?;
        let main = format!("__wf_settle((async () => {{\n{body}\n}})());");
        ctx.eval::<(), _>(main).map_err(|e| exception(&ctx, e))?;
        Ok(())
    });
    if let Err(e) = started {
        return End::Threw(e.0);
    }
    loop {
        match rt.execute_pending_job() {
            Ok(true) => continue,
            Ok(false) => break,
            Err(_) => continue,
        }
    }
    let out = done.borrow().clone();
    match out {
        None => End::Threw("the workflow never settled: its promise was still pending when no work was left".into()),
        Some(out) => {
            let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
            if let Some(e) = v.get("error").and_then(Value::as_str) {
                End::Threw(e.to_string())
            } else if v.get("undefined").is_some() {
                End::Returned(None)
            } else {
                End::Returned(v.get("ok").cloned())
            }
        }
    }
}

fn set<'js>(
    ctx: &Ctx<'js>,
    g: &rquickjs::Object<'js>,
    name: &str,
    f: rquickjs::Result<Function<'js>>,
) -> Result<(), Thrown> {
    let f = f.map_err(|e| exception(ctx, e))?;
    g.set(name, f).map_err(|e| exception(ctx, e))
}

/// The text of a failed engine call: the pending exception's message (with the line for syntax errors).
fn exception(ctx: &Ctx<'_>, e: rquickjs::Error) -> Thrown {
    Thrown(exception_text(ctx, e))
}

fn exception_text(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    if !matches!(e, rquickjs::Error::Exception) {
        return e.to_string();
    }
    let v = ctx.catch();
    if let Some(ex) = v.as_exception() {
        let name: Option<String> = ex.get("name").ok();
        let message = ex.message().unwrap_or_default();
        return match name {
            Some(n) if !n.is_empty() && n != "Error" => format!("{n}: {message}"),
            _ => message,
        };
    }
    v.as_string().and_then(|s| s.to_string().ok()).unwrap_or_else(|| "the script threw a non-error value".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn go(body: &str, answers: Vec<Value>) -> (Outcome, Vec<(String, Value)>) {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = seen.clone();
        let mut answers = answers.into_iter();
        let out = run(
            body,
            Some(&json!({"n": 2})),
            move |p, o| {
                s.borrow_mut().push((p, o));
                Ok(answers.next().unwrap_or(Value::Null))
            },
            Arc::default(),
        );
        let calls = seen.borrow().clone();
        (out, calls)
    }

    #[test]
    fn agents_in_order_and_the_return_value() {
        let (out, calls) = go(
            "phase('Go')\nconst a = await agent('one')\nconst b = await agent('two ' + a, {label: 'x'})\nlog('got ' + b)\nreturn { a, b, n: args.n }",
            vec![json!("R1"), json!("R2")],
        );
        assert_eq!(out.end, End::Returned(Some(json!({"a": "R1", "b": "R2", "n": 2}))));
        assert_eq!(out.logs, vec!["got R2"]);
        assert_eq!(out.phases, vec!["Go"]);
        assert_eq!(calls, vec![("one".into(), Value::Null), ("two R1".into(), json!({"label": "x"}))]);
    }

    #[test]
    fn parallel_and_pipeline_are_deterministic() {
        let (out, calls) = go(
            "const r = await pipeline(['a', 'b'], (x) => agent('s1 ' + x), (r, x, i) => agent('s2 ' + x + i))\nconst p = await parallel([() => agent('p1'), () => { throw new Error('no') }])\nreturn [r, p]",
            vec![json!(1), json!(2), json!(3), json!(4), json!(5)],
        );
        let prompts: Vec<&str> = calls.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(prompts, vec!["s1 a", "s1 b", "s2 a0", "s2 b1", "p1"]);
        assert_eq!(out.end, End::Returned(Some(json!([[3, 4], [5, null]]))));
    }

    #[test]
    fn clock_and_randomness_throw() {
        for body in ["return Date.now()", "return Math.random()", "return new Date()", "return Date()"] {
            let (out, _) = go(body, vec![]);
            assert!(
                matches!(&out.end, End::Threw(m) if m.contains("unavailable in workflow scripts")),
                "{body}: {out:?}"
            );
        }
        let (out, _) = go("return new Date(0).toISOString()", vec![]);
        assert_eq!(out.end, End::Returned(Some(json!("1970-01-01T00:00:00.000Z"))));
    }

    #[test]
    fn errors_and_undefined() {
        let (out, _) = go("throw new Error('boom')", vec![]);
        assert_eq!(out.end, End::Threw("boom".into()));
        let (out, _) = go("const x = 1", vec![]);
        assert_eq!(out.end, End::Returned(None));
        let (out, _) = go("return typeof require + typeof process + typeof setTimeout", vec![]);
        assert_eq!(out.end, End::Returned(Some(json!("undefinedundefinedundefined"))));
    }

    #[test]
    fn a_stopped_script_ends() {
        let stop = Arc::new(AtomicBool::new(true));
        let out = run("while (true) {}", None, |_, _| Ok(Value::Null), stop);
        assert_eq!(out.end, End::Stopped);
    }
}
