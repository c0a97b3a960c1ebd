//! Numbers in `json-sort-keys-utf8-v1`: integers as integers, every other number as Python's
//! `repr(float)`.

use std::fmt::Write as _;

use cairn_core::CoreError;
use serde_json::Number;

/// Writes `number` as Python writes it.
///
/// # Errors
/// [`CoreError::Canonicalization`] for a number that is not a finite float.
pub(crate) fn write_number(out: &mut Vec<u8>, number: &Number) -> Result<(), CoreError> {
    let text = if let Some(unsigned) = number.as_u64() {
        unsigned.to_string()
    } else if let Some(signed) = number.as_i64() {
        signed.to_string()
    } else {
        number
            .as_f64()
            .and_then(python_float_repr)
            .ok_or_else(|| CoreError::Canonicalization {
                reason: format!("number `{number}` is not a finite float"),
            })?
    };
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// Formats `x` as Python's `repr(float)` does; `None` for NaN and the infinities.
///
/// Python's `repr` uses the shortest digits that round-trip and, when two such digit strings
/// are equally close to the exact value, the even one. `ryu` makes the same choice (Rust's own
/// `{:e}` rounds such ties up: 568240000723932.25 prints as …932.3, Python says …932.2), so
/// the digits come from `ryu` and only the layout is Python's.
fn python_float_repr(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(x);
    let (sign, text) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((mantissa, exp)) => (mantissa, exp.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // Normalise to digits d1d2d3… with the decimal exponent of d1.
    let mut digits: String = integer.chars().chain(fraction.chars()).collect();
    let mut exponent = exp + i32::try_from(integer.len()).ok()? - 1;
    while digits.len() > 1 && digits.starts_with('0') {
        digits.remove(0);
        exponent -= 1;
    }
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if digits == "0" {
        exponent = 0;
    }
    let mut out = String::from(sign);
    if !(-4..16).contains(&exponent) {
        let (first, rest) = digits.split_at_checked(1)?;
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        write!(out, "e{exponent_sign}{:02}", exponent.unsigned_abs()).ok()?;
    } else if exponent >= 0 {
        let integer_len = usize::try_from(exponent).ok()? + 1;
        if digits.len() <= integer_len {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', integer_len - digits.len()));
            out.push_str(".0");
        } else {
            let (integer, fraction) = digits.split_at_checked(integer_len)?;
            out.push_str(integer);
            out.push('.');
            out.push_str(fraction);
        }
    } else {
        let leading_zeros = usize::try_from(exponent.unsigned_abs()).ok()? - 1;
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', leading_zeros));
        out.push_str(&digits);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_follow_python_repr_layout() {
        for (x, expected) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (123_456_789.123, "123456789.123"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
        ] {
            assert_eq!(python_float_repr(x).as_deref(), Some(expected), "{x:e}");
        }
    }

    #[test]
    fn non_finite_floats_are_refused() {
        assert_eq!(python_float_repr(f64::NAN), None);
        assert_eq!(python_float_repr(f64::INFINITY), None);
        assert_eq!(python_float_repr(f64::NEG_INFINITY), None);
    }
}
