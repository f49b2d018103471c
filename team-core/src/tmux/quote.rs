//! Quoting for tmux command strings (the text tmux's own parser reads, as in `if-shell`'s
//! command arguments).
//!
//! A word is wrapped in single quotes; inside them tmux takes every character literally, and a
//! `'` is written as `'\''` (close, escaped quote, reopen), as in sh. Adjacent quoted parts
//! join into one word, so no value can end the word and start a second command.

/// Quotes `s` as one word of a tmux command string.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Checks text for proven send-keys: printable text only. Control characters would act as keys
/// (Enter, C-c) in the pane, so they are refused instead of sent.
pub fn check_literal_text(s: &str) -> Result<(), String> {
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(format!(
            "text contains the control character U+{:04X}; only printable text can be typed into a pane",
            c as u32
        ));
    }
    Ok(())
}

/// Whether `s` can be embedded bare in a tmux format condition (`#{==:a,b}`): no `,`, `}`,
/// `#`, `{`, quotes, spaces or anything unusual.
pub fn is_format_safe(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'%' | b'$' | b'@' | b'_' | b'-' | b'.')
        })
}

/// Quotes `s` as one word for `sh -c` (the same single-quote scheme).
pub fn sh_quote(s: &str) -> String {
    quote(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn format_safety() {
        assert!(is_format_safe("%12"));
        assert!(is_format_safe("0b6c3d2e-1f2a-4b5c-8d9e-0a1b2c3d4e5f"));
        assert!(!is_format_safe("a,b"));
        assert!(!is_format_safe("a}"));
        assert!(!is_format_safe("#{pane_id}"));
        assert!(!is_format_safe(""));
    }

    #[test]
    fn control_text_refused() {
        assert!(check_literal_text("hello ü 日本 'x' ; $HOME").is_ok());
        assert!(check_literal_text("a\nb").is_err());
        assert!(check_literal_text("\u{1b}[A").is_err());
    }
}
