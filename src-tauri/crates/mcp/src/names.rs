//! Tool names as providers accept them: `server__tool`, only `[A-Za-z0-9_-]`, at most 64
//! characters, never two alike.

use std::collections::HashSet;

const MAX: usize = 64;

fn clean(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        "_".into()
    } else {
        out
    }
}

/// The registry name of `tool` from `server`, unique among `taken` (which it is added to).
pub fn tool_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let base = format!("{}__{}", clean(server), clean(tool));
    let mut name = fit(&base, "");
    let mut n = 2;
    while taken.contains(&name) {
        name = fit(&base, &format!("_{n}"));
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// `base` + `suffix`, cut to the limit (a long name keeps a short hash of the whole).
fn fit(base: &str, suffix: &str) -> String {
    if base.len() + suffix.len() <= MAX {
        return format!("{base}{suffix}");
    }
    let hash = blake3::hash(base.as_bytes()).to_hex();
    let tag = &hash[..8];
    let keep = MAX - suffix.len() - tag.len() - 1;
    format!("{}_{tag}{suffix}", &base[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_short_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(
            tool_name("everything", "get-sum", &mut taken),
            "everything__get-sum"
        );
        assert_eq!(
            tool_name("my server", "do.thing/now", &mut taken),
            "my_server__do_thing_now"
        );
        assert_eq!(
            tool_name("my.server", "do thing/now", &mut taken),
            "my_server__do_thing_now_2"
        );
        let long = tool_name(&"s".repeat(40), &"t".repeat(40), &mut taken);
        assert_eq!(long.len(), 64);
        let other = tool_name(&"s".repeat(40), &format!("{}x", "t".repeat(40)), &mut taken);
        assert_ne!(long, other);
        for name in &taken {
            assert!(
                name.len() <= 64
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
    }
}
