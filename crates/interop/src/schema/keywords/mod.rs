//! The keywords evaluated with the Python reference's meaning (`date_time`, `pattern`,
//! `unique_items`) or, with the same results, faster (`required_min_length`), and how they plug into the `jsonschema` crate: each is a [`PyKeyword`], and
//! [`factory`] turns one into the crate's keyword factory, so that the factory signature, the
//! compile-time refusal and the error of a failed instance are written once.

pub(crate) mod date_time;
pub(crate) mod pattern;
pub(crate) mod required_min_length;
pub mod unique_items;

use jsonschema::paths::{LazyLocation, Location};
use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

/// A keyword evaluated by Cairn's code instead of the `jsonschema` crate's.
pub(crate) trait PyKeyword: Send + Sync + Sized + 'static {
    /// The keyword from its value in the schema, or why that value is not supported.
    fn parse(value: &Value) -> Result<Self, String>;

    /// Whether `instance` satisfies the keyword.
    fn is_valid(&self, instance: &Value) -> bool;

    /// What is wrong with `instance`, which does not satisfy the keyword.
    fn message(&self, instance: &Value) -> String;
}

/// The keyword factory for `K`, to register with `with_keyword`; a value `K` does not support
/// fails the schema's compilation, with the keyword's place in the schema.
#[expect(
    clippy::result_large_err,
    reason = "the signature `jsonschema` requires of a keyword factory"
)]
pub(crate) fn factory<'a, K: PyKeyword>(
    _parent: &'a Map<String, Value>,
    value: &'a Value,
    schema_path: Location,
) -> Result<Box<dyn Keyword>, ValidationError<'a>> {
    match K::parse(value) {
        Ok(keyword) => Ok(Box::new(Registered {
            keyword,
            schema_path,
        })),
        Err(why) => {
            let message = format!("`{}`: {why}", schema_path.as_str());
            Err(ValidationError::custom(
                schema_path,
                Location::new(),
                value,
                message,
            ))
        }
    }
}

/// A [`PyKeyword`] at its place in the schema.
struct Registered<K> {
    keyword: K,
    schema_path: Location,
}

impl<K: PyKeyword> Keyword for Registered<K> {
    fn validate<'i>(
        &self,
        instance: &'i Value,
        location: &LazyLocation,
    ) -> Result<(), ValidationError<'i>> {
        if self.keyword.is_valid(instance) {
            return Ok(());
        }
        Err(ValidationError::custom(
            self.schema_path.clone(),
            location.into(),
            instance,
            self.keyword.message(instance),
        ))
    }

    fn is_valid(&self, instance: &Value) -> bool {
        self.keyword.is_valid(instance)
    }
}
