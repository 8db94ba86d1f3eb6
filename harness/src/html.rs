//! The one HTML escaper of the lab's pages (the matrix, the diff report, the conformance table, the
//! release sections): text that may hold anything a subject or a probe wrote goes into elements *and*
//! attributes through [`escape`], which leaves no character that could close either. (The runtime's own
//! escaping of notifications is Claude Code's behaviour, not a page's, and stays its own.)

/// `&`, `<`, `>`, `"` and `'` as entities: safe in element text and in attribute values quoted either way.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn nothing_escaped_can_close_an_element_or_an_attribute() {
        assert_eq!(
            escape(r#"<a href="x" title='y'>&amp;</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;"
        );
        let hostile = "\" onmouseover=\"alert(1)\" x='</td><script>";
        let attr = format!("<td title=\"{}\" data-x='{}'>", escape(hostile), escape(hostile));
        assert_eq!(attr.matches('"').count(), 2, "{attr}");
        assert_eq!(attr.matches('\'').count(), 2, "{attr}");
        assert_eq!(attr.matches('<').count(), 1, "{attr}");
        assert_eq!(escape("plain words, ünïcode ✓"), "plain words, ünïcode ✓");
    }
}
