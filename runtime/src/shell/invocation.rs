//! What a simple command runs, for permission rules (BASH-2): its name normalised the way the shell
//! reads it (quotes and backslashes removed: `"touch"`, `t''ouch`, `\touch` → `touch`; a path's last
//! component as well: `/usr/bin/touch` → `touch`), and the commands it runs through a wrapper
//! (`env`, `command`, `builtin`, `time`, `nice`, `timeout`, `xargs`, `exec`, `nohup`, `stdbuf`: their
//! options skipped, `env`'s assignments too), through `eval` (its arguments are a command string) and
//! through `sh -c` / `bash -c` (the string is a command string). A name that is not a plain literal —
//! a variable or a substitution (`$T`, `${T}`, `$(echo touch)`) — cannot be matched against any rule:
//! it is [`Form::Dynamic`], which the permission rules turn into an ask, never an allow.
//!
//! Each segment gives its [`forms`]: the command as written first, then the same command with its name
//! normalised, then each command a wrapper runs, outermost first. A rule that matches any form of any
//! segment applies to the whole command.

use super::parse::Segment;

/// How deep wrappers may nest before the command is given up on ([`Form::Dynamic`]): `env nice env …`.
pub const MAX_WRAPPERS: usize = 16;

/// One way of reading a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// A command line to match rules against (`touch a`).
    Text(String),
    /// A command string the segment runs (`eval …`, `sh -c '…'`): analysed on its own.
    Script(String),
    /// The command run is not known before it runs (why, for the ask).
    Dynamic(String),
}

/// Options of a wrapper: those that take a separate value (`-n 5`), and what else may come before the
/// command it runs.
struct Wrapper {
    name: &'static str,
    /// Short options whose value is the next word unless attached (`-n5`).
    short_with_value: &'static [char],
    /// Long options whose value is the next word unless given with `=`.
    long_with_value: &'static [&'static str],
    /// `NAME=value` words before the command are assignments (`env`).
    assignments: bool,
    /// Positional words before the command (`timeout DURATION`).
    positionals: usize,
}

/// The wrappers looked through (their options as GNU coreutils / findutils / bash document them).
const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "env",
        short_with_value: &['u', 'C', 'S'],
        long_with_value: &["--unset", "--chdir", "--split-string"],
        assignments: true,
        positionals: 0,
    },
    Wrapper { name: "command", short_with_value: &[], long_with_value: &[], assignments: false, positionals: 0 },
    Wrapper { name: "builtin", short_with_value: &[], long_with_value: &[], assignments: false, positionals: 0 },
    Wrapper {
        name: "time",
        short_with_value: &['f', 'o'],
        long_with_value: &["--format", "--output"],
        assignments: false,
        positionals: 0,
    },
    Wrapper {
        name: "nice",
        short_with_value: &['n'],
        long_with_value: &["--adjustment"],
        assignments: false,
        positionals: 0,
    },
    Wrapper {
        name: "timeout",
        short_with_value: &['s', 'k'],
        long_with_value: &["--signal", "--kill-after"],
        assignments: false,
        positionals: 1,
    },
    Wrapper {
        name: "xargs",
        short_with_value: &['a', 'd', 'E', 'I', 'L', 'n', 'P', 's'],
        long_with_value: &[
            "--arg-file",
            "--delimiter",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ],
        assignments: false,
        positionals: 0,
    },
    Wrapper { name: "exec", short_with_value: &['a'], long_with_value: &[], assignments: false, positionals: 0 },
    Wrapper { name: "nohup", short_with_value: &[], long_with_value: &[], assignments: false, positionals: 0 },
    Wrapper {
        name: "stdbuf",
        short_with_value: &['i', 'o', 'e'],
        long_with_value: &["--input", "--output", "--error"],
        assignments: false,
        positionals: 0,
    },
];

/// Shells whose `-c STRING` runs STRING.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash"];

/// The last path component of a command name (`/usr/bin/touch` → `touch`).
fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The forms of one segment (see the module doc).
pub fn forms(seg: &Segment) -> Vec<Form> {
    let mut out = vec![Form::Text(seg.text.clone())];
    let Some(program) = seg.program.clone() else {
        out.push(Form::Dynamic(format!("the command name `{}` is a variable or substitution", seg.name)));
        return out;
    };
    let mut words: Vec<String> = std::iter::once(program).chain(seg.args.iter().cloned()).collect();
    for _ in 0..MAX_WRAPPERS {
        let Some(name) = words.first().cloned() else {
            return out;
        };
        let short = base(&name).to_string();
        push_text(&mut out, &words);
        if short != name {
            let mut as_base = words.clone();
            as_base[0] = short.clone();
            push_text(&mut out, &as_base);
        }
        if short == "eval" {
            out.push(Form::Script(words[1..].join(" ")));
            return out;
        }
        if SHELLS.contains(&short.as_str()) {
            if let Some(i) =
                words.iter().position(|w| w == "-c" || (w.starts_with('-') && !w.starts_with("--") && w.contains('c')))
            {
                match words.get(i + 1) {
                    Some(script) => out.push(Form::Script(script.clone())),
                    None => out.push(Form::Dynamic(format!("`{short} -c` without a command string"))),
                }
            }
            return out;
        }
        let Some(w) = WRAPPERS.iter().find(|w| w.name == short) else {
            return out;
        };
        if w.name == "env"
            && words
                .iter()
                .any(|a| a == "-S" || a.starts_with("--split-string") || (a.starts_with("-S") && a.len() > 2))
        {
            out.push(Form::Dynamic("`env -S` splits a string into a command".into()));
            return out;
        }
        match unwrap(w, &words[1..]) {
            Some(rest) if rest.is_empty() => return out,
            Some(rest) => {
                if seg_word_is_dynamic(&rest[0]) {
                    out.push(Form::Dynamic(format!("`{}` runs a command named by an expansion ({})", w.name, rest[0])));
                    return out;
                }
                words = rest;
            }
            None => return out,
        }
    }
    out.push(Form::Dynamic(format!("more than {MAX_WRAPPERS} nested wrappers")));
    out
}

/// A word that kept its source text because it is not a plain literal (see [`Segment::args`]).
fn seg_word_is_dynamic(word: &str) -> bool {
    word.contains('$') || word.contains('`')
}

fn push_text(out: &mut Vec<Form>, words: &[String]) {
    let t = Form::Text(words.join(" "));
    if !out.contains(&t) {
        out.push(t);
    }
}

/// The words of the command a wrapper runs (None: it runs none, e.g. a bare `nice`).
fn unwrap(w: &Wrapper, args: &[String]) -> Option<Vec<String>> {
    let mut i = 0;
    let mut positionals = w.positionals;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let name = format!("--{}", long.split('=').next().unwrap_or_default());
            i += if !long.contains('=') && w.long_with_value.contains(&name.as_str()) { 2 } else { 1 };
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            // `-n5` carries its value; `-n 5` takes the next word; `nice -5` is an adjustment
            let flags: Vec<char> = a[1..].chars().collect();
            let takes = flags.iter().position(|c| w.short_with_value.contains(c));
            i += match takes {
                Some(p) if p == flags.len() - 1 => 2,
                _ => 1,
            };
            continue;
        }
        if w.assignments && a.contains('=') && !a.starts_with('=') {
            i += 1;
            continue;
        }
        if positionals > 0 {
            positionals -= 1;
            i += 1;
            continue;
        }
        break;
    }
    let rest: Vec<String> = args.get(i..).unwrap_or_default().to_vec();
    if rest.is_empty() && w.name == "xargs" {
        // xargs with no command runs echo
        return Some(Vec::new());
    }
    Some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::analyse;

    fn texts(command: &str) -> Vec<Vec<Form>> {
        analyse(command).segments.iter().map(forms).collect()
    }

    fn runs(command: &str, want: &str) {
        let all = texts(command);
        assert!(
            all.iter().flatten().any(|f| *f == Form::Text(want.into())),
            "{command:?} should be read as `{want}`: {all:?}"
        );
    }

    #[test]
    fn names_are_unquoted_and_wrappers_looked_through() {
        for (c, want) in [
            ("\"touch\" a", "touch a"),
            ("t''ouch a", "touch a"),
            ("\\touch a", "touch a"),
            ("'touch' a", "touch a"),
            ("/usr/bin/touch a", "touch a"),
            ("env touch a", "touch a"),
            ("env -i FOO=1 touch a", "touch a"),
            ("env -u X -- touch a", "touch a"),
            ("command touch a", "touch a"),
            ("command -p touch a", "touch a"),
            ("xargs touch", "touch"),
            ("xargs -n1 touch", "touch"),
            ("xargs -a /dev/null -I{} touch {}", "touch {}"),
            ("time -p touch a", "touch a"),
            ("nice -n 5 touch a", "touch a"),
            ("nice -5 touch a", "touch a"),
            ("timeout -s KILL 5 touch a", "touch a"),
            ("timeout --kill-after=1 --preserve-status 5 touch a", "touch a"),
            ("exec -a x touch a", "touch a"),
            ("nohup touch a", "touch a"),
            ("stdbuf -oL -e 0 touch a", "touch a"),
            ("env T=1 nice timeout 5 /bin/touch a", "touch a"),
        ] {
            runs(c, want);
        }
    }

    #[test]
    fn scripts_and_dynamic_names() {
        assert!(texts("eval touch a")[0].contains(&Form::Script("touch a".into())));
        assert!(texts("bash -c 'touch a'")[0].contains(&Form::Script("touch a".into())));
        assert!(texts("sh -ec 'touch a'")[0].contains(&Form::Script("touch a".into())));
        for c in ["$T a", "${T} a", "$(echo touch) a", "`echo touch` a", "\"$T\" a", "env $T a", "env -S 'touch a'"] {
            assert!(texts(c).iter().flatten().any(|f| matches!(f, Form::Dynamic(_))), "{c:?}: {:?}", texts(c));
        }
        // plain commands have no dynamic form, and a bare wrapper runs nothing more
        for c in ["ls -la", "export A=1", "[ -f x ]", "nice", "git push"] {
            assert!(!texts(c).iter().flatten().any(|f| matches!(f, Form::Dynamic(_))), "{c:?}");
        }
    }
}
