//! Timestamps and the injected clock.
//!
//! Records carry UTC instants with microsecond precision written in RFC 3339 with a `Z`
//! offset, so the same instant always has the same text and the same digest. Inputs with any
//! offset are accepted and compared as instants.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{CoreError, excerpt};

/// A UTC instant with microsecond precision.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(jiff::Timestamp);

impl Timestamp {
    /// Builds a timestamp from microseconds since the Unix epoch.
    ///
    /// # Errors
    /// [`CoreError::InvalidTimestamp`] when the value is outside the supported range.
    pub fn from_unix_micros(micros: i64) -> Result<Self, CoreError> {
        jiff::Timestamp::from_microsecond(micros)
            .map(Self)
            .map_err(|e| CoreError::InvalidTimestamp {
                value: micros.to_string(),
                reason: e.to_string(),
            })
    }

    /// Microseconds since the Unix epoch.
    #[must_use]
    pub fn unix_micros(&self) -> i64 {
        self.0.as_microsecond()
    }

    /// The instant as a `jiff` timestamp.
    #[must_use]
    pub const fn as_jiff(&self) -> jiff::Timestamp {
        self.0
    }

    /// Truncates a `jiff` timestamp to microseconds.
    #[must_use]
    pub fn from_jiff(ts: jiff::Timestamp) -> Self {
        // Truncation to microseconds of a valid timestamp is always in range.
        Self(jiff::Timestamp::from_microsecond(ts.as_microsecond()).unwrap_or(ts))
    }

    /// The signed duration from `earlier` to `self`.
    #[must_use]
    pub fn duration_since(&self, earlier: Self) -> jiff::SignedDuration {
        self.0.duration_since(earlier.0)
    }

    /// `self` moved by `duration`, saturating at the ends of the supported range.
    #[must_use]
    pub fn saturating_add(&self, duration: jiff::SignedDuration) -> Self {
        Self::from_jiff(self.0.saturating_add(duration).unwrap_or(self.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // jiff prints UTC with a `Z` and the shortest fraction that is exact.
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

impl FromStr for Timestamp {
    type Err = CoreError;

    /// Parses an RFC 3339 date-time with a mandatory offset (`Z` or `±hh:mm`), by Cairn's one
    /// rule for times ([`crate::rfc3339::is_date_time`]): offsets beyond ±23:59 and `:60`
    /// seconds are refused.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: String| CoreError::InvalidTimestamp {
            value: excerpt(text),
            reason,
        };
        if !crate::rfc3339::is_date_time(text) {
            return Err(invalid(
                "not an rfc 3339 date-time `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` with hours \
                 and offset hours 00-23, minutes and seconds 00-59"
                    .to_owned(),
            ));
        }
        let text = text.strip_suffix('\n').unwrap_or(text);
        // Records are written with `T` and `Z`; only a lower-case one needs a copy.
        let text = if text.bytes().any(|b| b == b't' || b == b'z') {
            std::borrow::Cow::Owned(text.to_ascii_uppercase())
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        text.parse::<jiff::Timestamp>()
            .map(Self::from_jiff)
            .map_err(|e| invalid(e.to_string()))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 instant in UTC."
        })
    }
}

/// The source of "now". Injected so that everything deciding safety is deterministic.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_jiff(jiff::Timestamp::now())
    }
}

/// A clock that returns a fixed instant, advanced explicitly (tests, replays, the demo).
#[derive(Debug)]
pub struct FixedClock(std::sync::Mutex<Timestamp>);

impl FixedClock {
    /// A clock stopped at `at`.
    #[must_use]
    pub fn new(at: Timestamp) -> Self {
        Self(std::sync::Mutex::new(at))
    }

    /// Moves the clock forward by `micros` microseconds.
    pub fn advance_micros(&self, micros: i64) {
        if let Ok(mut now) = self.0.lock() {
            *now = now.saturating_add(jiff::SignedDuration::from_micros(micros));
        }
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        match self.0.lock() {
            Ok(now) => *now,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_compared_as_instants_and_printed_in_utc() {
        let a: Timestamp = "2026-06-30T06:30:00+02:00".parse().unwrap();
        let b: Timestamp = "2026-06-30T04:30:00Z".parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "2026-06-30T04:30:00Z");
    }

    #[test]
    fn text_form_round_trips_at_microsecond_precision() {
        let t: Timestamp = "2026-06-30T04:30:00.123456789Z".parse().unwrap();
        assert_eq!(t.to_string(), "2026-06-30T04:30:00.123456Z");
        assert_eq!(t.to_string().parse::<Timestamp>().unwrap(), t);
    }

    #[test]
    fn offsets_past_23_59_and_leap_seconds_are_refused_as_the_references_refuse_them() {
        for bad in [
            "2026-07-22T18:00:00+24:00",
            "2026-07-22T18:00:00-24:00",
            "2026-07-22T18:00:00+25:59",
            "2026-07-22T17:59:60Z",
            "2026-07-22 18:00:00Z",
        ] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad}");
        }
        let t: Timestamp = "2026-07-22t18:00:00.5-23:59".parse().unwrap();
        assert_eq!(t.to_string(), "2026-07-23T17:59:00.5Z");
    }

    #[test]
    fn a_timestamp_without_offset_is_refused() {
        assert!("2026-06-30T04:30:00".parse::<Timestamp>().is_err());
    }
}
