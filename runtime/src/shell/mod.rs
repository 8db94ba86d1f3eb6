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
//!
//! [`forms`] (`invocation`) reads each simple command as the permission rules must see it: its name
//! unquoted, wrappers (`env`, `timeout`, `xargs`, …), `eval` and `sh -c` looked through, a variable as
//! the name flagged.
//!
//! `parse` holds the grammar's side (the tree walk, the segments), `policy` the read-only rules; this
//! module re-exports both and answers what a command does to the shell's cwd.

mod invocation;
mod parse;
mod policy;

pub use invocation::{forms, Form, MAX_WRAPPERS};
pub use parse::{analyse, Analysis, Segment, PARSE_TIMEOUT};
pub use policy::{is_read_only, HARMLESS_ENV_VARS, READ_ONLY_COMMANDS};

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

#[cfg(test)]
mod tests {
    use super::parse::tests::{only, texts};
    use super::*;

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
}
