//! `read_file`: a file's lines, numbered, or an image.

use std::io::{BufRead, Read};

use super::{blocking, human_bytes, io_error, looks_binary, resolve_path, MAX_FILE_BYTES};
use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use base64::Engine;
use codewright_protocol::{ToolCategory, ToolContent, ToolDetail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub struct ReadFile;

/// Lines returned when no limit is given.
const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut (minified files).
const MAX_LINE_CHARS: usize = 2000;
/// Images larger than this are not sent to the model.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Path of the file, relative to the project root.
    path: String,
    /// First line to read, from 1.
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// How many lines to read (default 2000).
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a file of the project. Returns numbered lines (`   12\\tcode`); use offset and limit for a range of a large file. Images (PNG, JPEG, GIF, WebP) are returned as images. Read a file before editing it."
    }
    fn input_schema(&self) -> Value {
        schema_of::<Input>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: Input = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let path = match resolve_path(cx, &input.path, false).await {
            Ok(p) => p,
            Err(e) => return e,
        };
        let session = cx.session.clone();
        blocking(move || read(&session, &path, input.offset, input.limit))
            .await
            .unwrap_or_else(|e| e)
    }
}

fn read(
    session: &crate::Session,
    path: &crate::paths::ResolvedPath,
    offset: Option<u64>,
    limit: Option<u64>,
) -> ToolOutput {
    let shown = &path.display;
    // Opened once, along the checked path (never through a link swapped in since) and without
    // waiting; everything below reads this one file.
    let file = match codewright_nofollow::open(&path.real) {
        Ok(f) => f,
        Err(e) => return io_error(shown, &e),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return io_error(shown, &e),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a folder; use list_dir to see what it contains"
        ));
    }
    if !meta.is_file() {
        return ToolOutput::error(format!(
            "{shown} is not a regular file (a named pipe, a socket or a device); it is not read"
        ));
    }
    if let Some(mime) = image_mime(&path.real) {
        if meta.len() > MAX_IMAGE_BYTES {
            return ToolOutput::error(format!(
                "{shown} is an image of {}, larger than the {} sent to models",
                human_bytes(meta.len()),
                human_bytes(MAX_IMAGE_BYTES)
            ));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        return match std::io::Read::read_to_end(&mut { file }, &mut bytes) {
            Ok(_) => {
                session.remember(&path.real, &bytes);
                ToolOutput {
                    content: vec![
                        ToolContent::Text {
                            text: format!("{shown}: {mime} image, {}", human_bytes(meta.len())),
                        },
                        ToolContent::Image {
                            mime: mime.to_string(),
                            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                        },
                    ],
                    is_error: false,
                    detail: None,
                }
            }
            Err(e) => io_error(shown, &e),
        };
    }
    let ranged = offset.is_some() || limit.is_some();
    if meta.len() > MAX_FILE_BYTES && !ranged {
        return ToolOutput::error(format!(
            "{shown} is {}; read a range of it with offset and limit (for example offset 1, limit 500), or search it with grep",
            human_bytes(meta.len())
        ));
    }
    // Read line by line, keeping only the start of each line, so a range of a huge file takes
    // the memory of the range, not of the file or of its longest line; the whole content is
    // hashed on the way (what the agent saw, for later edits).
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    match reader.fill_buf() {
        Ok(head) if looks_binary(head) => {
            return ToolOutput::error(format!(
                "{shown} is a binary file ({}); it cannot be shown as text",
                human_bytes(meta.len())
            ))
        }
        Ok(_) => {}
        Err(e) => return io_error(shown, &e),
    }
    let mut hasher = blake3::Hasher::new();
    let mut utf8 = Utf8Check::default();
    let mut crlf = false;
    let first = offset.unwrap_or(1).max(1) as usize;
    let limit = limit.map(|l| l as usize).unwrap_or(DEFAULT_LIMIT);
    let mut out = String::new();
    let mut total = 0usize;
    let mut last = 0usize;
    let (mut buf, mut piece) = (Vec::new(), Vec::new());
    loop {
        let seen = |bytes: &[u8]| {
            hasher.update(bytes);
            utf8.feed(bytes);
        };
        let end = match next_line(&mut reader, &mut buf, &mut piece, seen) {
            Ok(Some(end)) => end,
            Ok(None) => break,
            Err(e) => return io_error(shown, &e),
        };
        total += 1;
        crlf |= end.crlf;
        if total < first || total >= first + limit {
            continue;
        }
        last = total;
        let mut line = buf.as_slice();
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l.strip_suffix(b"\r").unwrap_or(l);
        }
        let line = String::from_utf8_lossy(line);
        if end.cut || line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            out.push_str(&format!(
                "{total:>6}\t{cut}… [line cut at {MAX_LINE_CHARS} characters]\n"
            ));
        } else {
            out.push_str(&format!("{total:>6}\t{line}\n"));
        }
    }
    let utf8 = utf8.valid();
    session.remember_hash(&path.real, hasher.finalize());
    if total == 0 {
        out.push_str(&format!("({shown} is empty)\n"));
    } else if first > total {
        return ToolOutput::error(format!(
            "{shown} has {total} lines; offset {first} is past the end"
        ));
    } else if last < total {
        out.push_str(&format!(
            "({shown} has {total} lines; showing {first}–{last}. Read more with offset {}.)\n",
            last + 1
        ));
    }
    if !utf8 {
        out.push_str("(This file is not valid UTF-8; invalid bytes are shown as �. edit_file keeps the other bytes as they are, but old_string must match exactly.)\n");
    }
    if crlf {
        out.push_str("(This file uses CRLF line endings; edits keep them.)\n");
    }
    ToolOutput::text(out).with_detail(ToolDetail::File {
        path: shown.clone(),
        first_line: if total == 0 { 0 } else { first as u64 },
        last_line: last as u64,
        total_lines: total as u64,
    })
}

/// How a line read by [`next_line`] ended.
struct LineEnd {
    /// Only its first [`KEPT_LINE_BYTES`] were kept.
    cut: bool,
    /// It ended with `\r\n`.
    crlf: bool,
}

/// Bytes of a line kept: enough for [`MAX_LINE_CHARS`] characters of up to 4 bytes and a `\r\n`.
const KEPT_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 2;

/// The next line of `reader` (with its `\n`) in `line`, of which only the first
/// [`KEPT_LINE_BYTES`] are kept, so a file of one huge line (minified, generated) takes no more
/// memory than a short one. Every byte of the line is passed to `seen`, in pieces read through
/// `piece`. `None` at the end of the file.
fn next_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    piece: &mut Vec<u8>,
    mut seen: impl FnMut(&[u8]),
) -> std::io::Result<Option<LineEnd>> {
    line.clear();
    let (mut length, mut before) = (0usize, 0u8);
    loop {
        piece.clear();
        let n = (&mut *reader).take(64 * 1024).read_until(b'\n', piece)?;
        if n == 0 {
            let cut = line.len() < length;
            return Ok((length > 0).then_some(LineEnd { cut, crlf: false }));
        }
        seen(piece);
        let room = KEPT_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&piece[..n.min(room)]);
        length += n;
        if piece[n - 1] == b'\n' {
            let crlf = if n >= 2 {
                piece[n - 2] == b'\r'
            } else {
                before == b'\r'
            };
            let cut = line.len() < length;
            return Ok(Some(LineEnd { cut, crlf }));
        }
        before = piece[n - 1];
    }
}

/// Whether bytes given in pieces are UTF-8, a character split between two pieces included.
#[derive(Default)]
struct Utf8Check {
    invalid: bool,
    /// The start of a character the last piece ended in.
    pending: Vec<u8>,
}

impl Utf8Check {
    fn feed(&mut self, bytes: &[u8]) {
        if self.invalid {
            return;
        }
        let joined;
        let bytes = if self.pending.is_empty() {
            bytes
        } else {
            joined = [std::mem::take(&mut self.pending).as_slice(), bytes].concat();
            joined.as_slice()
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => self.pending = bytes[e.valid_up_to()..].to_vec(),
            Err(_) => self.invalid = true,
        }
    }

    fn valid(&self) -> bool {
        !self.invalid && self.pending.is_empty()
    }
}

fn image_mime(path: &std::path::Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}
