//! Decision-value normalisation (C-4). Filled in by the canonical-forms work.
