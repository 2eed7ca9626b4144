//! Subresource integrity: the page's hash of a file that was rewritten.

use base64::Engine;
use sha2::{Digest, Sha384};

/// The integrity value trunk writes for `bytes`: `sha384-` and the digest in
/// base64.
pub fn sri(bytes: &[u8]) -> String {
    let digest = Sha384::digest(bytes);
    format!(
        "sha384-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// `html` with every `integrity="old"` made `integrity="new"`, and how many
/// there were (none when the page asks for no integrity).
pub fn replace_integrity(html: &str, old: &str, new: &str) -> (String, usize) {
    let from = format!("integrity=\"{old}\"");
    let count = html.matches(&from).count();
    (html.replace(&from, &format!("integrity=\"{new}\"")), count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha384_in_base64() {
        // The SHA-384 of "abc" (FIPS 180-2, appendix D).
        assert_eq!(
            sri(b"abc"),
            "sha384-ywB1P0WjXou1oD1pmsZQBycsMqsO3tFjGotgWkP/W+2AhgcroefMI1i67KE0yCWn"
        );
    }

    #[test]
    fn only_the_old_hash_is_replaced() {
        let html = r#"<link href="a.js" integrity="sha384-OLD"><link href="b.js" integrity="sha384-OTHER">"#;
        let (out, count) = replace_integrity(html, "sha384-OLD", "sha384-NEW");
        assert_eq!(count, 1);
        assert_eq!(
            out,
            r#"<link href="a.js" integrity="sha384-NEW"><link href="b.js" integrity="sha384-OTHER">"#
        );
        assert_eq!(replace_integrity(html, "sha384-NONE", "x").1, 0);
    }
}
