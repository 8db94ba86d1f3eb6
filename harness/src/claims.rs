//! The claims catalogue: every behavioural claim a probe may cite, by id. The text is
//! `docs/claims.md` (a copy of the team's `shared/reference/claims.md`, kept in the repo so a clone is
//! self-contained; a test checks the copy against the shared file when that file is present).

/// The catalogue's markdown.
pub const CATALOGUE: &str = include_str!("../../docs/claims.md");

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
    CATALOGUE
        .lines()
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

    #[test]
    fn repo_copy_matches_the_shared_catalogue_when_present() {
        let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference/claims.md");
        if let Ok(text) = std::fs::read_to_string(&shared) {
            assert_eq!(text, CATALOGUE, "docs/claims.md differs from {}: copy it again", shared.display());
        }
    }
}
