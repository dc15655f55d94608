//! Assistant Markdown as safe HTML, for streaming: the text is split at top-level block
//! boundaries; blocks followed by another are finished (a window keeps their DOM and never
//! renders them again), the last one is the tail (rendered again as more text arrives).
//! pulldown-cmark parses once; raw HTML from the model is shown as text, and ammonia sanitizes
//! what comes out, so nothing a model writes can add a script, a handler or a navigation.

use ammonia::Builder;
use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Markdown a window asks to have rendered.
#[derive(Debug, Clone, Deserialize)]
pub struct MarkdownText {
    /// The text, or the part of it after the finished blocks the window already shows.
    pub text: String,
    /// No more text will come: every block is finished.
    pub done: bool,
}

/// Markdown rendered for a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rendered {
    /// Sanitized HTML of each finished top-level block, in order.
    pub blocks: Vec<String>,
    /// How much of the text the finished blocks cover, in UTF-16 code units (JS string length).
    pub consumed: usize,
    /// Sanitized HTML of the unfinished rest ("" when `done`).
    pub tail: String,
}

/// Renders `text`. With `done`, every block is finished.
pub fn render(text: &str, done: bool) -> Rendered {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // Each top-level block's events and where it starts.
    let mut blocks: Vec<(usize, Vec<Event>)> = Vec::new();
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        if depth == 0 {
            blocks.push((range.start, Vec::new()));
        }
        match &event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
        let event = match event {
            // Raw HTML is the model's text, not markup.
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            other => other,
        };
        blocks.last_mut().expect("pushed above").1.push(event);
    }
    let tail = if done { None } else { blocks.pop() };
    let consumed_bytes = tail.as_ref().map_or(text.len(), |(start, _)| *start);
    Rendered {
        blocks: blocks
            .into_iter()
            .map(|(_, events)| to_html(events))
            .collect(),
        consumed: text[..consumed_bytes].encode_utf16().count(),
        tail: tail.map(|(_, events)| to_html(events)).unwrap_or_default(),
    }
}

fn to_html(events: Vec<Event>) -> String {
    // Links keep their target for the window's confirm dialog; images from a model are not
    // loaded (the CSP would refuse them anyway): their text stands in.
    let events = events.into_iter().filter_map(|e| match e {
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        other => Some(other),
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    sanitizer().clean(&out).to_string()
}

fn sanitizer() -> &'static Builder<'static> {
    static CLEAN: OnceLock<Builder<'static>> = OnceLock::new();
    CLEAN.get_or_init(|| {
        let mut b = Builder::default();
        b.url_schemes(["http", "https", "mailto"].into())
            .link_rel(Some("noopener noreferrer"))
            .add_tags(["input"])
            .add_tag_attributes("input", ["type", "checked", "disabled"])
            .add_tag_attributes("code", ["class"])
            .attribute_filter(|element, attribute, value| match (element, attribute) {
                // Only a code block's language, for the highlighter.
                ("code", "class") => value
                    .strip_prefix("language-")
                    .filter(|l| {
                        !l.is_empty()
                            && l.chars()
                                .all(|c| c.is_ascii_alphanumeric() || "+#-_".contains(c))
                    })
                    .map(|_| value.into()),
                ("input", "type") => (value == "checkbox").then(|| value.into()),
                _ => Some(value.into()),
            });
        b
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_blocks_are_kept_and_the_tail_is_the_last_block() {
        let text = "# Title\n\nFirst paragraph.\n\n```rust\nfn main() {}\n";
        let r = render(text, false);
        assert_eq!(
            r.blocks,
            vec!["<h1>Title</h1>\n", "<p>First paragraph.</p>\n"]
        );
        // The unclosed fence is the tail, rendered as code so far.
        assert!(
            r.tail
                .contains("<code class=\"language-rust\">fn main() {}"),
            "{}",
            r.tail
        );
        assert_eq!(&text[r.consumed..], "```rust\nfn main() {}\n");
        // Going on from there renders only the rest.
        let rest = render(&text[r.consumed..], true);
        assert_eq!(rest.blocks.len(), 1);
        assert_eq!(rest.tail, "");
    }

    #[test]
    fn consumed_counts_utf16_units() {
        let r = render("修复 😀\n\nnext", false);
        assert_eq!(r.blocks.len(), 1);
        // "修复 😀\n\n": 2 + 1 + 2 (a surrogate pair) + 2.
        assert_eq!(r.consumed, 7);
    }

    #[test]
    fn hostile_markdown_cannot_run_or_navigate() {
        let text = "<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n\
                    [click](javascript:alert(1)) [ok](https://example.com)\n\n\
                    <svg><script>alert(1)</script></svg>\n\n![x](https://tracker.example/p.png)\n\n\
                    ```\"><script>alert(1)</script>\nx\n```\n";
        let r = render(text, true);
        let html = r.blocks.concat();
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<svg"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        // The handler is only text (escaped), never an attribute.
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "raw HTML shows as text: {html}"
        );
        assert!(html.contains("href=\"https://example.com\""), "{html}");
        assert!(html.contains("rel=\"noopener noreferrer\""), "{html}");
    }

    #[test]
    fn tables_and_task_lists_render() {
        let r = render(
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- [ ] todo\n",
            true,
        );
        let html = r.blocks.concat();
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("type=\"checkbox\""), "{html}");
    }
}
