//! Reading input files: a size limit, and errors that name the file and what it was for.

use std::path::Path;

use crate::failure::{CliCode, Failure};

/// The largest input file read (parsers may have their own, smaller limits).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// Reads the `what` file at `path` as text.
///
/// # Errors
/// `unreadable_input` or `input_too_large` (exit 2).
pub fn read(path: &Path, what: &str) -> Result<String, Failure> {
    let unreadable = |e: std::io::Error| {
        Failure::new(
            cairn_runtime::RuntimeError::UNREADABLE_INPUT,
            format!("cannot read the {what} `{}`: {e}", path.display()),
        )
    };
    let len = std::fs::metadata(path).map_err(unreadable)?.len();
    if len > MAX_FILE_BYTES {
        return Err(Failure::new(
            CliCode::INPUT_TOO_LARGE,
            format!(
                "the {what} `{}` is {len} bytes; the limit is {MAX_FILE_BYTES}",
                path.display()
            ),
        ));
    }
    std::fs::read_to_string(path).map_err(unreadable)
}

/// Reads the `what` file at `path` as Python's `json.loads` reads it
/// ([`cairn_interop::py_json`]): for documents of the published formats, which must be decided
/// wherever their reference decides.
///
/// # Errors
/// As [`read`]; `malformed_json` naming the line and column, or `json_too_deep` (exit 2).
pub fn read_py_json(path: &Path, what: &str) -> Result<cairn_interop::py_json::PyJson, Failure> {
    use cairn_core::ErrorCode as _;
    use cairn_interop::py_json::PyJsonIssue;
    let text = read(path, what)?;
    cairn_interop::py_json::parse(&text).map_err(|e| {
        let code = match e.issue {
            PyJsonIssue::Syntax => CliCode::MALFORMED_JSON,
            PyJsonIssue::TooDeep => e.error_code(),
        };
        Failure::new(
            code,
            format!("the {what} `{}` is not JSON: {e}", path.display()),
        )
    })
}

/// Parses the duration given to `flag`: `90s`, `15m`, `2h`, `3d`, `1h30m` or an ISO 8601
/// duration (`PT2H`); not negative.
///
/// # Errors
/// `invalid_input` (exit 2) naming the flag.
pub fn parse_duration(flag: &'static str, text: &str) -> Result<jiff::SignedDuration, Failure> {
    cairn_runtime::duration::parse_duration(flag, text).map_err(|e| Failure::from_error(&e))
}
