//! From HTTP body bytes to an assembled message: SSE framing (`eventsource-stream`: CRLF, comments,
//! multi-line data; fed one whole line at a time, see [`sse_events`]), then the protocol's decoder.

use crate::assemble::{Assembly, Delta, IDLE_TICK};
use crate::decode::Decoder;
use crate::error::{ErrorKind, LlmError};
use bytes::{Bytes, BytesMut};
use codewright_protocol::Part;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use std::pin::Pin;
use std::task::{Context, Poll};

/// How long to wait, after the terminal event, for a server to end the body.
const AFTER_COMPLETE: std::time::Duration = std::time::Duration::from_millis(500);

/// The server-sent events of a response body, framed by `eventsource-stream` 0.2.3 — which is
/// handed the body one whole line at a time, because it reads again from its start the line it
/// has not seen the end of with every piece that arrives, and copies what is left of its buffer
/// after every line: a long line arriving a few bytes at a time, or a large piece holding many
/// lines, cost time in the square of their length (found by fuzzing: 36 s for a 19 KB line in
/// 1-byte pieces). Without the UTF-8 byte-order mark an event stream may begin with, on which
/// 0.2.3 panics.
pub fn sse_events<S, E>(body: S) -> impl Stream<Item = Result<Event, EventStreamError<E>>>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    Lines::new(without_bom(body)).eventsource()
}

/// The body without the UTF-8 byte-order mark an event stream may begin with (SSE ignores it):
/// `eventsource-stream` 0.2.3 cuts only its first byte and panics (found by fuzzing). Bytes at the
/// start that begin like the mark but are not it are dropped too: no SSE line starts with them.
fn without_bom<S, E>(body: S) -> impl Stream<Item = Result<Bytes, E>>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let mut seen = 0; // bytes of the stream's start looked at, up to the mark's length
    body.map(move |chunk| {
        chunk.map(|mut bytes| {
            while seen < BOM.len() && !bytes.is_empty() {
                if bytes[0] != BOM[seen] {
                    seen = BOM.len();
                    break;
                }
                bytes = bytes.slice(1..);
                seen += 1;
            }
            bytes
        })
    })
}

/// A body cut into lines, one per item, each with its end (LF, CR or CRLF; a CR that ends a
/// piece is a line's end, and an LF that follows in the next piece comes as a line of its own —
/// SSE reads the two as one end). What follows the last line end waits for the next piece; at
/// the body's end it comes as it is. Lines are slices of the pieces they arrived in, copied only
/// when one spans pieces.
struct Lines<S> {
    body: Pin<Box<S>>,
    /// Bytes received that begin at a line's start and are not yet handed on.
    ready: Bytes,
    /// The start of a line whose end has not arrived (no line end in it).
    partial: BytesMut,
    ended: bool,
}

impl<S> Lines<S> {
    fn new(body: S) -> Self {
        Lines {
            body: Box::pin(body),
            ready: Bytes::new(),
            partial: BytesMut::new(),
            ended: false,
        }
    }
}

/// Where the first line of `bytes` ends (just after its end), if it ends in them.
fn line_end(bytes: &[u8]) -> Option<usize> {
    let at = bytes.iter().position(|&b| b == b'\n' || b == b'\r')?;
    let crlf = bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n');
    Some(at + 1 + usize::from(crlf))
}

impl<S, E> Stream for Lines<S>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(end) = line_end(&this.ready) {
                return Poll::Ready(Some(Ok(this.ready.split_to(end))));
            }
            if !this.ready.is_empty() {
                this.partial
                    .extend_from_slice(&std::mem::take(&mut this.ready));
            }
            if this.ended {
                return Poll::Ready(
                    (!this.partial.is_empty()).then(|| Ok(this.partial.split().freeze())),
                );
            }
            match std::task::ready!(this.body.as_mut().poll_next(cx)) {
                Some(Ok(piece)) if this.partial.is_empty() => this.ready = piece,
                Some(Ok(mut piece)) => match line_end(&piece) {
                    // The line that began in earlier pieces ends in this one.
                    Some(end) => {
                        this.partial.extend_from_slice(&piece.split_to(end));
                        this.ready = piece;
                        return Poll::Ready(Some(Ok(this.partial.split().freeze())));
                    }
                    None => this.partial.extend_from_slice(&piece),
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => this.ended = true,
            }
        }
    }
}

/// How long a stream may go on without adding to the answer (see
/// [`MAX_KEEP_ALIVE_ONLY`](crate::MAX_KEEP_ALIVE_ONLY)), and the error it then ends with.
pub(crate) struct Quiet {
    pub after: std::time::Duration,
    pub error: LlmError,
}

/// Feeds a body stream through SSE framing and `decoder` into `out`, calling `on_delta` with every
/// increment. Returns when the body ends, the body fails (its error is returned as is: a lost
/// connection, a timeout), or the decoder fails (an error event, a malformed event); what was
/// assembled before stays in `out`. A last event without the blank line that should end it is
/// still delivered (some servers omit it). After the terminal event nothing more is decoded, and a
/// server that keeps the body open after it is not waited for. With `quiet`, a stream that adds
/// nothing to the answer for that long (keep-alives, pings) ends with its error.
pub(crate) async fn pump<S>(
    body: S,
    decoder: &mut dyn Decoder,
    out: &mut Assembly,
    on_delta: &mut (dyn FnMut(&Delta, &[Part]) + Send),
    quiet: Option<Quiet>,
) -> Result<(), LlmError>
where
    S: Stream<Item = Result<Bytes, LlmError>>,
{
    let terminated = body.chain(futures_util::stream::iter([Ok(Bytes::from_static(
        b"\n\n",
    ))]));
    let mut events = std::pin::pin!(sse_events(terminated));
    let mut drain_until = None;
    let mut added_at = tokio::time::Instant::now();
    loop {
        if out.is_complete() {
            // The answer is whole. Read on only so the connection ends cleanly (and is reused),
            // for a short while at most: what comes now cannot change the answer.
            let until =
                *drain_until.get_or_insert_with(|| tokio::time::Instant::now() + AFTER_COMPLETE);
            match tokio::time::timeout_at(until, events.next()).await {
                Ok(Some(Ok(_))) => continue,
                _ => break,
            }
        }
        if let Some(quiet) = &quiet {
            if added_at.elapsed() >= quiet.after {
                return Err(quiet.error.clone());
            }
        }
        let event = match tokio::time::timeout(IDLE_TICK, events.next()).await {
            Err(_silent) => {
                on_delta(&Delta::Idle, out.parts());
                continue;
            }
            Ok(None) => break,
            Ok(Some(event)) => event,
        };
        let event = event.map_err(|e| match e {
            EventStreamError::Transport(e) => e,
            // Bytes that are not UTF-8, or that no SSE line can be made of.
            other => LlmError::new(
                ErrorKind::BadResponse,
                format!("the provider sent a malformed event stream ({other}); the answer is incomplete, try again"),
            ),
        })?;
        let name = if event.event.is_empty() {
            "message"
        } else {
            event.event.as_str()
        };
        let result = decoder.event(name, &event.data, out);
        let deltas = out.take_deltas();
        if !deltas.is_empty() {
            added_at = tokio::time::Instant::now();
        }
        for delta in deltas {
            on_delta(&delta, out.parts());
        }
        result?;
    }
    Ok(())
}

/// Decodes a whole recorded response body (SSE) in `protocol` into a message, as if it had
/// arrived over HTTP in one piece. For replaying recordings and for benchmarks.
pub async fn decode_recording(
    protocol: crate::Protocol,
    body: &[u8],
) -> Result<codewright_protocol::Message, LlmError> {
    let mut decoder = crate::decode::decoder(protocol, "recording");
    let mut out = Assembly::default();
    let chunks = futures_util::stream::iter([Ok::<_, LlmError>(Bytes::copy_from_slice(body))]);
    pump(chunks, decoder.as_mut(), &mut out, &mut |_, _| {}, None).await?;
    out.finish("recording")
}
