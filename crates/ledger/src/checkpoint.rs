//! checkpoint (in progress)
