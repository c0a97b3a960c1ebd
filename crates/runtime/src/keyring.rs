//! keyring (in progress)
