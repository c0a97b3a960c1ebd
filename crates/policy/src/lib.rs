//! The policy gate on Cedar (in progress).
