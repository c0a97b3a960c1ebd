//! RFC 3339 date-times: Cairn's one rule for which texts are times, wherever a time is read
//! (the continuity envelope and state, the published formats' `date-time`, the CLI).
//!
//! The rule is the strict one of the published Python references
//! (`rfc3339_validator.validate_rfc3339(text.upper())`): RFC 3339's `date-time` production
//! exactly — offset hours stop at 23 and there is no leap second `:60` — plus what that
//! validator lets through: `t` and `z` in lower case, and one trailing line feed (its regular
//! expression ends in `$`). Parsers that accept more (`+24:00`, `17:59:60Z`, a space for `T`)
//! are not asked until a text has passed this check.

/// The reference's `date-time` format: `rfc3339_validator.validate_rfc3339(text.upper())`.
///
/// That is `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` in ASCII digits, `T` and `Z` in either
/// case, hours 00–23 (offsets too), minutes and seconds 00–59 (no leap second), a year other
/// than 0000, a day that exists in that month of the proleptic Gregorian calendar, and at most
/// one line feed after it (Python's `$`).
#[must_use]
pub fn is_date_time(text: &str) -> bool {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let mut p = Cursor(text.as_bytes());
    let Some(year) = p.digits(4) else {
        return false;
    };
    let date_ok = year != 0
        && p.byte(b'-')
        && p.digits(2).is_some_and(|month| {
            (1..=12).contains(&month)
                && p.byte(b'-')
                && p.digits(2)
                    .is_some_and(|day| day >= 1 && day <= days_in_month(year, month))
        });
    date_ok
        && p.either(b'T', b't')
        && p.digits(2).is_some_and(|h| h <= 23)
        && p.byte(b':')
        && p.digits(2).is_some_and(|m| m <= 59)
        && p.byte(b':')
        && p.digits(2).is_some_and(|s| s <= 59)
        && p.fraction()
        && p.offset()
        && p.0.is_empty()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A byte cursor for [`is_date_time`].
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn byte(&mut self, want: u8) -> bool {
        self.either(want, want)
    }

    fn either(&mut self, a: u8, b: u8) -> bool {
        match self.0.split_first() {
            Some((&first, rest)) if first == a || first == b => {
                self.0 = rest;
                true
            }
            _ => false,
        }
    }

    fn digits(&mut self, count: usize) -> Option<u32> {
        let (head, rest) = self.0.split_at_checked(count)?;
        if !head.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.0 = rest;
        Some(head.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
    }

    /// An optional `.` followed by at least one digit.
    fn fraction(&mut self) -> bool {
        if !self.byte(b'.') {
            return true;
        }
        let count = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
        self.0 = self.0.get(count..).unwrap_or_default();
        count > 0
    }

    /// `Z` (either case) or `±HH:MM`.
    fn offset(&mut self) -> bool {
        if self.either(b'Z', b'z') {
            return true;
        }
        self.either(b'+', b'-')
            && self.digits(2).is_some_and(|h| h <= 23)
            && self.byte(b':')
            && self.digits(2).is_some_and(|m| m <= 59)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_time_follows_rfc3339_validator_on_upper_cased_text() {
        for ok in [
            "2026-06-30T04:30:00Z",
            "2026-06-30t04:30:00z",
            "2026-06-30T04:30:00.123456789+05:30",
            "2024-02-29T00:00:00-23:59",
            "2000-02-29T23:59:59Z",
            "2026-06-30T04:30:00Z\n",
            "0001-01-01T00:00:00Z",
        ] {
            assert!(is_date_time(ok), "{ok:?}");
        }
        for bad in [
            "not-a-date",
            "2026-06-30 04:30:00Z",
            "2026-06-30T23:59:60Z",
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "0000-01-01T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-06-30T24:00:00Z",
            "2026-06-30T04:30:00",
            "2026-06-30T04:30:00.Z",
            "2026-06-30T04:30:00+24:00",
            "2026-06-30T04:30:00+05:60",
            "2026-06-30T04:30:00Z\n\n",
            "2026-06-30T04:30:00Z ",
            "２026-06-30T04:30:00Z",
            "",
        ] {
            assert!(!is_date_time(bad), "{bad:?}");
        }
    }
}
