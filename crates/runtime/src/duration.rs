//! Durations as people write them on a command line or in a query string.

/// A duration written as people write them (`90s`, `15m`, `2h`, `3d`, or ISO 8601), days
/// counted as 24 hours.
///
/// # Errors
/// [`crate::RuntimeError::InvalidInput`] naming `field` when the text is not a duration or is
/// negative.
pub fn parse_duration(
    field: &'static str,
    text: &str,
) -> Result<jiff::SignedDuration, crate::RuntimeError> {
    let invalid = |why: String| crate::RuntimeError::InvalidInput {
        field,
        reason: format!("`{text}` is not a duration like `90s`, `15m`, `2h` or `3d` ({why})"),
    };
    let span: jiff::Span = text
        .trim()
        .parse()
        .map_err(|e: jiff::Error| invalid(e.to_string()))?;
    let duration = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .map_err(|e| invalid(e.to_string()))?;
    if duration.is_negative() {
        return Err(invalid("it is negative".to_owned()));
    }
    Ok(duration)
}
