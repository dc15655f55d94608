//! A command's output, bounded however much it prints.
//!
//! A reader thread drains the command's pipe as fast as the command writes (so a command never
//! waits on us) into a [`CommandOutput`], which keeps two [`BoundedOutput`]s, each at most
//! [`HEAD_BYTES`] + [`TAIL_BYTES`]:
//!
//! - all of the output: its first [`HEAD_BYTES`] and its last [`TAIL_BYTES`], with a marker saying
//!   how many bytes and lines were left out between them — the result of a foreground command (for
//!   the model and, as the same text, the tool panel's detail);
//! - the output nobody has taken yet, bounded the same way — the live progress of a foreground
//!   command (taken at most every [`PROGRESS_INTERVAL`]; when more arrived than is kept, the event
//!   is a note saying so plus the newest [`TAIL_BYTES`]) and what `process_output` returns for a
//!   background one.
//!
//! So a command printing gigabytes holds about 110 KB here (the two buffers and the read buffer),
//! its true end is always kept, and no text is cut inside a UTF-8 character (invalid bytes are
//! decoded lossily).

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Output kept from the start of a command's output (and of each unread stretch of it).
pub const HEAD_BYTES: usize = 12 * 1024;
/// Output kept from the end of a command's output (and of each unread stretch of it).
pub const TAIL_BYTES: usize = 12 * 1024;
/// A foreground command's live output is reported at most this often.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// How much one read from the pipe takes (a Linux pipe holds 64 KB).
const READ_BYTES: usize = 64 * 1024;

/// Output with the middle left out past a size: the first `head_limit` bytes, the last
/// `tail_limit` bytes, and how many bytes and line ends were pushed in all.
#[derive(Debug, Clone)]
pub struct BoundedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_limit: usize,
    tail_limit: usize,
    bytes: u64,
    lines: u64,
}

/// The head and tail as shown, and what was left out between them.
struct Shown<'a> {
    head: &'a [u8],
    tail: Vec<u8>,
    /// Bytes and line ends between `head` and `tail` (0 when they are contiguous).
    left_bytes: u64,
    left_lines: u64,
}

impl BoundedOutput {
    pub fn new(head_limit: usize, tail_limit: usize) -> BoundedOutput {
        BoundedOutput {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_limit,
            tail_limit,
            bytes: 0,
            lines: 0,
        }
    }

    /// Appends output. Only the bytes that stay kept are copied.
    pub fn push(&mut self, bytes: &[u8]) {
        self.push_counted(bytes, line_ends(bytes));
    }

    /// [`BoundedOutput::push`], with the line ends of `bytes` already counted.
    fn push_counted(&mut self, mut bytes: &[u8], lines: u64) {
        self.bytes += bytes.len() as u64;
        self.lines += lines;
        let take = (self.head_limit - self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.tail_limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_limit..]);
        } else {
            let excess = (self.tail.len() + bytes.len()).saturating_sub(self.tail_limit);
            self.tail.drain(..excess);
            self.tail.extend(bytes);
        }
    }

    /// Nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Bytes left out between head and tail (with the pieces of characters cut there).
    pub fn left_out(&self) -> u64 {
        self.shown().left_bytes
    }

    /// The kept text: the head, a `[… X / Y lines left out …]` line when something was, the tail.
    pub fn text(&self) -> String {
        let shown = self.shown();
        if shown.left_bytes == 0 {
            return String::from_utf8_lossy(&[shown.head, shown.tail.as_slice()].concat())
                .into_owned();
        }
        let mut out = String::from_utf8_lossy(shown.head).into_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "[… {} / {} left out …]\n",
            human_bytes(shown.left_bytes),
            count(shown.left_lines, "line")
        ));
        out.push_str(&String::from_utf8_lossy(&shown.tail));
        out
    }

    /// The newest text: all of it when nothing was left out, else a note that output is arriving
    /// faster than shown and the tail.
    pub fn latest(&self) -> String {
        let shown = self.shown();
        if shown.left_bytes == 0 {
            return self.text();
        }
        format!(
            "[… output is arriving faster than shown: {} / {} skipped …]\n{}",
            human_bytes(self.bytes - shown.tail.len() as u64),
            count(self.lines - line_ends(&shown.tail), "line"),
            String::from_utf8_lossy(&shown.tail)
        )
    }

    /// Head and tail, cut at character boundaries when something was left out between them.
    fn shown(&self) -> Shown<'_> {
        let (a, b) = self.tail.as_slices();
        let mut tail = [a, b].concat();
        if (self.head.len() + tail.len()) as u64 == self.bytes {
            return Shown {
                head: &self.head,
                tail,
                left_bytes: 0,
                left_lines: 0,
            };
        }
        let head = &self.head[..complete_len(&self.head)];
        let torn = tail
            .iter()
            .take(3)
            .take_while(|b| is_continuation(**b))
            .count();
        tail.drain(..torn);
        Shown {
            head,
            left_bytes: self.bytes - (head.len() + tail.len()) as u64,
            left_lines: self.lines - line_ends(head) - line_ends(&tail),
            tail,
        }
    }

    /// Removes from the end a character whose first bytes have arrived but not the rest, and
    /// returns its bytes.
    fn split_unfinished(&mut self) -> Vec<u8> {
        let kept = self.head.len() + self.tail.len();
        let mut last: Vec<u8> = self
            .head
            .iter()
            .chain(&self.tail)
            .skip(kept.saturating_sub(3))
            .copied()
            .collect();
        let unfinished = last.split_off(complete_len(&last));
        let from_tail = unfinished.len().min(self.tail.len());
        self.tail.truncate(self.tail.len() - from_tail);
        self.head
            .truncate(self.head.len() - (unfinished.len() - from_tail));
        self.bytes -= unfinished.len() as u64;
        unfinished
    }
}

/// A UTF-8 continuation byte (`10xxxxxx`): never the start of a character.
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The length of `bytes` without an unfinished UTF-8 character at its end.
fn complete_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let byte = bytes[n - back];
        if !is_continuation(byte) {
            let needed = match byte {
                0xF0..=0xFF => 4,
                0xE0..=0xEF => 3,
                0xC0..=0xDF => 2,
                _ => 1,
            };
            return if needed > back { n - back } else { n };
        }
    }
    n
}

/// How many `\n` are in `bytes`.
fn line_ends(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

/// `1 line`, `3 lines`.
fn count(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What a reader thread has collected of one command's output (stdout and stderr interleaved).
pub struct CommandOutput {
    state: Mutex<State>,
}

struct State {
    /// All of the output (the result).
    all: BoundedOutput,
    /// The output not yet taken (progress, `process_output`).
    unread: BoundedOutput,
    /// When output last arrived (or reading began).
    last_output: Instant,
    /// The pipe reached its end.
    ended: bool,
}

impl CommandOutput {
    fn new() -> CommandOutput {
        CommandOutput {
            state: Mutex::new(State {
                all: BoundedOutput::new(HEAD_BYTES, TAIL_BYTES),
                unread: BoundedOutput::new(HEAD_BYTES, TAIL_BYTES),
                last_output: Instant::now(),
                ended: false,
            }),
        }
    }

    /// Starts a thread that reads `pipe` to its end into a new output. The receiver resolves when
    /// it has. The thread also stops once nobody holds the output any more.
    pub fn collect(
        mut pipe: impl Read + Send + 'static,
    ) -> (Arc<CommandOutput>, oneshot::Receiver<()>) {
        let output = Arc::new(CommandOutput::new());
        let collected = Arc::downgrade(&output);
        let (ended_tx, ended_rx) = oneshot::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; READ_BYTES];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let Some(output) = collected.upgrade() else {
                    return;
                };
                output.state.lock().expect("output lock").push(&buf[..n]);
            }
            if let Some(output) = collected.upgrade() {
                output.state.lock().expect("output lock").ended = true;
            }
            let _ = ended_tx.send(());
        });
        (output, ended_rx)
    }

    /// All of the output so far, bounded.
    pub fn all(&self) -> BoundedOutput {
        self.state.lock().expect("output lock").all.clone()
    }

    /// The output since the last take (bounded). A character still arriving stays for the next.
    pub fn take_unread(&self) -> BoundedOutput {
        let mut state = self.state.lock().expect("output lock");
        let fresh = BoundedOutput::new(HEAD_BYTES, TAIL_BYTES);
        let mut taken = std::mem::replace(&mut state.unread, fresh);
        if !state.ended {
            let unfinished = taken.split_unfinished();
            state.unread.push(&unfinished);
        }
        taken
    }

    /// When output last arrived (or reading began).
    pub fn last_output(&self) -> Instant {
        self.state.lock().expect("output lock").last_output
    }
}

impl State {
    fn push(&mut self, bytes: &[u8]) {
        let lines = line_ends(bytes);
        self.all.push_counted(bytes, lines);
        self.unread.push_counted(bytes, lines);
        self.last_output = Instant::now();
    }
}

/// `1.5 MB`, `312 KB`, `20 bytes`.
pub fn human_bytes(n: u64) -> String {
    const KB: f64 = 1024.0;
    let f = n as f64;
    if f >= KB * KB * KB {
        format!("{:.1} GB", f / KB / KB / KB)
    } else if f >= KB * KB {
        format!("{:.1} MB", f / KB / KB)
    } else if f >= KB {
        format!("{:.0} KB", f / KB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbered lines, some with multi-byte characters.
    fn sample() -> Vec<u8> {
        (0..5000)
            .map(|i| format!("line {i} — é€😀\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn short_output_is_kept_whole() {
        let mut out = BoundedOutput::new(10, 10);
        assert!(out.is_empty());
        out.push("héllo\n".as_bytes());
        out.push(b"world");
        assert_eq!(out.text(), "héllo\nworld");
        assert_eq!(out.latest(), "héllo\nworld");
        assert_eq!(out.left_out(), 0);
    }

    #[test]
    fn head_and_tail_are_kept_and_the_marker_counts_what_is_not() {
        let mut out = BoundedOutput::new(10, 10);
        out.push(b"0123456789abc\n");
        for _ in 0..1000 {
            out.push(b"xyz\n");
        }
        out.push(b"[THE END]\n");
        // 4024 bytes and 1002 line ends in all; 10 + 10 bytes and 1 line end kept.
        assert_eq!(out.left_out(), 4004);
        assert_eq!(
            out.text(),
            "0123456789\n[… 4 KB / 1001 lines left out …]\n[THE END]\n"
        );
        assert_eq!(
            out.latest(),
            "[… output is arriving faster than shown: 4 KB / 1001 lines skipped …]\n[THE END]\n"
        );
    }

    #[test]
    fn characters_are_never_cut_at_the_boundaries() {
        // 3-byte characters: a 5-byte head ends inside the second, a 5-byte tail starts inside one.
        let mut out = BoundedOutput::new(5, 5);
        out.push("€€€€€€€€".as_bytes());
        assert_eq!(out.text(), "€\n[… 18 bytes / 0 lines left out …]\n€");
        assert_eq!(out.left_out(), 18);
        // Head and tail that meet exactly: a character across them is whole.
        let mut out = BoundedOutput::new(6, 6);
        out.push("😀😀😀".as_bytes());
        assert_eq!(out.text(), "😀😀😀");
    }

    #[test]
    fn small_writes_and_one_big_write_keep_the_same() {
        let data = sample();
        let mut whole = BoundedOutput::new(1000, 1000);
        whole.push(&data);
        for size in [1, 2, 3, 7, 999, 4096] {
            let mut pieces = BoundedOutput::new(1000, 1000);
            for chunk in data.chunks(size) {
                pieces.push(chunk);
            }
            assert_eq!(pieces.text(), whole.text(), "chunks of {size}");
        }
        let text = whole.text();
        assert!(text.starts_with("line 0 — é€😀\n"));
        assert!(text.ends_with("line 4999 — é€😀\n"));
        assert!(!text.contains('\u{FFFD}'), "no character was cut");
        // The head ends inside the 😀 of line 45 (dropped whole); line 4958 is cut in its number.
        assert!(text.contains("line 45 — é€\n[… 114 KB / 4913 lines left out …]\n8 — é€😀\n"));
        assert_eq!(whole.left_out(), data.len() as u64 - 997 - 1000);
    }

    #[test]
    fn unread_output_is_taken_whole_characters_at_a_time() {
        let output = CommandOutput::new();
        let euro = "€".as_bytes();
        output.state.lock().unwrap().push(&[b'a', euro[0]]);
        assert_eq!(output.take_unread().text(), "a");
        output.state.lock().unwrap().push(&euro[1..]);
        assert_eq!(output.take_unread().text(), "€");
        assert!(output.take_unread().is_empty());
        assert_eq!(output.all().text(), "a€");
    }

    #[test]
    fn a_fast_writer_is_drained_and_bounded() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let (output, ended) = CommandOutput::collect(reader);
        let line = b"abcdefghij\n".repeat(10_000);
        std::thread::spawn(move || {
            use std::io::Write;
            writer.write_all(b"FIRST\n").unwrap();
            for _ in 0..500 {
                writer.write_all(&line).unwrap();
            }
            writer.write_all(b"LAST\n").unwrap();
        });
        ended.blocking_recv().unwrap();
        let all = output.all();
        let text = all.text();
        assert!(text.starts_with("FIRST\nabcdefghij\n"));
        assert!(text.ends_with("abcdefghij\nLAST\n"));
        assert!(text.contains("lines left out"));
        assert!(text.len() <= HEAD_BYTES + TAIL_BYTES + 100);
        assert_eq!(
            all.left_out(),
            11 + 55_000_000 - (HEAD_BYTES + TAIL_BYTES) as u64
        );
        let unread = output.take_unread();
        assert!(unread.latest().len() <= TAIL_BYTES + 100);
        assert!(unread.latest().ends_with("LAST\n"));
    }
}
