//! The list of every version switch of the runtime ([`SWITCHES`]), apart from [`crate::profile`]: the
//! tools' modules name `profile` (a [`Switch`] is defined beside the behaviour it gates), so the list
//! that names them all lives in a module nothing in the runtime names (no module cycle).

use crate::profile::Switch;

/// Every switch of the runtime, in the order of their `since` (the table `docs/runtime.md` shows and
/// `probelab` lists). A switch defined anywhere in the runtime is listed here; a test holds the list to
/// well-formed entries (a version after the reference, a probe file that exists).
pub const SWITCHES: &[&Switch] = &[
    &crate::tools::lsp::LSP_IN_THE_FIRST_REQUEST,
    &crate::tools::skill::BOM_READ,
    &crate::tools::workflow::RUN_ID_NAMED,
    &crate::tools::read::PDF_DOCUMENT_IN_RESULT,
    &crate::tools::lsp::LSP_TOOL_WITHHELD,
    &crate::tools::lsp::LSP_TOOL_BACK,
    &crate::tools::workflow::SCRIPT_REFUSAL_HINT,
    &crate::tools::send_message::UNREACHABLE_NAMES_LIST_AGENTS,
    &crate::tools::grep::CONTENT_FROM_JSON,
    &crate::fs::SYMLINK_REFUSAL_REWORDED,
    &crate::tools::glob::PATTERN_FROM_PATH,
    &crate::tools::tool_search::REQUIRED_DESCRIBED_LAST,
    &crate::validation::DETAIL_LOST,
    &crate::fs::MISSING_SEARCH_PATH_UNWRAPPED,
    &crate::tools::workflow::RESUME_NEEDS_JOURNAL,
    &crate::tools::workflow::PROMPT_FRAMED_SHOWN,
    &crate::tools::workflow::JOURNAL_MARKS_LAUNCH,
    &crate::tools::web_fetch::DOTLESS_HOST_TEXT,
    &crate::tools::lsp::LSP_SHUTDOWN_WITHOUT_PARAMS,
    &crate::tools::cron::RECORDS_PROJECT,
    &crate::tools::mcp::CALL_ERROR_BARE,
    &crate::tools::task_output::TASK_OUTPUT_LEAVES,
    &crate::tools::agent_tool::REPORT_FRAMED,
    &crate::tools::write::DIRECTORY_NAMED,
    &crate::fs::SYMLINK_REFUSAL_NAMES_TARGET,
    &crate::hooks::JSON_DENY_PREFIXED,
    &crate::tools::edit::NOTE_ONLY_WHEN_SEEN,
    &crate::validation::DETAIL_BACK,
    &crate::tools::tool_search::REQUIRED_DESCRIBED_FIRST_AGAIN,
    &crate::tools::read::BINARY_REFUSAL_SUGGESTS_SKILL,
    &crate::tools::skill::NAME_BESIDE_DIR,
    &crate::tools::web_fetch::PAGED_TEXT,
    &crate::pipeline::SUBAGENT_NOT_HERE_NOTICE,
    &crate::tools::edit::NOTE_NEEDS_RECORDED_TEXT,
    &crate::tools::read::ALLOW_LARGE_HINT,
    &crate::encoding::LOSSY_FILE_REFUSED,
    &crate::tools::send_message::QUEUED_SAYS_WAIT,
    &crate::tools::cron::NEXT_RUN_SHOWN,
    &crate::encoding::NOT_TEXT_REFUSED,
    &crate::encoding::BOM_KEPT,
    &crate::tools::worktree::CURLY_QUOTED_NAMES,
    &crate::tools::tool_search::TOOL_SEARCH_BY_DEFAULT,
    &crate::tools::worktree::MISSING_PATH_REALPATH,
    &crate::tools::read::DEVICE_OR_PROCESS_FILE,
    &crate::tools::agent_tool::TOOLS_USED_NOTE,
    &crate::agent::LAST_BLOCK_CACHE_MARK,
    &crate::tools::read::NO_UNCHANGED_NOTE,
    &crate::tools::notebook_edit::CELL_NAMED_AS_GIVEN,
    &crate::tools::workflow::RESUME_HINT_CALLS,
    &crate::tools::workflow::RUN_ID_UNNAMED,
    &crate::tools::notebook_edit::FINAL_NEWLINE_KEPT,
    &crate::tools::mcp::DIR_LISTING_IS_ERROR,
    &crate::tools::cron::MAX_AGE_30_DAYS,
    &crate::tools::task_list::GET_HIDES_DONE_BLOCKERS,
    &crate::tools::notebook_edit::CELL_SHAPED_BY_TYPE,
    &crate::tools::lsp::format::ONE_FILE_SINGULAR,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{release, REFERENCE_RELEASE};

    #[test]
    fn switches_are_well_formed() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut last = REFERENCE_RELEASE;
        for s in SWITCHES {
            let since = release(s.since).unwrap_or_else(|| panic!("{}: since {:?}", s.name, s.since));
            let since = (since.major, since.minor, since.patch);
            assert!(since > REFERENCE_RELEASE, "{}: since {} is not after the reference", s.name, s.since);
            assert!(since >= last, "{}: SWITCHES out of order at {}", s.name, s.since);
            last = since;
            let (family, rest) = s.probe.split_once('.').unwrap_or_else(|| panic!("{}: probe {:?}", s.name, s.probe));
            let file = root.join("probes").join(family).join(format!("{rest}.toml"));
            assert!(file.is_file(), "{}: probe {} has no file {}", s.name, s.probe, file.display());
        }
    }
}
