//! `read_file`: a file's lines, numbered, or an image.

use std::io::BufRead;

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
    let meta = match std::fs::metadata(&path.real) {
        Ok(m) => m,
        Err(e) => return io_error(shown, &e),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a folder; use list_dir to see what it contains"
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
        return match std::fs::read(&path.real) {
            Ok(bytes) => {
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
    // Read line by line, so a range of a huge file takes the memory of the range (and of its
    // longest line), not of the file; the whole content is hashed on the way (what the agent
    // saw, for later edits).
    let mut reader = match std::fs::File::open(&path.real) {
        Ok(f) => std::io::BufReader::with_capacity(64 * 1024, f),
        Err(e) => return io_error(shown, &e),
    };
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
    let (mut utf8, mut crlf) = (true, false);
    let first = offset.unwrap_or(1).max(1) as usize;
    let limit = limit.map(|l| l as usize).unwrap_or(DEFAULT_LIMIT);
    let mut out = String::new();
    let mut total = 0usize;
    let mut last = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return io_error(shown, &e),
        }
        hasher.update(&buf);
        total += 1;
        let mut line = buf.as_slice();
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l;
            if let Some(l) = line.strip_suffix(b"\r") {
                crlf = true;
                line = l;
            }
        }
        utf8 &= std::str::from_utf8(line).is_ok();
        if total < first || total >= first + limit {
            continue;
        }
        last = total;
        let line = String::from_utf8_lossy(line);
        if line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            out.push_str(&format!(
                "{total:>6}\t{cut}… [line cut at {MAX_LINE_CHARS} characters]\n"
            ));
        } else {
            out.push_str(&format!("{total:>6}\t{line}\n"));
        }
    }
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
