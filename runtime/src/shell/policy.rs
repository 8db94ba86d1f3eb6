//! The read-only policy (PIPE-4, BASH-2): which analysed commands only read ([`is_read_only`]) — the
//! commands of [`READ_ONLY_COMMANDS`] with their per-command restrictions, and the variables a
//! read-only command may be given ([`HARMLESS_ENV_VARS`]).

use super::parse::{analyse, Segment};

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

/// `find` arguments that write, delete or execute.
const FIND_UNSAFE: &[&str] =
    &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];

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
