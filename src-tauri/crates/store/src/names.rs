use crate::{Result, StoreError};

/// Longest name or title accepted, in characters.
const MAX_CHARS: usize = 200;

/// Checks a user-typed name or title and returns it without surrounding whitespace. Everything
/// else — CJK, emoji, right-to-left text — is kept exactly as typed.
pub(crate) fn clean(what: &str, raw: &str) -> Result<String> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(StoreError::Invalid(format!("the {what} cannot be empty")));
    }
    if name.chars().any(char::is_control) {
        return Err(StoreError::Invalid(format!(
            "the {what} must be a single line without control characters"
        )));
    }
    let len = name.chars().count();
    if len > MAX_CHARS {
        return Err(StoreError::Invalid(format!(
            "the {what} is {len} characters long; the limit is {MAX_CHARS}"
        )));
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn keeps_unicode_exactly_and_rejects_blank() {
        for name in ["项目 🚀", "مشروع", "\u{202B}rtl\u{202C}", "a  b"] {
            assert_eq!(clean("name", name).unwrap(), name);
        }
        assert_eq!(clean("name", "  padded \t").unwrap(), "padded");
        for bad in ["", "   ", "\u{3000}\t", "two\nlines"] {
            assert!(clean("name", bad).is_err(), "{bad:?} should be rejected");
        }
        let long = "x".repeat(201);
        assert!(clean("title", &long)
            .unwrap_err()
            .to_string()
            .contains("201 characters"));
    }
}
