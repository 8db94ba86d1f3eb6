//! Shell command analysis for the Bash tool (BASH-2, PIPE-4): a command string is parsed with tree-sitter-bash
//! (the grammar Claude Code itself uses) and split into its simple commands ("segments"), so that permission
//! rules such as `Bash(git *)` are matched per segment (`ls && git push` is two segments) and the tool can tell
//! whether a call is read-only. Never a regex, never a split on `&&`.
//!
//! [`analyse`] walks the syntax tree iteratively (an explicit stack: 10,000 nested parentheses do not overflow
//! the stack) and collects every simple command: in pipelines, `&&` / `||` / `;` / `&` lists, subshells, groups,
//! command and process substitutions (also inside strings, `${…}`, arithmetic and unquoted heredoc bodies),
//! `if` / `while` / `for` / `case` bodies and function bodies. `export` / `local` / `declare` / `readonly` /
//! `typeset`, `unset` and `[ … ]` / `[[ … ]]` are segments too (named by their keyword). A segment's text leaves
//! out leading assignments and redirections. A command the parser could not read completely
//! (ERROR / MISSING nodes, a parse over [`PARSE_TIMEOUT`], a redirection bash would reject) is reported with
//! [`Analysis::parsed`] false: callers then ask.
//!
//! [`is_read_only`] is true when the command parsed, has at least one segment, nothing writes a file through
//! a redirection (`>`, `>>`, `&>`, `&>>`, `>|`, `>&file`; `/dev/null`, `/dev/stdout`, `/dev/stderr` and fd
//! duplications such as `2>&1` do not count), every variable it assigns is harmless (see below) and every
//! segment is a read-only command of [`READ_ONLY_COMMANDS`], written as a plain word (`"ls"`, `\ls` or
//! `/bin/ls` are not recognised), with these restrictions:
//!
//! - `env` only without arguments (with arguments it runs a command);
//! - `find` unless an argument is `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint`, `-fprint0`,
//!   `-fprintf` or `-fls`;
//! - `sed` without `-i…` / `--in-place…` / `-f` / `--file`, and only when every script is made of commands that
//!   neither write nor execute (`p`, `d`, `q`, `=`, `s///` with flags among `gpiImM` and digits, `y///`, …:
//!   `w`, `W`, `e`, the `w` / `e` flags of `s` and anything unknown are refused);
//! - `sort` without `-o` / `--output` / `--compress-program`; `uniq` and `xxd` with at most one file operand
//!   (a second one is an output file); `tree` without `-o`; `date` without `-s` / `--set`; `file` without
//!   `-C` / `--compile`; `rg` without `--pre`;
//! - `git` with `--no-pager` / `-C <dir>` as the only global options and a read-only subcommand: `status`,
//!   `log`, `diff`, `show`, `rev-parse`, `ls-files`, `blame`, `describe` (none with `--output`), `branch` with no
//!   argument or only `-a` / `-r` / `--list` / `-v` / `-vv` (and their long forms, `--show-current`), `remote`
//!   with no argument or `-v`, `tag` with no argument or `-l` / `--list` (plus patterns), `config` with
//!   `--get` / `--get-all` / `--get-regexp` / `--list` / `-l` and no writing option;
//! - for `env`, `find`, `sed`, `sort`, `uniq`, `xxd`, `tree`, `date`, `file`, `rg` and `git`, an argument with an
//!   expansion (`$x`, `$(…)`, `$'…'`, `{a,b}`) is refused: it could expand to a writing option;
//! - `cd` is read-only: it changes only the shell's cwd ([`changes_directory`] reports it).
//!
//! A variable assignment (`FOO=1 cmd`, `FOO=1;`, `for f in …`) is harmless when its name has a lowercase letter
//! (a shell variable by convention) or is one of [`HARMLESS_ENV_VARS`] / `LC_*`: `PATH=…`, `LD_PRELOAD=…`,
//! `GIT_PAGER=…` make any command unsafe. Unknown commands are not read-only.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

/// Commands that only read (with the restrictions of the module documentation).
pub const READ_ONLY_COMMANDS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "stat",
    "file",
    "which",
    "type",
    "whoami",
    "id",
    "uname",
    "date",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "sort",
    "uniq",
    "cut",
    "tr",
    "diff",
    "cmp",
    "du",
    "df",
    "tree",
    "env",
    "printenv",
    "sleep",
    "seq",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "sha256sum",
    "md5sum",
    "cksum",
    "find",
    "sed",
    "git",
    "cd",
];

/// Upper-case variables a read-only command may be given (`LC_*` too): locale, time zone, terminal, colours.
pub const HARMLESS_ENV_VARS: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "LINES",
    "GREP_COLOR",
    "GREP_COLORS",
];

/// A parse that takes longer is abandoned ([`Analysis::parsed`] false).
pub const PARSE_TIMEOUT: Duration = Duration::from_secs(2);

/// `find` arguments that write, delete or execute.
const FIND_UNSAFE: &[&str] =
    &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];

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
    walk.out
}

/// True when every segment is a read-only command (documented list above), no segment writes a file,
/// and the command parsed. Unknown commands are not read-only, nor is a command without any segment.
pub fn is_read_only(command: &str) -> bool {
    let a = analyse(command);
    a.parsed
        && !a.writes_file
        && !a.segments.is_empty()
        && a.assigned.iter().all(|v| harmless_variable(v))
        && a.segments.iter().all(|s| !s.writes_file && segment_is_read_only(s))
}

/// True when some segment changes the shell's directory (`cd`, `pushd`, `popd`), wherever it is:
/// `cd sub && pwd`, `(cd x)`. Not for `echo cd`.
pub fn changes_directory(command: &str) -> bool {
    analyse(command).segments.iter().any(|s| matches!(s.name.as_str(), "cd" | "pushd" | "popd"))
}

/// The directory the last plain `cd` segment goes to (for reporting), e.g. for `cd sub && pwd` → `Some("sub")`;
/// `~` for a bare `cd`; None when there is no `cd`. (Used to tell the model that a backgrounded command's cd does
/// not move the session.)
pub fn cd_target(command: &str) -> Option<String> {
    let a = analyse(command);
    let cd = a.segments.iter().rev().find(|s| s.name == "cd")?;
    Some(cd.args.iter().find(|a| *a == "-" || !a.starts_with('-')).cloned().unwrap_or_else(|| "~".to_string()))
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

/// A variable a read-only command may be given: a shell variable (it has a lowercase letter) or a locale,
/// time-zone, terminal or colour variable.
fn harmless_variable(name: &str) -> bool {
    name.bytes().any(|b| b.is_ascii_lowercase()) || HARMLESS_ENV_VARS.contains(&name) || name.starts_with("LC_")
}

/// True when a short-option cluster (`-nro`) holds `flag`; the options of `with_value` take the rest of the
/// cluster as their value.
fn has_short(arg: &str, flag: char, with_value: &[char]) -> bool {
    let Some(rest) = arg.strip_prefix('-') else {
        return false;
    };
    if rest.starts_with('-') {
        return false;
    }
    for c in rest.chars() {
        if c == flag {
            return true;
        }
        if with_value.contains(&c) {
            return false;
        }
    }
    false
}

/// Operands (words not starting with `-`, or `-` alone).
fn operands(args: &[String]) -> usize {
    args.iter().filter(|a| *a == "-" || !a.starts_with('-')).count()
}

/// The read-only rules of [`READ_ONLY_COMMANDS`] for one segment.
fn segment_is_read_only(s: &Segment) -> bool {
    if !READ_ONLY_COMMANDS.contains(&s.name.as_str()) {
        return false;
    }
    let args = &s.args;
    let any = |p: &dyn Fn(&str) -> bool| args.iter().any(|a| p(a));
    match s.name.as_str() {
        "env" => args.is_empty(),
        "find" => !s.dynamic && !any(&|a| FIND_UNSAFE.contains(&a)),
        "sed" => !s.dynamic && sed_is_read_only(args),
        "sort" => {
            !s.dynamic
                && !any(&|a| {
                    a.starts_with("--output")
                        || a.starts_with("--compress-program")
                        || has_short(a, 'o', &['k', 't', 'S', 'T'])
                })
        }
        "uniq" | "xxd" => !s.dynamic && operands(args) <= 1,
        "tree" => !s.dynamic && !any(&|a| a.starts_with("--o") || has_short(a, 'o', &['L', 'P', 'I', 'H', 'T'])),
        "date" => !s.dynamic && !any(&|a| a.starts_with("--set") || has_short(a, 's', &['d', 'f', 'I', 'r'])),
        "file" => !s.dynamic && !any(&|a| a.starts_with("--compile") || has_short(a, 'C', &['e', 'F', 'f', 'm', 'P'])),
        "rg" => !s.dynamic && !any(&|a| a.starts_with("--pre")),
        "git" => !s.dynamic && git_is_read_only(args),
        _ => true,
    }
}

/// `git` with a read-only subcommand.
fn git_is_read_only(args: &[String]) -> bool {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "--no-pager" => i += 1,
            "-C" => i += 2,
            a if a.starts_with('-') => return false,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return false;
    };
    let rest: Vec<&str> = args[i + 1..].iter().map(String::as_str).collect();
    if rest.iter().any(|a| a.starts_with("--output")) {
        return false;
    }
    match sub.as_str() {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" | "describe" => true,
        "branch" => rest.iter().all(|a| {
            matches!(*a, "-a" | "-r" | "--list" | "-v" | "-vv" | "--all" | "--remotes" | "--verbose" | "--show-current")
        }),
        "remote" => rest.iter().all(|a| matches!(*a, "-v" | "--verbose")),
        "tag" => {
            rest.is_empty()
                || (rest.iter().any(|a| matches!(*a, "-l" | "--list"))
                    && rest.iter().all(|a| matches!(*a, "-l" | "--list") || !a.starts_with('-')))
        }
        "config" => {
            rest.iter().any(|a| matches!(*a, "--get" | "--get-all" | "--get-regexp" | "--list" | "-l"))
                && !rest.iter().any(|a| {
                    matches!(
                        *a,
                        "--add"
                            | "--unset"
                            | "--unset-all"
                            | "--replace-all"
                            | "--rename-section"
                            | "--remove-section"
                            | "-e"
                            | "--edit"
                    )
                })
        }
        _ => false,
    }
}

/// `sed` that neither edits in place nor runs a script that writes or executes.
fn sed_is_read_only(args: &[String]) -> bool {
    let explicit =
        args.iter().any(|a| a == "-e" || a.starts_with("--expression") || (a.starts_with("-e") && a.len() > 2));
    let mut scripts: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let a = a.as_str();
        if a.starts_with("-i") || a.starts_with("--in-place") || a.starts_with("-f") || a.starts_with("--file") {
            return false;
        }
        match a {
            "-e" | "--expression" => {
                i += 1;
                match args.get(i) {
                    Some(script) => scripts.push(script),
                    None => return false,
                }
            }
            "--quiet" | "--silent" | "--regexp-extended" | "--separate" | "--unbuffered" | "--null-data"
            | "--posix" | "--debug" | "--sandbox" | "-" | "--" => {}
            _ if a.starts_with("--expression=") => scripts.push(&a["--expression=".len()..]),
            _ if a.starts_with("-e") => scripts.push(&a[2..]),
            _ if a.starts_with('-') => {
                if !a[1..].chars().all(|c| "nErsuz".contains(c)) {
                    return false;
                }
            }
            _ => {
                if !explicit && scripts.is_empty() {
                    scripts.push(a);
                }
            }
        }
        i += 1;
    }
    !scripts.is_empty() && scripts.iter().all(|s| sed_script_is_read_only(s))
}

/// A sed script made only of commands that neither write nor execute.
fn sed_script_is_read_only(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_part = |i: &mut usize, delim: char| -> bool {
        while let Some(&c) = chars.get(*i) {
            *i += 1;
            if c == '\\' {
                *i += 1;
            } else if c == delim {
                return true;
            }
        }
        false
    };
    let address = |i: &mut usize| -> bool {
        match chars.get(*i) {
            Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
                *i += 1;
                while chars.get(*i).is_some_and(|c| c.is_ascii_digit() || *c == '~') {
                    *i += 1;
                }
                true
            }
            Some('$') => {
                *i += 1;
                true
            }
            Some('/') => {
                *i += 1;
                let ok = skip_part(i, '/');
                while chars.get(*i).is_some_and(|c| matches!(c, 'I' | 'M')) {
                    *i += 1;
                }
                ok
            }
            Some('\\') => match chars.get(*i + 1) {
                Some(&delim) => {
                    *i += 2;
                    skip_part(i, delim)
                }
                None => false,
            },
            _ => true,
        }
    };
    loop {
        while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ';') {
            i += 1;
        }
        let Some(&first) = chars.get(i) else {
            return true;
        };
        if first != '}' {
            if !address(&mut i) {
                return false;
            }
            if chars.get(i) == Some(&',') {
                i += 1;
                if !address(&mut i) {
                    return false;
                }
            }
            while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == '!') {
                i += 1;
            }
        }
        let Some(&cmd) = chars.get(i) else {
            return false;
        };
        i += 1;
        match cmd {
            '{' => continue,
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'l' | 'q' | 'Q' | '}' => {
                while chars.get(i).is_some_and(|c| c.is_ascii_digit() || *c == ' ') {
                    i += 1;
                }
            }
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    return false;
                };
                if delim == '\\' || delim == '\n' {
                    return false;
                }
                i += 1;
                if !skip_part(&mut i, delim) || !skip_part(&mut i, delim) {
                    return false;
                }
                if cmd == 's' {
                    while chars.get(i).is_some_and(|c| c.is_ascii_digit() || "gpiImM".contains(*c)) {
                        i += 1;
                    }
                }
            }
            _ => return false,
        }
        while chars.get(i).is_some_and(|c| *c == ' ' || *c == '\t') {
            i += 1;
        }
        if !matches!(chars.get(i), None | Some(';' | '\n' | '}')) {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> Vec<String> {
        analyse(command).segments.into_iter().map(|s| s.text).collect()
    }

    fn only(command: &str) -> Segment {
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
    fn words_after_a_redirection_are_arguments() {
        // tree-sitter-bash puts `hi there` into the redirection's destination.
        let s = only("echo >out hi there");
        assert_eq!(s.text, "echo hi there");
        assert_eq!(s.args, ["hi", "there"]);
        assert!(s.writes_file);
        let s = only("find >/dev/null . -delete");
        assert_eq!(s.args, [".", "-delete"]);
        assert!(!is_read_only("find >/dev/null . -delete"));
    }

    #[test]
    fn redirect_of_a_pipe_or_list_applies_to_its_last_command() {
        let a = analyse("cmd 2>&1 | tee log");
        assert_eq!(texts("cmd 2>&1 | tee log"), ["cmd", "tee log"]);
        assert!(a.segments.iter().all(|s| !s.writes_file));
        assert!(!is_read_only("cmd 2>&1 | tee log"));

        let a = analyse("a && b > out");
        assert!(!a.segments[0].writes_file);
        assert!(a.segments[1].writes_file);
        let a = analyse("a | b > out");
        assert!(!a.segments[0].writes_file);
        assert!(a.segments[1].writes_file);

        let a = analyse("{ a; b; } > out; c");
        assert_eq!(a.segments.iter().map(|s| s.writes_file).collect::<Vec<_>>(), [true, true, false]);
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
    fn unparseable_input_is_not_parsed() {
        for bad in ["echo 'a", "(((", "echo \"unterminated", "ls &&", "echo $(( 1 ", "if true; then ls", "{ a; } > f x"]
        {
            assert!(!analyse(bad).parsed, "{bad:?} should not parse");
            assert!(!is_read_only(bad), "{bad:?}");
        }
    }

    #[test]
    fn heredoc() {
        let s = only("cat <<EOF\nhi\nEOF");
        assert_eq!(s.name, "cat");
        assert_eq!(s.text, "cat");
        assert!(!s.writes_file);
        assert!(is_read_only("cat <<EOF\nhi\nEOF"));

        // An unquoted heredoc runs its substitutions; a quoted one does not.
        assert_eq!(texts("cat <<EOF\n$(rm x)\nEOF"), ["cat", "rm x"]);
        assert_eq!(texts("cat <<'EOF'\n$(rm x)\nEOF"), ["cat"]);
        // What follows the heredoc operator on its line is inside the heredoc's node.
        assert_eq!(texts("cat <<EOF | grep x && rm y\nhi\nEOF"), ["cat", "grep x", "rm y"]);
        let a = analyse("cat <<EOF > out\nhi\nEOF");
        assert!(a.segments[0].writes_file);
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
    fn read_only_commands() {
        for ro in [
            "ls -la && cat f | wc -l",
            "git status",
            "find . -name x",
            "cd sub && pwd",
            "cat <<EOF\nhi\nEOF",
            "ls 2>/dev/null",
            "ls 2>&1 | head",
            "echo hi >&2",
            "git log --oneline -5",
            "git -C sub diff HEAD~1",
            "git branch -a",
            "git config --get user.name",
            "git tag -l 'v1*'",
            "sed -n '1,5p' f",
            "sed 's/a/b/g; /x/d' f",
            "sed -e 's|a|b|' -e 10q f",
            "env",
            "sort -n f | uniq -c",
            "for f in *; do cat \"$f\"; done",
            "LC_ALL=C sort f",
            "[ -f x ] && echo yes",
            "echo $(git rev-parse HEAD)",
        ] {
            assert!(is_read_only(ro), "{ro:?} should be read-only");
        }
    }

    #[test]
    fn not_read_only_commands() {
        for rw in [
            "ls > out",
            "ls >> out",
            "ls &> out",
            "ls >& out",
            "> out",
            "find . -delete",
            "find . -name x -exec rm {} ;",
            "find . $OPTS",
            "sed -i s/a/b/ f",
            "sed --in-place s/a/b/ f",
            "sed 's/a/b/w out' f",
            "sed -n '1e ls' f",
            "sed -f script f",
            "git push",
            "git branch new",
            "git config user.name x",
            "git -c core.pager=x log",
            "git diff --output=x",
            "git",
            "rm x",
            "echo $(rm x)",
            "echo \"$(rm x)\"",
            "env rm x",
            "sort -o out f",
            "sort -ro out f",
            "uniq in out",
            "tree -o out",
            "date -s now",
            "rg --pre cat x",
            "tee log",
            "\"ls\"",
            "/bin/ls",
            "PATH=/tmp ls",
            "PATH=/tmp; ls",
            "GIT_PAGER=x git log",
            "ls &&",
            "",
            "   ",
            "{ ls; } > out",
            "f() { ls; } > out; f",
            "cat <<EOF > out\nhi\nEOF",
        ] {
            assert!(!is_read_only(rw), "{rw:?} should not be read-only");
        }
    }

    #[test]
    fn directory_changes() {
        assert!(changes_directory("cd sub && pwd"));
        assert!(changes_directory("(cd x)"));
        assert!(changes_directory("echo $(cd x && pwd)"));
        assert!(!changes_directory("echo cd"));
        assert!(!changes_directory("ls"));
        assert_eq!(cd_target("cd sub && pwd").as_deref(), Some("sub"));
        assert_eq!(cd_target("cd 'a b'").as_deref(), Some("a b"));
        assert_eq!(cd_target("cd").as_deref(), Some("~"));
        assert_eq!(cd_target("echo cd"), None);
    }

    #[test]
    fn weird_inputs_do_not_panic() {
        // `((…))` is arithmetic to bash and to the grammar: no command in it.
        let deep_arith = format!("{}ls{}", "(".repeat(10_000), ")".repeat(10_000));
        let deep_parens = format!("{}ls{}", "( ".repeat(10_000), " )".repeat(10_000));
        let deep_subst = format!("{}ls{}", "echo $(".repeat(5_000), ")".repeat(5_000));
        let long_list = format!("{}ls", "ls && ".repeat(10_000));
        let inputs = [
            String::new(),
            "   ".to_string(),
            "\n\n".to_string(),
            "# only a comment".to_string(),
            "ls \0 x".to_string(),
            "(".repeat(10_000),
            ")".repeat(10_000),
            "$(".repeat(10_000),
            "\"'".repeat(5_000),
            "é ü 日本 $'\\u00e9' ;;; && || |".to_string(),
            deep_arith.clone(),
            deep_parens.clone(),
            deep_subst.clone(),
            long_list.clone(),
        ];
        for input in &inputs {
            let a = analyse(input);
            let _ = is_read_only(input);
            let _ = changes_directory(input);
            if input.trim().is_empty() {
                assert!(a.parsed && a.segments.is_empty());
            }
        }
        assert!(analyse(&deep_arith).segments.is_empty());
        let a = analyse(&deep_parens);
        assert!(a.parsed);
        assert_eq!(a.segments.len(), 1);
        assert_eq!(analyse(&deep_subst).segments.len(), 5_001);
        assert_eq!(analyse(&long_list).segments.len(), 10_001);
        assert!(!analyse("ls \0 x").parsed);
    }

    #[test]
    fn sed_scripts() {
        assert!(sed_script_is_read_only("1,5p"));
        assert!(sed_script_is_read_only("/a\\/b/,$ { s/x/y/2g; p }"));
        assert!(sed_script_is_read_only("y/abc/xyz/"));
        assert!(!sed_script_is_read_only("s/a/b/e"));
        assert!(!sed_script_is_read_only("w out"));
        assert!(!sed_script_is_read_only("s/a/b"));
        assert!(!sed_script_is_read_only("p;W out"));
    }
}
