//! The gateway's guard on a byte stream (stdio): every line the client sends is checked
//! before the protocol sees it. A line over the size limit, a line that is not JSON, a
//! batch (removed from MCP in 2025-06-18) or an object that is not a JSON-RPC message is
//! answered with a JSON-RPC error right here — and never decided, forwarded or recorded —
//! and the session goes on. Without the guard a malformed line would go unanswered (the
//! client waits until its own timeout) and an endless line would grow without bound.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The largest message a client may send (16 MiB).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// JSON-RPC's parse error.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
const INVALID_REQUEST: i64 = -32600;

/// Puts the guard between the client's `input` and `output` and the protocol: returns the
/// stream the protocol reads and the one it writes, and the task that copies both ways (it
/// ends when the client closes its input and the protocol its output).
pub fn guard<R, W>(
    input: R,
    output: W,
    limit: usize,
) -> (
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
    tokio::task::JoinHandle<()>,
)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (protocol_read, protocol_write) = tokio::io::split(theirs);
    let (from_protocol, to_protocol) = tokio::io::split(ours);
    let (errors, answered) = mpsc::channel::<String>(64);
    let reading = tokio::spawn(read_lines(input, to_protocol, errors, limit));
    let writing = tokio::spawn(write_lines(from_protocol, answered, output));
    let task = tokio::spawn(async move {
        let _ = reading.await;
        let _ = writing.await;
    });
    (protocol_read, protocol_write, task)
}

/// What a line is.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A JSON-RPC message for the protocol.
    Message,
    /// An error to answer with (the JSON-RPC error response, one line).
    Refused(String),
    /// Nothing (an empty line).
    Empty,
}

/// Judges one line (without its newline); `oversized` when it was cut at the limit.
#[must_use]
pub fn judge(line: &[u8], oversized: bool, limit: usize) -> Line {
    if oversized {
        return Line::Refused(error(
            &Value::Null,
            INVALID_REQUEST,
            &format!("the message is over the gateway's {limit}-byte limit; it was not read"),
        ));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Empty;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return Line::Refused(error(
                &Value::Null,
                PARSE_ERROR,
                &format!("the message is not JSON: {e}"),
            ));
        }
    };
    let Value::Object(message) = &value else {
        let what = if value.is_array() {
            "a JSON-RPC batch, which MCP does not accept (since 2025-06-18); send each message on its own"
        } else {
            "not a JSON-RPC message (an object)"
        };
        return Line::Refused(error(
            &Value::Null,
            INVALID_REQUEST,
            &format!("the message is {what}"),
        ));
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let valid_id = matches!(id, Value::Null | Value::String(_) | Value::Number(_));
    let shaped = message.get("jsonrpc") == Some(&Value::String("2.0".to_owned()))
        && (message.get("method").is_some_and(Value::is_string)
            || message.contains_key("result")
            || message.contains_key("error"));
    if !shaped || !valid_id {
        let id = if valid_id { id } else { Value::Null };
        return Line::Refused(error(
            &id,
            INVALID_REQUEST,
            "the message is not a JSON-RPC 2.0 request, notification or response (`jsonrpc: \"2.0\"`, a string `method` or a `result`/`error`, a string or number `id`)",
        ));
    }
    Line::Message
}

fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Reads the client's lines, passing messages to the protocol and refusals to the writer.
async fn read_lines<R, W>(input: R, mut protocol: W, errors: mpsc::Sender<String>, limit: usize)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    let mut line: Vec<u8> = Vec::new();
    let mut oversized = false;
    loop {
        let (done, used, eof) = {
            let Ok(buffer) = input.fill_buf().await else {
                break;
            };
            if buffer.is_empty() {
                (true, 0, true)
            } else {
                match buffer.iter().position(|b| *b == b'\n') {
                    Some(end) => {
                        if !oversized {
                            line.extend_from_slice(buffer.get(..end).unwrap_or_default());
                        }
                        (true, end + 1, false)
                    }
                    None => {
                        if !oversized {
                            line.extend_from_slice(buffer);
                        }
                        (false, buffer.len(), false)
                    }
                }
            }
        };
        input.consume(used);
        if line.len() > limit {
            oversized = true;
            line.clear();
        }
        if !done {
            continue;
        }
        if !(eof && line.is_empty() && !oversized) {
            match judge(&line, oversized, limit) {
                Line::Message => {
                    line.push(b'\n');
                    if protocol.write_all(&line).await.is_err() || protocol.flush().await.is_err() {
                        break;
                    }
                }
                Line::Refused(answer) => {
                    if errors.send(answer).await.is_err() {
                        break;
                    }
                }
                Line::Empty => {}
            }
        }
        line.clear();
        oversized = false;
        if eof {
            break;
        }
    }
    let _ = protocol.shutdown().await;
}

/// Writes the protocol's lines and the guard's refusals to the client, a whole line at a
/// time.
async fn write_lines<R, W>(protocol: R, mut refusals: mpsc::Receiver<String>, mut output: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(protocol).lines();
    let mut refusing = true;
    loop {
        let line = tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => line,
                _ => break,
            },
            refusal = refusals.recv(), if refusing => match refusal {
                Some(refusal) => refusal,
                None => {
                    refusing = false;
                    continue;
                }
            },
        };
        if output.write_all(line.as_bytes()).await.is_err()
            || output.write_all(b"\n").await.is_err()
            || output.flush().await.is_err()
        {
            break;
        }
    }
    let _ = output.shutdown().await;
}

#[cfg(test)]
mod tests {
    //! What the guard lets through and what it answers itself.
    use super::*;

    #[test]
    fn each_kind_of_bad_line_is_answered_with_its_error() {
        let refused = |line: &str| match judge(line.as_bytes(), false, 100) {
            Line::Refused(answer) => serde_json::from_str::<Value>(&answer).unwrap(),
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(refused("{nope")["error"]["code"], PARSE_ERROR);
        assert_eq!(refused("[1, 2]")["error"]["code"], INVALID_REQUEST);
        assert_eq!(refused("42")["error"]["code"], INVALID_REQUEST);
        assert_eq!(refused(r#"{"id": 3, "method": "x"}"#)["id"], 3);
        assert_eq!(
            refused(r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}"#)["id"],
            Value::Null
        );
        assert_eq!(judge(b"  ", false, 100), Line::Empty);
        assert_eq!(
            judge(
                br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#,
                false,
                100
            ),
            Line::Message
        );
        assert!(
            matches!(judge(b"", true, 100), Line::Refused(answer) if answer.contains("100-byte limit"))
        );
    }

    #[tokio::test]
    async fn a_stream_of_lines_is_split_into_messages_and_answers_in_order() {
        let input = format!(
            "{}\n{{bad\n{}\n{}\n",
            r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#,
            "x".repeat(300),
            r#"{"jsonrpc": "2.0", "id": 2, "method": "ping"}"#
        );
        let (mut output, written) = tokio::io::duplex(1 << 16);
        let (mut protocol_read, protocol_write, task) =
            guard(std::io::Cursor::new(input.into_bytes()), written, 100);
        drop(protocol_write);
        let mut passed = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut protocol_read, &mut passed)
            .await
            .unwrap();
        assert_eq!(passed.lines().count(), 2, "{passed}");
        // The protocol is done: its stream closes, and the guard finishes writing.
        drop(protocol_read);
        let mut answered = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut output, &mut answered)
            .await
            .unwrap();
        let codes: Vec<i64> = answered
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["error"]["code"]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert_eq!(codes, vec![PARSE_ERROR, INVALID_REQUEST]);
        task.await.unwrap();
    }
}
