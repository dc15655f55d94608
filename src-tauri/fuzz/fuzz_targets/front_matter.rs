//! Front matter, shared by skills (`SKILL.md`), custom commands and task files: a `---` line,
//! YAML, a `---` line, then Markdown. Then a command's arguments filled into the body
//! (`$ARGUMENTS`, `$1`…, `\$1`). First byte: bit 0 whether front matter is required; the rest,
//! as lossy UTF-8, is `file\0arguments`.
//!
//! Checks that nothing panics (deep or hostile YAML included), that every field reads as text or
//! as a clear error, and that arguments without `$` or `\` come through filled in whole.
#![no_main]

use codewright_extensions::{commands, front_matter};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let input = String::from_utf8_lossy(rest);
    let (file, arguments) = input.split_once('\0').unwrap_or((&input, ""));
    let Ok(doc) = front_matter::parse(file, flags & 1 == 1) else {
        return;
    };
    for key in doc.fields.keys() {
        if let Some(name) = key.as_str() {
            let _ = doc.text(name);
        }
    }
    let filled = commands::expand(&doc.body, arguments);
    if doc.body.contains("$ARGUMENTS") && !doc.body.contains('\\') && !arguments.contains(['$', '\\']) {
        let arguments = arguments.trim();
        assert!(filled.contains(arguments), "{filled:?} lacks {arguments:?}");
    }
});
