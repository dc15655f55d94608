//! The hunk applier: `codewright_tools::hunks` (an edit proposal as hunks) and
//! `codewright_tools::apply_hunks` (applying only the hunks the user approved). First byte: a
//! bit mask of the hunks to apply (hunk `i` is applied when bit `i % 8` is set); the rest, as
//! lossy UTF-8, is `old\0new`.
//!
//! Checks that nothing panics, that hunks are numbered by position, and that applying every hunk
//! gives `new` and applying none gives `old`.
#![no_main]

use codewright_tools::{apply_hunks, hunks};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&mask, rest)) = data.split_first() else {
        return;
    };
    let input = String::from_utf8_lossy(rest);
    let (old, new) = input.split_once('\0').unwrap_or((&*input, ""));

    let all = hunks(old, new);
    for (i, hunk) in all.iter().enumerate() {
        assert_eq!(hunk.index, i);
    }
    let every: Vec<usize> = (0..all.len()).collect();
    assert_eq!(apply_hunks(old, new, &every), new, "every hunk applied");
    assert_eq!(apply_hunks(old, new, &[]), old, "no hunk applied");
    let some: Vec<usize> = every.into_iter().filter(|i| mask >> (i % 8) & 1 == 1).collect();
    let _ = apply_hunks(old, new, &some);
});
