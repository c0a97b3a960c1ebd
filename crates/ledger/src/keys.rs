//! keys (in progress)
