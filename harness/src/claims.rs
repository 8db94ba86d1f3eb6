//! The claims catalogue: every behavioural claim a probe may cite, by id. The text is
//! `docs/claims.md` (a copy of the team's `shared/reference/claims.md`, kept in the repo so a clone is
//! self-contained). The copy adds what the lab measured where a seed claim differs from the reference
//! (issue 15): indented `Observed on <version>: …` notes under a claim, citing the probe, and a last
//! section of claims no seed makes, headed [`LAB_SECTION`], whose source is the lab's own measurement
//! (issue 29: context compaction). A test checks, when the shared file is present, that the copy holds
//! every line of it, in order, and adds nothing else.

/// The catalogue's markdown.
pub const CATALOGUE: &str = include_str!("../../docs/claims.md");

/// The heading of the catalogue's last section: claims the lab measured that no seed makes (source
/// `lab`); everything from it to the end is the repo's own, not the shared catalogue's.
pub const LAB_SECTION: &str = "## Measured by the lab";

/// One claim: its id (`GREP-5`) and its text (the rest of its bullet, first line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// `FAMILY-N`.
    pub id: String,
    /// First line of the claim's text.
    pub summary: String,
}

/// Every claim, in catalogue order.
pub fn all() -> Vec<Claim> {
    parse(CATALOGUE)
}

/// The claims of a catalogue in `docs/claims.md`'s form: a line `- FAMILY-N text` each (other lines are
/// prose); a project's own catalogue (`claims = "FILE"` in `probelab.toml`) is read the same way.
pub fn parse(text: &str) -> Vec<Claim> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- ")?;
            let (id, text) = rest.split_once(' ')?;
            let (family, n) = id.split_once('-')?;
            let ok = !family.is_empty()
                && family.chars().all(|c| c.is_ascii_uppercase())
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit());
            ok.then(|| Claim { id: id.to_string(), summary: text.trim().to_string() })
        })
        .collect()
}

/// Is `id` in the catalogue?
pub fn exists(id: &str) -> bool {
    all().iter().any(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_has_the_families_the_probes_cite() {
        let ids: Vec<String> = all().into_iter().map(|c| c.id).collect();
        for id in ["PIPE-1", "PIPE-8", "READ-4", "EDIT-6", "NB-1", "GREP-5", "GLOB-1", "PATCH-1", "READ-5"] {
            assert!(ids.iter().any(|i| i == id), "{id} missing from {ids:?}");
        }
        assert!(!exists("READ-99"));
    }

    /// The lines `copy` adds to `shared` (in order, none changed or dropped): each must belong to an
    /// indented `Observed on …` note; the first line that does not, or the first shared line missing.
    fn added_beyond_observations(shared: &str, copy: &str) -> Result<(), String> {
        let mut want = shared.lines().peekable();
        let mut in_note = false;
        // the lab's own section, with the blank lines before it, is not the shared catalogue's
        let copy = copy.find(&format!("\n{LAB_SECTION}\n")).map_or(copy, |k| copy[..k].trim_end_matches('\n'));
        for (n, line) in copy.lines().enumerate() {
            if want.peek() == Some(&line) {
                want.next();
                in_note = false;
                continue;
            }
            let note =
                line.starts_with("  Observed on ") || (in_note && line.starts_with("  ") && !line.trim().is_empty());
            if !note {
                return Err(format!(
                    "docs/claims.md:{}: {line:?} is neither the shared catalogue's nor an Observed note",
                    n + 1
                ));
            }
            in_note = true;
        }
        match want.next() {
            Some(missing) => Err(format!("docs/claims.md lacks the shared catalogue's line {missing:?}")),
            None => Ok(()),
        }
    }

    #[test]
    fn repo_copy_holds_the_shared_catalogue_and_only_adds_observations() {
        let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference/claims.md");
        if let Ok(text) = std::fs::read_to_string(&shared) {
            if let Err(e) = added_beyond_observations(&text, CATALOGUE) {
                panic!("{e} (against {})", shared.display());
            }
        }
    }

    #[test]
    fn an_observation_may_be_added_and_nothing_else() {
        let shared = "- A-1 one.\n  Observed on 1: x.\n- A-2 two.\n";
        assert!(added_beyond_observations(shared, shared).is_ok());
        let noted = "- A-1 one.\n  Observed on 1: x.\n  Observed on 2: y\n  (the probe).\n- A-2 two.\n";
        assert!(added_beyond_observations(shared, noted).is_ok());
        assert!(added_beyond_observations(shared, "- A-1 one, changed.\n  Observed on 1: x.\n- A-2 two.\n").is_err());
        assert!(added_beyond_observations(shared, "- A-1 one.\n  Observed on 1: x.\n").is_err());
        assert!(added_beyond_observations(shared, "- A-1 one.\n  Observed on 1: x.\n- A-3 new.\n- A-2 two.\n").is_err());
        let lab = format!("{shared}\n{LAB_SECTION}\n- CTX-1 (lab) measured.\n");
        assert!(added_beyond_observations(shared, &lab).is_ok());
        let early = format!("- A-1 one.\n{LAB_SECTION}\n- A-2 two.\n");
        assert!(added_beyond_observations(shared, &early).is_err(), "a shared line after the lab section is missing");
    }
}
