//! Edit (EDIT-1..6): exact replacement of `old_string` by `new_string`, unique unless `replace_all`;
//! refuses a file never Read (with the models that keep the reference's gate: [`crate::fs::GATED_MODELS`]),
//! a file changed since its Read (unless the edit still applies: [`crate::fs::check_edit_gates`]), and
//! notebooks (NotebookEdit's job); leaves a file-history checkpoint on success.

use crate::context::ToolContext;
use crate::fs::{
    check_edit_gates, check_fill_gates, checkpoint, confine_write, mark_unseen, missing_file_near, remember_read,
    trim_line_ends, updated, write_and_remember, Gate, TextFile, FILE_STATE_NOTE, STALE_RECOVERED_NOTE,
};
use crate::profile::Switch;
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};

/// From 2.1.281 an Edit's success says the file state is current only when the model has seen the
/// whole file: not for a file it never read (a model that skips the gate), nor after a Read of part of
/// it ([`read_in_part`]), nor after an edit of a file changed on disk since its Read, until a Read (measured by `probes/edit/stale-gate.toml` and
/// `claude-code/edit-gate-default-model.toml`: timeline EDIT-1 / EDIT-2, 2.1.280 → 2.1.281; the
/// reference's `contentNotInModelContext`).
pub const NOTE_ONLY_WHEN_SEEN: Switch = Switch {
    name: "Edit's file-state note only for a file the model has seen",
    since: "2.1.281",
    probe: "edit.stale-gate",
};

/// From 2.1.295 the file-state note needs the text the session recorded of the file to be the file as
/// read back (CRLF made LF): an Edit whose new text holds CRLF leaves the file unseen (the next Edit has
/// no note until a Read), and so does a Read of a file that ends in a lone CR (the Edit after it has
/// none). Measured by `harness/tests/fidelity.rs` and `probes/edit/crlf-new-text.toml`: 2.1.285,
/// 2.1.291 and 2.1.294 note both, 2.1.295, 2.1.296 and 2.1.333 do not.
pub const NOTE_NEEDS_RECORDED_TEXT: Switch = Switch {
    name: "Edit's file-state note needs the recorded text to be the file's",
    since: "2.1.295",
    probe: "edit.crlf-new-text",
};

/// The last record of `path` is a Read of a file that ends in a lone CR ([`NOTE_NEEDS_RECORDED_TEXT`]).
fn read_ends_in_cr(ctx: &ToolContext, path: &std::path::Path, text: &str) -> bool {
    let from_read = ctx.read_state.lock().ok().is_some_and(|s| s.get(path).is_some_and(|st| st.window.is_some()));
    from_read && text.ends_with('\r')
}

/// The last Read of `path` showed only part of it (NOTE_ONLY_WHEN_SEEN: the reference's full view is a
/// Read from the first line whose limit, if any, is past the file's last line, of a file that is not
/// empty — measured by `harness/tests/fidelity.rs`: an Edit after `Read limit=4` of a longer file, or
/// after `Read limit=3` of an empty one, has no note on 2.1.284 and 2.1.285).
fn read_in_part(ctx: &ToolContext, path: &std::path::Path, text: &str) -> bool {
    let window = ctx.read_state.lock().ok().and_then(|s| s.get(path).and_then(|st| st.partial.then_some(st.window)));
    match window {
        Some(Some((offset, limit))) => {
            offset > 1 || limit.is_some_and(|l| text.is_empty() || (text.matches('\n').count() as u64) + 1 >= l)
        }
        Some(None) => true,
        None => false,
    }
}

/// The Edit tool.
#[derive(Debug, Default)]
pub struct Edit;

#[derive(Debug, Deserialize)]
pub struct Args {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// The reference's curly quotes, which an old string with straight ones still matches.
const CURLY: [(char, char); 4] = [('\u{2018}', '\''), ('\u{2019}', '\''), ('\u{201C}', '"'), ('\u{201D}', '"')];

fn straight(c: char) -> char {
    CURLY.iter().find(|(q, _)| *q == c).map_or(c, |(_, s)| *s)
}

/// The text in `content` that `old` stands for: `old` itself, else the same text with the file's curly
/// quotes where `old` has straight ones (the reference's quote normalisation).
pub fn actual_old(content: &str, old: &str) -> Option<String> {
    if content.contains(old) {
        return Some(old.to_string());
    }
    let want: Vec<char> = old.chars().map(straight).collect();
    let have: Vec<char> = content.chars().collect();
    if want.is_empty() || want.len() > have.len() {
        return None;
    }
    (0..=have.len() - want.len())
        .find(|&i| have[i..i + want.len()].iter().zip(&want).all(|(h, w)| straight(*h) == *w))
        .map(|i| have[i..i + want.len()].iter().collect())
}

fn opens_quote(chars: &[char], i: usize) -> bool {
    i == 0 || matches!(chars[i - 1], ' ' | '\t' | '\n' | '\r' | '(' | '[' | '{' | '\u{2014}' | '\u{2013}')
}

/// The new string in the file's quote style when the old one matched through curly quotes.
fn in_quote_style(old: &str, actual: &str, new: &str) -> String {
    if old == actual {
        return new.to_string();
    }
    let doubles = actual.contains('\u{201C}') || actual.contains('\u{201D}');
    let singles = actual.contains('\u{2018}') || actual.contains('\u{2019}');
    let chars: Vec<char> = new.chars().collect();
    let mut out = String::with_capacity(new.len());
    for (i, &c) in chars.iter().enumerate() {
        out.push(match c {
            '"' if doubles => {
                if opens_quote(&chars, i) {
                    '\u{201C}'
                } else {
                    '\u{201D}'
                }
            }
            '\'' if singles => {
                let letter = |j: Option<&char>| j.is_some_and(|c| c.is_alphabetic());
                if letter(i.checked_sub(1).and_then(|j| chars.get(j))) && letter(chars.get(i + 1)) {
                    '\u{2019}'
                } else if opens_quote(&chars, i) {
                    '\u{2018}'
                } else {
                    '\u{2019}'
                }
            }
            c => c,
        });
    }
    out
}

/// The replacement itself, on text (LF line ends): the new text, or the reference's error for 0 or
/// several matches (EDIT-4). Like the reference, an empty new string takes the line end after a
/// match with it, and curly quotes in the file match straight ones.
pub fn replace(text: &str, old: &str, new: &str, replace_all: bool) -> Result<String, ToolError> {
    let Some(actual) = actual_old(text, old) else {
        // the reference's note when old_string has non-ASCII chars or \uXXXX escapes
        let note = if !old.is_ascii() || has_unicode_escape(old) {
            "\n(note: Edit also tried swapping \\uXXXX escapes and their characters; neither form matched, so the mismatch is likely elsewhere in old_string. Re-read the file and copy the exact surrounding text.)"
        } else {
            ""
        };
        return Err(ToolError::Validation(format!("String to replace not found in file.\nString: {old}{note}")));
    };
    let n = text.matches(actual.as_str()).count();
    if n > 1 && !replace_all {
        return Err(ToolError::Validation(format!(
            "Found {n} matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: {old}"
        )));
    }
    let new = in_quote_style(old, &actual, new);
    let with_line_end = format!("{actual}\n");
    let target =
        if new.is_empty() && !actual.ends_with('\n') && text.contains(&with_line_end) { with_line_end } else { actual };
    Ok(if replace_all { text.replace(&target, &new) } else { text.replacen(&target, &new, 1) })
}

/// The old string "applies" to the text as the reference's stale-file check has it: found (quotes
/// normalised), and once unless replace_all; an empty one never does.
fn applies(text: &str, old: &str, replace_all: bool) -> bool {
    if old.is_empty() {
        return false;
    }
    let Some(actual) = actual_old(text, old) else {
        return false;
    };
    replace_all || text.find(actual.as_str()).is_some_and(|i| !text[i + actual.len()..].contains(actual.as_str()))
}

fn has_unicode_escape(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(5))
        .any(|i| b[i] == b'\\' && b[i + 1] == b'u' && b[i + 2..i + 6].iter().all(u8::is_ascii_hexdigit))
}

impl TypedTool for Edit {
    const NAME: &'static str = "Edit";
    const DESCRIPTION: &'static str = "Performs exact string replacements in files.\n\nUsage:\n- You must use your `Read` tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file.\n- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use `replace_all` to change every instance of `old_string`.\n- Use `replace_all` for replacing and renaming strings across the file.";
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
                "old_string": {"type": "string", "description": "The text to replace"},
                "new_string": {"type": "string", "description": "The text to replace it with (must be different from old_string)"},
                "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurences of old_string (default false)"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        crate::fs::path_subject(input, "file_path", true, ctx)
    }

    fn denied(&self, subject: &PermissionSubject, rule: &str, ctx: &ToolContext) -> Option<ToolError> {
        crate::fs::write_denied(ctx, Self::NAME, subject, rule, "edited")
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        {
            let path = confine_write(ctx, &args.file_path)?;
            // the reference trims the new text's line ends before it looks at anything else — when the
            // file is there (its input normalisation reads it; a file an Edit creates keeps them)
            let new_string =
                if path.is_file() { trim_line_ends(&path, &args.new_string) } else { args.new_string.clone() };
            if args.old_string == new_string {
                return Err(ToolError::Validation(
                    "No changes to make: old_string and new_string are exactly the same.".into(),
                ));
            }
            let current = match std::fs::read(&path) {
                Ok(c) => c,
                Err(_) if args.old_string.is_empty() => {
                    write_and_remember(ctx, &path, &new_string)?;
                    return Ok(ToolOutput::Text(updated(&path)));
                }
                Err(_) => return Err(ToolError::Validation(missing_file_near(ctx, &path))),
            };
            let file = TextFile::decode(&current);
            let (new_text, gate) = if args.old_string.is_empty() {
                // an existing file that holds nothing but white space is filled; the gates are checked
                // while running, so their refusals are not input errors there (as on the reference)
                if !file.content().trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}').is_empty() {
                    return Err(ToolError::Validation("Cannot create new file - file already exists.".into()));
                }
                check_fill_gates(ctx, &path, &current)?;
                if let Some(refusal) = crate::encoding::edit_refusal(ctx, &current) {
                    return Err(ToolError::Runtime(refusal));
                }
                (new_string.clone(), Gate::Pass)
            } else {
                if path.extension().is_some_and(|e| e == "ipynb") {
                    return Err(ToolError::Validation(
                        "File is a Jupyter Notebook. Use the NotebookEdit to edit this file.".into(),
                    ));
                }
                let gate = check_edit_gates(
                    ctx,
                    &path,
                    &current,
                    applies(file.content(), &args.old_string, args.replace_all),
                )?;
                // from 2.1.296 a file that is not text is refused after the gates (`crate::encoding`)
                if let Some(refusal) = crate::encoding::edit_refusal(ctx, &current) {
                    return Err(ToolError::Validation(refusal));
                }
                // the reference looks for old_string in the text without its byte-order mark (an old
                // string holding the mark is not found), then replaces in the text as it is
                replace(file.content(), &args.old_string, &new_string, args.replace_all)?;
                (replace(&file.text, &args.old_string, &new_string, args.replace_all)?, gate)
            };
            // the note the reference ends a success with: the file state is current, or (a stale file the
            // edit still applied to) that the file holds changes the model has not seen; from 2.1.281 no
            // note when the model has not seen the whole file ([`NOTE_ONLY_WHEN_SEEN`])
            let unseen = matches!(gate, Gate::Unread | Gate::Unseen | Gate::StaleRecovered)
                || (ctx.profile().has(&NOTE_ONLY_WHEN_SEEN) && read_in_part(ctx, &path, &file.text))
                || (ctx.profile().has(&NOTE_NEEDS_RECORDED_TEXT) && read_ends_in_cr(ctx, &path, &file.text));
            let note = match gate {
                Gate::StaleRecovered => STALE_RECOVERED_NOTE,
                _ if unseen && ctx.profile().has(&NOTE_ONLY_WHEN_SEEN) => "",
                _ => FILE_STATE_NOTE,
            };
            checkpoint(ctx, &path, &current)?;
            let bytes = file.encode(&new_text);
            crate::fs::write_no_follow(&path, &bytes)
                .map_err(|e| ToolError::Runtime(format!("{e}: {}", path.display())))?;
            remember_read(ctx, &path, bytes, false);
            // text holding CRLF is not the file read back ([`NOTE_NEEDS_RECORDED_TEXT`])
            if unseen || (ctx.profile().has(&NOTE_NEEDS_RECORDED_TEXT) && new_text.contains("\r\n")) {
                mark_unseen(ctx, &path);
            }
            if args.replace_all {
                return Ok(ToolOutput::Text(format!(
                    "The file {} has been updated. All occurrences were successfully replaced.{note}",
                    path.display()
                )));
            }
            Ok(ToolOutput::Text(format!("The file {} has been updated successfully.{note}", path.display())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::BoxFuture;

    #[test]
    fn applies_as_the_stale_check_has_it() {
        assert!(applies("version two", "two", false));
        assert!(!applies("version one", "two", false));
        assert!(!applies("dup dup", "dup", false));
        assert!(applies("dup dup", "dup", true));
        assert!(!applies("anything", "", true));
        // curly quotes in the file match straight ones
        assert!(applies("it\u{2019}s", "it's", false));
    }

    #[test]
    fn unique_exact_replacement() {
        assert_eq!(replace("a b a", "b", "c", false).ok(), Some("a c a".to_string()));
        assert_eq!(replace("a b a", "a", "x", true).ok(), Some("x b x".to_string()));
        let e = replace("a b a", "a", "x", false).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("Found 2 matches of the string to replace, but replace_all is false."), "{e}");
        assert!(e.ends_with("\nString: a"));
        let e = replace("abc", "nomatch", "x", false).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e, "String to replace not found in file.\nString: nomatch");
    }

    /// A model that only has a name (the Read-before-Edit gate depends on it).
    struct Named(&'static str);

    impl crate::model::TokenCounter for Named {
        fn count<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<u64, crate::model::ModelError>> {
            Box::pin(async move { Ok(text.len() as u64 / 4) })
        }
    }

    impl crate::model::Model for Named {
        fn model(&self) -> &str {
            self.0
        }
        fn with_model(&self, _model: &str) -> std::sync::Arc<dyn crate::model::Model> {
            std::sync::Arc::new(Named(self.0))
        }
        fn create<'a>(
            &'a self,
            _body: &'a Value,
        ) -> BoxFuture<'a, Result<crate::wire::Message, crate::model::ModelError>> {
            Box::pin(async { Err(crate::model::ModelError::Failed("no API here".into())) })
        }
    }

    fn ctx_at(version: &str, model: Option<&'static str>) -> (tempfile::TempDir, ToolContext) {
        let (d, mut c) = ToolContext::for_test();
        let model = model.map(|m| std::sync::Arc::new(Named(m)) as std::sync::Arc<dyn crate::model::Model>);
        let session = crate::session::Session::new(Default::default(), Default::default(), model)
            .unwrap_or_else(|e| panic!("{e}"))
            .put(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}")));
        c.session = std::sync::Arc::new(session);
        (d, c)
    }

    fn edit(c: &ToolContext, path: &std::path::Path, old: &str, new: &str) -> String {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
        let input = json!({"file_path": path, "old_string": old, "new_string": new});
        match rt.block_on(crate::tool::Tool::call(&Edit, input, c)) {
            Ok(ToolOutput::Text(t)) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_file_state_note_is_only_for_a_seen_file_from_2_1_281() {
        for (version, dropped) in [("2.1.235", false), ("2.1.280", false), ("2.1.281", true), ("2.1.333", true)] {
            // never read, with a model that skips the gate
            let (_d, c) = ctx_at(version, Some("claude-opus-5"));
            let f = c.cwd.join("never-read.txt");
            std::fs::write(&f, "hello world\n").unwrap_or_else(|e| panic!("{e}"));
            let t = edit(&c, &f, "world", "there");
            assert_eq!(!t.ends_with(FILE_STATE_NOTE), dropped, "{version}: {t}");
            // read, changed on disk, edited anyway (the stale note), then edited again
            let (_d, c) = ctx_at(version, None);
            let f = c.cwd.join("f.txt");
            std::fs::write(&f, "version one\n").unwrap_or_else(|e| panic!("{e}"));
            remember_read(&c, &f, b"version one\n".to_vec(), false);
            std::fs::write(&f, "version two, by a linter\n").unwrap_or_else(|e| panic!("{e}"));
            let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
            std::fs::File::options()
                .write(true)
                .open(&f)
                .and_then(|h| h.set_modified(later))
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(edit(&c, &f, "two", "2").ends_with(STALE_RECOVERED_NOTE), "{version}");
            let t = edit(&c, &f, "version", "edition");
            assert_eq!(!t.ends_with(FILE_STATE_NOTE), dropped, "{version}: {t}");
            // a Read makes it seen again
            remember_read(&c, &f, std::fs::read(&f).unwrap_or_default(), false);
            assert!(edit(&c, &f, "edition", "version").ends_with(FILE_STATE_NOTE), "{version}");
            // a Read of part of the file (a limit short of its end, or an offset) does not; a limit past
            // its last line does
            let (_d, c) = ctx_at(version, None);
            let f = c.cwd.join("e.md");
            std::fs::write(&f, "").unwrap_or_else(|e| panic!("{e}"));
            crate::fs::remember_window(&c, &f, Vec::new(), true, Some((1, Some(3))));
            let t = edit(&c, &f, "", "z");
            assert_eq!(!t.ends_with(FILE_STATE_NOTE), dropped, "{version}: an empty file read with a limit: {t}");
            for (window, part) in [((1, Some(2)), true), ((2, None), true), ((1, Some(9)), false)] {
                let (_d, c) = ctx_at(version, None);
                let f = c.cwd.join("f.txt");
                std::fs::write(&f, "one\ntwo\nthree\n").unwrap_or_else(|e| panic!("{e}"));
                crate::fs::remember_window(&c, &f, Vec::new(), true, Some(window));
                let t = edit(&c, &f, "two", "2");
                assert_eq!(!t.ends_with(FILE_STATE_NOTE), dropped && part, "{version} {window:?}: {t}");
            }
        }
    }

    #[test]
    fn the_note_needs_the_recorded_text_from_2_1_295() {
        for (version, dropped) in [("2.1.235", false), ("2.1.294", false), ("2.1.295", true), ("2.1.333", true)] {
            let (_d, c) = ctx_at(version, None);
            let f = c.cwd.join("lf.txt");
            std::fs::write(&f, "a\nb\nc\n").unwrap_or_else(|e| panic!("{e}"));
            remember_read(&c, &f, b"a\nb\nc\n".to_vec(), false);
            assert!(edit(&c, &f, "b", "x\r\ny").ends_with(FILE_STATE_NOTE), "{version}: the edit itself is noted");
            let t = edit(&c, &f, "c", "C");
            assert_eq!(!t.ends_with(FILE_STATE_NOTE), dropped, "{version}: after CRLF text: {t}");
            // a whole Read of a file that ends in a lone CR
            let f = c.cwd.join("cr.txt");
            std::fs::write(&f, "a\rb\rc\r").unwrap_or_else(|e| panic!("{e}"));
            crate::fs::remember_window(&c, &f, b"a\rb\rc\r".to_vec(), false, Some((1, None)));
            let t = edit(&c, &f, "b", "B");
            assert_eq!(!t.ends_with(FILE_STATE_NOTE), dropped, "{version}: after a Read of a file ending in CR: {t}");
        }
    }
}
