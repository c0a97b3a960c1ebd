//! The core error type, the `ErrorCode` trait every crate's error implements, and the class
//! of an error.
//!
//! A stable code is what scripts, hook hosts and HTTP clients match on; the message is for
//! people. Every code is declared once, with [`crate::error_codes!`], together with its
//! [`ErrorClass`]; each boundary (the CLI's exit code, the service's HTTP status) maps the
//! class, never the code, in one place.

use thiserror::Error;

/// What kind of failure an error is. The class, not the code, decides how a boundary answers:
/// the CLI's exit code (`cairn-cli`'s `failure` module), later the service's HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The caller gave something wrong: malformed input, a bad flag, a misconfigured key or
    /// policy. Repeating the call unchanged fails again.
    Invalid,
    /// What the caller named does not exist (a run, a step, a store).
    NotFound,
    /// The request collides with the state it met: the run exists, is terminated, or another
    /// writer took the step first.
    Conflict,
    /// Evidence does not verify: a record, checkpoint, proof, bundle or store was altered.
    Tamper,
    /// Cairn could not do its job: I/O, a lock held too long, a compile failure of a bundled
    /// schema, a bug. Nothing the caller sent is known to be wrong.
    Internal,
    /// A service Cairn depends on did not do its part: the database server is down or the
    /// connection was lost, a statement ran out of time, the server only reads. The same
    /// request may succeed later, unchanged.
    Unavailable,
    /// The caller did not say who it is, or its credential is unknown, revoked or malformed.
    Unauthenticated,
    /// The caller is known, but its role may not do this.
    Forbidden,
    /// The input is larger than the limit set for it.
    TooLarge,
}

/// A stable error code and its class. Declare codes with [`crate::error_codes!`] so that every code
/// has a class and appears in its type's `CODES` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code {
    name: &'static str,
    class: ErrorClass,
}

impl Code {
    /// The code `name` of class `class`. Prefer [`crate::error_codes!`], which also lists it.
    #[must_use]
    pub const fn new(name: &'static str, class: ErrorClass) -> Self {
        Self { name, class }
    }

    /// The `snake_case` code that never changes once published.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The class of the code.
    #[must_use]
    pub const fn class(self) -> ErrorClass {
        self.class
    }
}

/// Declares the stable codes of an error type as associated constants, each with its
/// [`ErrorClass`], and `CODES`, the list of all of them (the CLI's test checks that no code
/// is declared twice across the workspace).
///
/// ```
/// use cairn_core::{error_codes, Code, ErrorClass, ErrorCode};
///
/// #[derive(Debug)]
/// enum LookupError {
///     Missing,
///     Garbled,
/// }
///
/// error_codes! {
///     LookupError {
///         /// Nothing stored under the key.
///         MISSING = NotFound("lookup_missing");
///         /// The stored bytes do not parse.
///         GARBLED = Tamper("lookup_garbled");
///     }
/// }
///
/// impl ErrorCode for LookupError {
///     fn error_code(&self) -> Code {
///         match self {
///             Self::Missing => Self::MISSING,
///             Self::Garbled => Self::GARBLED,
///         }
///     }
/// }
///
/// assert_eq!(LookupError::Garbled.code(), "lookup_garbled");
/// assert_eq!(LookupError::Missing.class(), ErrorClass::NotFound);
/// assert_eq!(LookupError::CODES.len(), 2);
/// ```
#[macro_export]
macro_rules! error_codes {
    ($ty:ty { $( $(#[$meta:meta])* $name:ident = $class:ident($code:literal); )* }) => {
        impl $ty {
            $(
                $(#[$meta])*
                pub const $name: $crate::Code =
                    $crate::Code::new($code, $crate::ErrorClass::$class);
            )*
            /// Every code declared for this type, with its class.
            pub const CODES: &'static [$crate::Code] = &[$(Self::$name),*];
        }
    };
}

/// Implemented by every Cairn error type: a stable, machine-matchable code with its class.
pub trait ErrorCode {
    /// The declared code of this error (see [`crate::error_codes!`]).
    fn error_code(&self) -> Code;

    /// A short `snake_case` code that never changes once published.
    fn code(&self) -> &'static str {
        self.error_code().name()
    }

    /// The class of this error, which decides exit codes and HTTP statuses.
    fn class(&self) -> ErrorClass {
        self.error_code().class()
    }
}

/// Errors raised by the pure core (parsing identifiers, digests, times; canonicalisation).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A digest string is not of the form `sha256:<64 lowercase hex>`.
    #[error("invalid digest `{value}`: {reason}")]
    InvalidDigest {
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An identifier is empty, too long or has characters outside the allowed set.
    #[error("invalid {kind} `{value}`: {reason}")]
    InvalidId {
        /// Which kind of identifier (`tenant_id`, `run_id`, ...).
        kind: &'static str,
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A timestamp is not RFC 3339 with an offset.
    #[error("invalid timestamp `{value}`: {reason}")]
    InvalidTimestamp {
        /// The offending text (truncated).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value cannot be put in canonical form (for example a non-finite number).
    #[error("cannot canonicalise value: {reason}")]
    Canonicalization {
        /// Why canonicalisation failed.
        reason: String,
    },
}

crate::error_codes! {
    CoreError {
        /// A digest string is malformed.
        INVALID_DIGEST = Invalid("invalid_digest");
        /// An identifier is malformed.
        INVALID_ID = Invalid("invalid_id");
        /// A timestamp is malformed.
        INVALID_TIMESTAMP = Invalid("invalid_timestamp");
        /// A value has no canonical form.
        CANONICALIZATION_FAILED = Invalid("canonicalization_failed");
    }
}

impl ErrorCode for CoreError {
    fn error_code(&self) -> Code {
        match self {
            Self::InvalidDigest { .. } => Self::INVALID_DIGEST,
            Self::InvalidId { .. } => Self::INVALID_ID,
            Self::InvalidTimestamp { .. } => Self::INVALID_TIMESTAMP,
            Self::Canonicalization { .. } => Self::CANONICALIZATION_FAILED,
        }
    }
}

/// Shortens user-supplied text before it is echoed in an error message, so a hostile input
/// cannot flood logs and an accidental secret is not repeated in full.
#[must_use]
pub fn excerpt(value: &str) -> String {
    const MAX: usize = 80;
    if value.chars().count() <= MAX {
        value.to_owned()
    } else {
        let mut out: String = value.chars().take(MAX).collect();
        out.push('…');
        out
    }
}
