//! The shell grammar's side of the analysis (BASH-2): a command string parsed with tree-sitter-bash and
//! walked iteratively into its simple commands ([`analyse`] → [`Analysis`], [`Segment`]), with what
//! each one's redirections write and the variables the command assigns.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

/// A parse that takes longer is abandoned ([`Analysis::parsed`] false).
pub const PARSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Redirection targets that are not files.
const HARMLESS_TARGETS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2"];

/// Node kinds that make a segment.
const SEGMENT_KINDS: &[&str] = &["command", "declaration_command", "unset_command", "test_command"];

/// Node kinds of redirections.
const REDIRECT_KINDS: &[&str] = &["file_redirect", "heredoc_redirect", "herestring_redirect"];

/// The analysis of one command string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// False when tree-sitter reported an ERROR / MISSING node anywhere, the parse failed or timed out, or a
    /// redirection has words bash would reject (`{ a; } > f extra`): callers fall back to "ask". The segments
    /// are then a best effort.
    pub parsed: bool,
    /// Every simple command, in source order, including those inside pipelines, `&&`/`||`/`;` lists,
    /// subshells `( … )`, groups `{ …; }`, command substitutions `$(…)` / backticks, process substitution,
    /// if/while/for/case bodies, function definitions' bodies; each as the source text of the command
    /// without its redirections and without leading variable assignments (e.g. `FOO=1 git push >out 2>&1`
    /// → `git push`). A command substitution nested in an argument yields both the outer command and
    /// the inner one(s).
    pub segments: Vec<Segment>,
    /// Some redirection anywhere writes a file, also one that belongs to no segment (`> f` alone).
    pub writes_file: bool,
    /// Names of the variables the command assigns (`FOO=1 cmd`, `FOO=1`, `export FOO=1`, `for f in …`), in
    /// source order.
    pub assigned: Vec<String>,
    /// The literal values the command assigns (`T=touch` → (`T`, `touch`)), in source order; an
    /// assignment whose value is not a plain literal (`T=$(…)`, `T=$x`) is left out. A variable named as
    /// a command (`T=touch; $T a`) is matched as each of them too (BASH-2).
    pub values: Vec<(String, String)>,
    /// The command split at its top-level pipes (`|`, `|&` of pipelines not inside a subshell, group,
    /// substitution or body), each part's source text trimmed: `a && b | c` → `a && b`, `c`. One part
    /// (the whole command, trimmed) when there is no such pipe. Claude Code 2.1.235 names the part a deny
    /// rule matched in its refusal (`echo xa | xargs touch` → `xargs touch`:
    /// `probes/claude-code/bash-deny-bypass.toml`).
    pub pipe_parts: Vec<String>,
}

/// One simple command of a command string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Source text of the simple command (name + arguments), as written, trimmed; what `Bash(git *)` rules
    /// match. When a redirection sits between two words (`echo >f hi`) the words are joined by one space.
    pub text: String,
    /// The command name as written (first word after assignments), e.g. `git`, `./run.sh`, `cd`; the keyword
    /// for `export` / `unset` / `[` / `[[`.
    pub name: String,
    /// The command name as the shell will look it up: the first word with its quotes and backslashes
    /// removed (`"touch"`, `t''ouch`, `\touch` → `touch`); None when it is not a plain literal (a
    /// variable, a substitution: `$T`, `$(echo touch)`), which no rule can be matched against.
    pub program: Option<String>,
    /// The argument words, unquoted where they are plain literal strings ('a b' → a b, "x" → x); a word with
    /// expansions keeps its source text.
    pub args: Vec<String>,
    /// It has an output redirection that writes a file (`>`, `>>`, `&>`, `>|`, `2>` to anything other than
    /// `/dev/null` or an fd dup like `2>&1`), its own or one of an enclosing group (`{ a; b; } > f`).
    pub writes_file: bool,
    /// The leading assignments as written (`FOO=1` of `FOO=1 git push`).
    pub assignments: Vec<String>,
    /// Some argument is not a plain literal (an expansion, a substitution, `$'…'`, a brace expression).
    pub dynamic: bool,
}

/// Parses `command` and lists its simple commands.
pub fn analyse(command: &str) -> Analysis {
    let Some(tree) = parse(command) else {
        return Analysis::default();
    };
    let root = tree.root_node();
    let mut walk = Walk {
        src: command,
        attached: HashMap::new(),
        write_targets: HashSet::new(),
        out: Analysis { parsed: !root.has_error(), ..Analysis::default() },
    };
    walk.run(root);
    walk.out.pipe_parts = pipe_parts(root, command);
    walk.out
}

/// [`Analysis::pipe_parts`]: the byte offsets of the pipes of pipelines reached from the root through
/// lists and pipelines only, and the source cut there.
fn pipe_parts(root: Node<'_>, src: &str) -> Vec<String> {
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "list" | "pipeline" => stack.push(child),
                "|" | "|&" if node.kind() == "pipeline" => cuts.push((child.start_byte(), child.end_byte())),
                _ => {}
            }
        }
    }
    cuts.sort_unstable();
    let mut parts = Vec::new();
    let mut from = 0;
    for (start, end) in cuts.into_iter().chain(std::iter::once((src.len(), src.len()))) {
        parts.push(src.get(from..start).unwrap_or("").trim().to_string());
        from = end;
    }
    parts
}

/// Parses with tree-sitter-bash, giving up after [`PARSE_TIMEOUT`].
fn parse(command: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    let bytes = command.as_bytes();
    let start = Instant::now();
    let mut cancel = |_: &ParseState| start.elapsed() > PARSE_TIMEOUT;
    let options = ParseOptions::new().progress_callback(&mut cancel);
    parser.parse_with_options(&mut |i, _| bytes.get(i..).unwrap_or_default(), None, Some(options))
}

/// The state of one walk over a tree.
struct Walk<'s, 't> {
    src: &'s str,
    /// Redirections of a `redirected_statement`, by the id of the segment node they belong to.
    attached: HashMap<usize, Vec<Node<'t>>>,
    /// Ids of compound nodes whose commands all write a file (`{ a; b; } > f`).
    write_targets: HashSet<usize>,
    out: Analysis,
}

impl<'s, 't> Walk<'s, 't> {
    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn run(&mut self, root: Node<'t>) {
        let mut stack: Vec<(Node<'t>, bool)> = vec![(root, false)];
        let mut cursor = root.walk();
        while let Some((node, inherited)) = stack.pop() {
            let writes = match node.kind() {
                // What a substitution writes goes to the outer command, not to the outer redirection.
                "command_substitution" | "process_substitution" => false,
                _ => inherited || self.write_targets.contains(&node.id()),
            };
            match node.kind() {
                "redirected_statement" => self.redirected_statement(node),
                "function_definition" => {
                    let redirects = children_of_kinds(node, REDIRECT_KINDS);
                    if let Some(body) = node.child_by_field_name("body") {
                        self.redirect_compound(body, &redirects);
                    }
                }
                "file_redirect" => self.out.writes_file |= self.redirect_writes(node),
                "variable_assignment" => {
                    if let Some(name) = self.assigned_name(node) {
                        let value = node.child_by_field_name("value").and_then(|v| literal(v, self.src));
                        if let Some(value) = value {
                            self.out.values.push((name.clone(), value));
                        }
                        self.out.assigned.push(name);
                    }
                }
                "for_statement" => {
                    if let Some(var) = node.child_by_field_name("variable") {
                        self.out.assigned.push(self.text(var).to_string());
                    }
                }
                kind if SEGMENT_KINDS.contains(&kind) => self.segment(node, writes),
                _ => {}
            }
            let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev().map(|c| (c, writes)));
        }
    }

    /// Attaches the redirections of a `redirected_statement` to the command they apply to: the last command of
    /// a pipeline or list (`a && b > f` redirects `b`, whatever the tree's nesting), else every command of the
    /// compound body (`{ a; b; } > f`).
    fn redirected_statement(&mut self, node: Node<'t>) {
        let redirects = flatten_redirects(children_of_kinds(node, REDIRECT_KINDS));
        match node.child_by_field_name("body") {
            Some(body) => {
                let target = last_command(body);
                if SEGMENT_KINDS.contains(&target.kind()) {
                    self.attached.entry(target.id()).or_default().extend(redirects);
                } else {
                    self.redirect_compound(target, &redirects);
                }
            }
            None => {
                if redirects.iter().any(|r| extra_destinations(*r).next().is_some()) {
                    self.out.parsed = false;
                }
            }
        }
    }

    /// Redirections of a compound command (group, subshell, loop, function body).
    fn redirect_compound(&mut self, body: Node<'t>, redirects: &[Node<'t>]) {
        let redirects = flatten_redirects(redirects.to_vec());
        if redirects.iter().any(|r| self.redirect_writes(*r)) {
            self.write_targets.insert(body.id());
        }
        // `{ a; } > f extra` is a syntax error in bash.
        if redirects.iter().any(|r| extra_destinations(*r).next().is_some()) {
            self.out.parsed = false;
        }
    }

    /// True when a redirection writes a file.
    fn redirect_writes(&self, redirect: Node<'_>) -> bool {
        if redirect.kind() != "file_redirect" {
            return false;
        }
        let mut cursor = redirect.walk();
        let operator = redirect.children(&mut cursor).find(|c| !c.is_named()).map(|c| c.kind());
        let target = redirect.child_by_field_name("destination").map(|d| self.word(d));
        let harmless = |t: &str| HARMLESS_TARGETS.contains(&t);
        match operator {
            Some(">" | ">>" | "&>" | "&>>" | ">|") => !target.is_some_and(|t| harmless(&t)),
            // `>&2`, `2>&1`, `>&-` duplicate or close a descriptor; `>& file` writes the file.
            Some(">&") => !target
                .is_some_and(|t| t == "-" || harmless(&t) || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))),
            _ => false,
        }
    }

    fn assigned_name(&self, assignment: Node<'_>) -> Option<String> {
        let name = assignment.child_by_field_name("name")?;
        let name = if name.kind() == "subscript" { name.child_by_field_name("name")? } else { name };
        Some(self.text(name).to_string())
    }

    /// A word unquoted when it is a plain literal, else its source text.
    fn word(&self, node: Node<'_>) -> String {
        literal(node, self.src).unwrap_or_else(|| self.text(node).to_string())
    }

    /// Records the segment of a command-like node.
    fn segment(&mut self, node: Node<'t>, inherited_writes: bool) {
        let mut cursor = node.walk();
        let mut words: Vec<Node<'t>> = Vec::new();
        let mut assignments = Vec::new();
        let mut redirects: Vec<Node<'t>> = Vec::new();
        if node.kind() == "command" {
            if node.child_by_field_name("name").is_none_or(|n| n.byte_range().is_empty()) {
                return;
            }
            for (i, child) in node.children(&mut cursor).enumerate() {
                let field = u32::try_from(i).ok().and_then(|i| node.field_name_for_child(i));
                match (field, child.kind()) {
                    (Some("name" | "argument"), _) => words.push(child),
                    (_, "variable_assignment") => assignments.push(self.text(child).to_string()),
                    (_, kind) if REDIRECT_KINDS.contains(&kind) => redirects.push(child),
                    _ => {}
                }
            }
        } else {
            for child in node.children(&mut cursor) {
                if REDIRECT_KINDS.contains(&child.kind()) {
                    redirects.push(child);
                } else if child.kind() != "comment" {
                    words.push(child);
                }
            }
            if node.kind() == "test_command" {
                words = flatten_test(words);
            }
        }
        redirects.extend(self.attached.remove(&node.id()).unwrap_or_default());
        let redirects = flatten_redirects(redirects);
        // tree-sitter-bash puts the words after a redirection's target into the redirection
        // (`echo >f hi there`): they are arguments of the command.
        for r in &redirects {
            words.extend(extra_destinations(*r));
        }
        words.sort_by_key(|w| w.start_byte());
        let (Some(first), Some(last)) = (words.first().copied(), words.last().copied()) else {
            return;
        };
        let interrupted =
            redirects.iter().any(|r| r.start_byte() < last.end_byte() && r.end_byte() > first.start_byte());
        let text = if interrupted {
            words.iter().map(|w| self.text(*w).trim()).collect::<Vec<_>>().join(" ")
        } else {
            self.src.get(first.start_byte()..last.end_byte()).unwrap_or("").trim().to_string()
        };
        let literals: Vec<Option<String>> = words[1..].iter().map(|w| literal(*w, self.src)).collect();
        let dynamic = literals.iter().any(Option::is_none);
        let args =
            words[1..].iter().zip(literals).map(|(w, l)| l.unwrap_or_else(|| self.text(*w).to_string())).collect();
        let writes_file = inherited_writes || redirects.iter().any(|r| self.redirect_writes(*r));
        self.out.segments.push(Segment {
            text,
            name: self.text(first).to_string(),
            // a keyword (`export`, `unset`, `[`, `[[`) is its own name
            program: if node.kind() == "command" {
                literal(first, self.src)
            } else {
                Some(self.text(first).to_string())
            },
            args,
            writes_file,
            assignments,
            dynamic,
        });
    }
}

/// The children of `node` of one of `kinds`.
fn children_of_kinds<'t>(node: Node<'t>, kinds: &[&str]) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).filter(|c| kinds.contains(&c.kind())).collect()
}

/// Redirections plus those a heredoc redirection holds (`cat <<EOF > out`: the `> out` is inside the heredoc's
/// node).
fn flatten_redirects(redirects: Vec<Node<'_>>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    for r in redirects {
        if r.kind() == "heredoc_redirect" {
            let mut cursor = r.walk();
            out.extend(r.children_by_field_name("redirect", &mut cursor));
        }
        out.push(r);
    }
    out
}

/// The destination words of a file redirection after its target: arguments of the command.
fn extra_destinations<'t>(redirect: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    let mut cursor = redirect.walk();
    let words: Vec<Node<'t>> = if redirect.kind() == "file_redirect" {
        redirect.children_by_field_name("destination", &mut cursor).skip(1).collect()
    } else {
        Vec::new()
    };
    words.into_iter()
}

/// The node a redirection after `node` applies to: the last element of a pipeline or `&&` / `||` list.
fn last_command(node: Node<'_>) -> Node<'_> {
    let mut node = node;
    loop {
        let next = match node.kind() {
            "list" | "pipeline" | "negated_command" => {
                let mut cursor = node.walk();
                let last = node.named_children(&mut cursor).filter(|c| c.kind() != "comment").last();
                last
            }
            "redirected_statement" => node.child_by_field_name("body"),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => return node,
        }
    }
}

/// The words of a test command: its expressions split at their operators (`[ -f x ]` → `[`, `-f`, `x`, `]`).
fn flatten_test(words: Vec<Node<'_>>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut stack: Vec<Node<'_>> = words.into_iter().rev().collect();
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "binary_expression" | "unary_expression" | "parenthesized_expression") {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        } else {
            out.push(node);
        }
    }
    out
}

/// The value of a word that is a plain literal (no expansion), with its quotes and escapes removed.
fn literal(node: Node<'_>, src: &str) -> Option<String> {
    let text = src.get(node.byte_range())?;
    let mut cursor = node.walk();
    match node.kind() {
        "word" => Some(unescape_word(text)),
        "number" => (node.named_child_count() == 0).then(|| text.to_string()),
        "raw_string" => text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).map(str::to_string),
        "string" => {
            // Plain: only `"`, string content, `"` (an expansion or substitution is a child node of its own).
            let inner = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))?;
            let last = node.child_count().saturating_sub(1);
            let plain = node.children(&mut cursor).enumerate().all(|(i, c)| {
                if i == 0 || i == last {
                    c.kind() == "\""
                } else {
                    c.kind() == "string_content"
                }
            });
            plain.then(|| unescape_double_quoted(inner))
        }
        "concatenation" | "command_name" => {
            let mut out = String::new();
            for child in node.children(&mut cursor) {
                out.push_str(&literal(child, src)?);
            }
            Some(out)
        }
        _ => None,
    }
}

/// An unquoted word without its backslashes (`a\ b` → `a b`, a backslash-newline disappears).
fn unescape_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            _ => out.push(c),
        }
    }
    out
}

/// The inside of a double-quoted string without its escapes (`\"`, `\\`, `\$`, `` \` ``, backslash-newline).
fn unescape_double_quoted(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('"' | '\\' | '$' | '`')) => {
                    chars.next();
                    out.push(next);
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::shell) fn texts(command: &str) -> Vec<String> {
        analyse(command).segments.into_iter().map(|s| s.text).collect()
    }

    pub(in crate::shell) fn only(command: &str) -> Segment {
        let a = analyse(command);
        assert!(a.parsed, "{command:?} should parse");
        assert_eq!(a.segments.len(), 1, "{command:?}: {:?}", a.segments);
        a.segments.into_iter().next().unwrap_or_else(|| panic!("no segment"))
    }

    #[test]
    fn and_list_is_two_segments() {
        let a = analyse("ls && git push");
        assert!(a.parsed);
        assert_eq!(texts("ls && git push"), ["ls", "git push"]);
        assert_eq!(a.segments[1].name, "git");
        assert_eq!(a.segments[1].args, ["push"]);
    }

    #[test]
    fn pipelines_lists_subshells_groups() {
        let command = "a | b -x; c || (d 'e f') && { g; }";
        let a = analyse(command);
        assert!(a.parsed);
        assert_eq!(texts(command), ["a", "b -x", "c", "d 'e f'", "g"]);
        assert_eq!(a.segments[3].args, ["e f"]);
        assert_eq!(a.segments[1].args, ["-x"]);
    }

    #[test]
    fn command_substitution_yields_outer_and_inner() {
        let a = analyse("echo $(git rev-parse HEAD) > out.txt");
        assert!(a.parsed);
        let t: Vec<&str> = a.segments.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(t, ["echo $(git rev-parse HEAD)", "git rev-parse HEAD"]);
        assert!(a.segments[0].writes_file);
        assert!(!a.segments[1].writes_file, "the substitution's output goes to echo, not to the file");
        assert!(a.segments[0].dynamic);
        assert!(a.writes_file);
    }

    #[test]
    fn assignments_and_redirections_are_left_out() {
        let s = only("FOO=1 rm -rf x 2>/dev/null");
        assert_eq!(s.text, "rm -rf x");
        assert_eq!(s.name, "rm");
        assert_eq!(s.args, ["-rf", "x"]);
        assert_eq!(s.assignments, ["FOO=1"]);
        assert!(!s.writes_file);

        let s = only("FOO=1 git push >out 2>&1");
        assert_eq!(s.text, "git push");
        assert!(s.writes_file);

        let s = only("2>/dev/null rm x");
        assert_eq!(s.text, "rm x");
        assert!(!s.writes_file);
    }

    #[test]
    fn if_for_case_while_bodies() {
        assert_eq!(texts("if true; then rm x; fi"), ["true", "rm x"]);
        let a = analyse("for f in *; do cat \"$f\"; done");
        assert!(a.parsed);
        assert_eq!(a.segments.len(), 1);
        assert_eq!(a.segments[0].text, "cat \"$f\"");
        assert_eq!(a.segments[0].args, ["\"$f\""]);
        assert!(a.segments[0].dynamic);
        assert_eq!(a.assigned, ["f"]);
        assert_eq!(texts("case $x in a) rm y;; esac"), ["rm y"]);
        assert_eq!(texts("while read l; do echo $l; done < in.txt"), ["read l", "echo $l"]);
    }

    #[test]
    fn function_bodies_are_segments() {
        let a = analyse("f() { rm x; }; f");
        assert!(a.parsed);
        assert_eq!(texts("f() { rm x; }; f"), ["rm x", "f"]);
        let a2 = analyse("f() { rm x; } > o; f");
        assert!(a2.segments[0].writes_file);
        assert!(!a2.segments[1].writes_file);
        assert!(!a.segments[0].writes_file);
    }

    #[test]
    fn backticks_and_process_substitution() {
        assert_eq!(texts("echo `ls -a`"), ["echo `ls -a`", "ls -a"]);
        assert_eq!(texts("diff <(ls a) >(tee b)"), ["diff <(ls a) >(tee b)", "ls a", "tee b"]);
        assert_eq!(texts("echo \"$(id)\" ${x:-$(whoami)}"), ["echo \"$(id)\" ${x:-$(whoami)}", "id", "whoami"]);
        assert_eq!(texts("x=$((1+$(ls)))"), ["ls"]);
    }

    #[test]
    fn literal_arguments_are_unquoted() {
        let s = only(r#"echo a\ b "x\"y" 'c d' pre"mid"'s' $v $'q' {1,2} "$HOME""#);
        assert_eq!(s.args, ["a b", "x\"y", "c d", "premids", "$v", "$'q'", "{1,2}", "\"$HOME\""]);
        assert!(s.dynamic);
        assert!(!only("echo 'a' \"b\" c").dynamic);
    }

    #[test]
    fn keywords_and_tests_are_segments() {
        let a = analyse("export A=1 B; unset C; [ -f x ] && [[ -d y ]]");
        let names: Vec<&str> = a.segments.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["export", "unset", "[", "[["]);
        assert_eq!(a.segments[2].args, ["-f", "x", "]"]);
        assert_eq!(a.segments[2].text, "[ -f x ]");
        assert_eq!(a.assigned, ["A"]);
    }

    #[test]
    fn top_level_pipes_cut_the_command_into_parts() {
        let parts = |c: &str| analyse(c).pipe_parts;
        assert_eq!(parts("echo xa | xargs touch"), ["echo xa", "xargs touch"]);
        assert_eq!(parts("a && b | c |& d"), ["a && b", "c", "d"]);
        assert_eq!(parts("a; b || c"), ["a; b || c"]);
        assert_eq!(parts("(a | b) && echo 'x | y'"), ["(a | b) && echo 'x | y'"]);
        assert_eq!(parts(" touch plain "), ["touch plain"]);
    }

    #[test]
    fn literal_values_of_assignments() {
        let a = analyse("T=touch; U=$(echo x) V='a b' $T x");
        assert_eq!(a.values, [("T".to_string(), "touch".to_string()), ("V".to_string(), "a b".to_string())]);
    }
}
