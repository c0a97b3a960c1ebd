//! merkle (in progress)
