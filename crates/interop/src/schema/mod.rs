//! JSON Schema validation with the semantics of Python's `jsonschema` as the published VCE 0.1
//! and RLC 0.1 references run it, for the validators of those formats (`crate::vce`,
//! `crate::rlc`).
//!
//! Both references validate with Python `jsonschema` 4.24: `Draft202012Validator` with a
//! `FormatChecker` (`jsonschema[format-nongpl]`). The `jsonschema` crate implements draft
//! 2020-12 too, but three keywords of the published schemas mean something else there, and each
//! difference changes decisions. [`compile`] therefore replaces them with Cairn's own:
//!
//! - `format`: only `date-time` is supported, with the reference's meaning
//!   ([`cairn_core::rfc3339::is_date_time`]); any other format fails compilation, because its Python
//!   checker would differ from the crate's in ways nobody has compared.
//! - `pattern`: Python's `re.search`, whose `$` also matches just before one final line feed.
//!   Only anchored runs of literals and character classes are supported (every pattern of both
//!   formats is one); any other pattern fails compilation instead of being run with the
//!   ECMA-262 semantics of the crate's regular expressions.
//! - `uniqueItems`: Python's `jsonschema._utils.equal`, where objects with the same members in
//!   another order are equal; the crate's keyword tells them apart wherever `serde_json` keeps
//!   document order (see the `unique` module).
//!
//! Two more keywords, `required` and `minLength`, are replaced for speed only (same results;
//! see the `fast` module).
//!
//! [`Schema::check`] turns the errors of a document into [`SchemaError`]s: a JSON path in the
//! `$.a[0]["b c"]` form both formats' messages use, and a lowercase-led message cut to
//! [`MESSAGE_MAX_CHARS`] with control characters escaped. [`BoundedText`] and [`push_bounded`] are the same
//! cutting for any user value a message quotes.
//!
//! The crate is pure: no I/O, no clock, and no panic on any document. A schema whose
//! subschemas judge one instance in a cycle does not compile: the `jsonschema` crate would
//! overflow its stack on the first document (see the `cycles` module).

mod error;
pub mod keywords;
mod path;
mod ref_cycles;
mod single_pass;
mod text;

use std::fmt::{self, Write as _};
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

use keywords::date_time::DateTimeFormat;
use keywords::factory;
use keywords::pattern::PythonPattern;
use keywords::required_min_length::{MinLength, Required};
use keywords::unique_items::UniqueItems;
use single_pass::{CanonicalHasher, CanonicalWriter, MarkedCanonicalWriter, SinglePass, Sink};
pub use single_pass::{MarkedItem, SortKeysMarks};

pub use error::PySchemaError;
pub use path::json_path;
pub use text::{BoundedText, push_bounded};

/// The `json-sort-keys-utf8-v1` form a schema walk wrote, with the marked items
/// ([`Schema::check_writing_sort_keys_marked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKeysForm {
    /// The document's form without the skipped top-level member.
    pub bytes: Vec<u8>,
    /// One entry per item of the marked array, in order (empty when the document has no such
    /// array, or the walk wrote it whole).
    pub items: Vec<Option<MarkedItem>>,
}

/// A [`CanonicalWriter`] sink leaving out the top-level member `skip`.
fn sort_keys(skip: Option<&str>) -> CanonicalWriter<'_> {
    CanonicalWriter {
        // Enough for typical envelopes and extensions (a few KiB) to be written without growing.
        out: Vec::with_capacity(8 * 1024),
        skip,
        failed: false,
    }
}

/// The longest schema-error message a [`SchemaError`] carries, in characters (then `…`): the
/// crate's messages quote whole instances, which a hostile document can make large.
pub const MESSAGE_MAX_CHARS: usize = 300;

/// A published schema compiled with the reference's keyword semantics; [`Schema::check`] is a
/// pure function of the document, safe to call from many threads.
pub struct Schema {
    name: &'static str,
    /// The schema document, kept to build [`Schema::full`] from on first need.
    source: Value,
    /// The `jsonschema` crate's validator, built the first time the single-pass walk cannot judge a
    /// document itself (never for the published formats' schemas, which it compiles whole;
    /// building it costs tens of milliseconds and megabytes: the crate first compiles the
    /// draft's meta-schema), or the reason it could not be built.
    full: OnceLock<Result<Validator, String>>,
    /// The same schema for valid documents only (see the `single_pass` module); `None` when the
    /// schema uses a keyword that module does not compile.
    walk: Option<SinglePass>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One error of a document against a [`Schema`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// Where in the document, from the root given to [`Schema::check`]: `$.a[0]["b c"]`.
    pub path: String,
    /// What is wrong, lowercase-led, at most [`MESSAGE_MAX_CHARS`] characters and `…`, on one
    /// line.
    pub message: String,
}

/// Compiles the JSON Schema `text` (draft 2020-12) with the reference's keyword semantics;
/// `name` names it in errors.
///
/// # Errors
/// [`PySchemaError::Compile`] when `text` is not JSON, not a valid schema, uses a `format`
/// or a `pattern` whose Python meaning this crate cannot reproduce exactly, or has subschemas
/// that judge the same instance in a cycle (see the `cycles` module), which no validator
/// could finish.
pub fn compile(name: &'static str, text: &str) -> Result<Schema, PySchemaError> {
    let failed = |reason: String| PySchemaError::Compile {
        schema: name,
        reason,
    };
    let schema: Value = serde_json::from_str(text).map_err(|e| failed(e.to_string()))?;
    if let Some(pointer) = ref_cycles::find_cycle(&schema) {
        return Err(failed(format!(
            "the subschema at `#{pointer}` leads back to itself through `$ref` and in-place \
             subschemas (`allOf`, `anyOf`, `not`, …), so judging any instance would never end"
        )));
    }
    let walk = SinglePass::compile(&schema);
    let compiled = Schema {
        name,
        source: schema,
        full: OnceLock::new(),
        walk,
    };
    if compiled.walk.is_none() {
        // Without the single-pass walk every document needs the full validator: build it now, so
        // a schema it cannot compile is refused here.
        compiled.full().map_err(|e| failed(e.clone()))?;
    }
    Ok(compiled)
}

/// The `jsonschema` crate's validator of `schema` with this crate's keywords.
fn full_validator(schema: &Value) -> Result<Validator, String> {
    jsonschema::draft202012::options()
        .with_keyword("format", factory::<DateTimeFormat>)
        .with_keyword("pattern", factory::<PythonPattern>)
        .with_keyword("required", factory::<Required>)
        .with_keyword("minLength", factory::<MinLength>)
        .with_keyword("uniqueItems", factory::<UniqueItems>)
        .build(schema)
        .map_err(|e| e.to_string())
}

impl Schema {
    /// The `jsonschema` crate's validator, built on first use.
    ///
    /// # Errors
    /// Why the crate refused the schema (a defect of an embedded schema, never of input).
    pub fn full(&self) -> Result<&Validator, &String> {
        self.full
            .get_or_init(|| full_validator(&self.source))
            .as_ref()
    }

    /// Whether the full validator accepts `document`; `false` when it cannot be built, so a
    /// caller deciding on it fails closed.
    fn fully_valid(&self, document: &Value) -> bool {
        self.full()
            .is_ok_and(|validator| validator.is_valid(document))
    }

    /// Whether `document` satisfies the schema.
    #[cfg(test)]
    fn is_valid(&self, document: &Value) -> bool {
        self.walk
            .as_ref()
            .is_some_and(|walk| walk.is_valid(document))
            || self.unsure_errors(document, "$").is_empty()
    }

    /// Every error of `document`, sorted by path and message, with paths starting at `root`
    /// (`$` for a top-level document); empty when the document is valid.
    ///
    /// The single-pass check runs first because it is much cheaper than collecting errors and
    /// almost every document checked is valid.
    #[must_use]
    pub fn check(&self, document: &Value, root: &str) -> Vec<SchemaError> {
        if self
            .walk
            .as_ref()
            .is_some_and(|walk| walk.is_valid(document))
        {
            return Vec::new();
        }
        self.unsure_errors(document, root)
    }

    /// [`Schema::check`], and for a valid document also the SHA-256 of its
    /// `json-sort-keys-utf8-v1` form without its top-level member `skip`, hashed as the walk
    /// writes it (the bytes are not kept): exactly the SHA-256 of
    /// `crate::sort_keys::sort_keys_utf8_v1_without`. `None` means only "not hashed here",
    /// the caller then writes it itself and learns why it failed, if it does.
    #[must_use]
    pub fn check_digesting_sort_keys(
        &self,
        document: &Value,
        root: &str,
        skip: Option<&str>,
    ) -> (Vec<SchemaError>, Option<[u8; 32]>) {
        let (errors, sink) = self.check_into(document, root, CanonicalHasher::new(skip));
        let digest = sink.and_then(|sink| (!sink.inner.failed).then(|| sink.finish()));
        (errors, digest)
    }

    /// [`Schema::check`], and for a valid document also its `json-sort-keys-utf8-v1` form
    /// without its top-level member `skip`, noting where the items of one top-level
    /// array member lie in the bytes, and one member inside each (see [`SortKeysMarks`]):
    /// RLC 0.1 digests each lane without its `lane_digest` from the bytes of the extension
    /// that holds it. An item without a mark (`None` in [`SortKeysForm::items`]) is one the
    /// walk did not write member by member; the caller writes that one itself.
    #[must_use]
    pub fn check_writing_sort_keys_marked(
        &self,
        document: &Value,
        root: &str,
        skip: Option<&str>,
        marks: SortKeysMarks<'_>,
    ) -> (Vec<SchemaError>, Option<SortKeysForm>) {
        let sink = MarkedCanonicalWriter::new(sort_keys(skip), marks);
        let (errors, sink) = self.check_into(document, root, sink);
        let form = sink.and_then(|sink| {
            (!sink.inner.failed).then_some(SortKeysForm {
                bytes: sink.inner.out,
                items: sink.items,
            })
        });
        (errors, form)
    }

    /// [`Schema::check`] through the single-pass walk into `sink`, which is returned when that walk
    /// accepted the document (what it got is then complete).
    fn check_into<S: Sink>(
        &self,
        document: &Value,
        root: &str,
        mut sink: S,
    ) -> (Vec<SchemaError>, Option<S>) {
        if let Some(walk) = &self.walk
            && walk.is_valid_into(document, &mut sink)
        {
            return (Vec::new(), Some(sink));
        }
        (self.unsure_errors(document, root), None)
    }

    /// Every error of a document the single-pass check did not accept (empty when it is valid after
    /// all), sorted by path and message: found by the single-pass walk where it can (see
    /// `single_pass::report`, exact and equal to the crate's), else by the full validator, which then
    /// has to be built.
    fn unsure_errors(&self, document: &Value, root: &str) -> Vec<SchemaError> {
        let walk = self.walk.as_ref().and_then(|walk| walk.errors(document));
        let mut errors: Vec<SchemaError> = match walk {
            Some(found) => found
                .into_iter()
                .map(|(pointer, text)| SchemaError {
                    path: json_path(root, document, &pointer),
                    message: message(&text),
                })
                .collect(),
            None if self.fully_valid(document) => Vec::new(),
            None => {
                let mut errors = self.full_errors(document, root);
                if errors.is_empty() {
                    // INVARIANT: an invalid document always yields an error, so a caller
                    // deciding on the errors fails closed even if `is_valid` and `iter_errors`
                    // ever disagree.
                    errors.push(SchemaError {
                        path: root.to_owned(),
                        message: String::from("does not satisfy the schema"),
                    });
                }
                errors
            }
        };
        errors.sort_by(|a, b| (&a.path, &a.message).cmp(&(&b.path, &b.message)));
        errors
    }

    /// Every error of `document` by the `jsonschema` crate's validator.
    fn full_errors(&self, document: &Value, root: &str) -> Vec<SchemaError> {
        match self.full() {
            Ok(validator) => validator
                .iter_errors(document)
                .map(|error| SchemaError {
                    path: json_path(root, document, error.instance_path.as_str()),
                    message: message(&error.to_string()),
                })
                .collect(),
            Err(why) => vec![SchemaError {
                path: root.to_owned(),
                message: format!("cannot be judged: the schema does not compile ({why})"),
            }],
        }
    }
}

/// An error's message, cut and lowercase-led (the crate's messages sometimes start with a
/// capital; Cairn's never do).
fn message(raw: &str) -> String {
    let mut text = String::new();
    let mut cut = BoundedText::new(&mut text, MESSAGE_MAX_CHARS);
    // An error here only means the text was cut, which `finish` marks.
    let _ = write!(cut, "{raw}");
    cut.finish();
    if let Some(first) = text.get_mut(..1) {
        first.make_ascii_lowercase();
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

    use super::*;
    use serde_json::json;

    const SCHEMA: &str = r#"{
        "type": "object",
        "required": ["id", "at"],
        "additionalProperties": false,
        "properties": {
            "id": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
            "at": {"type": "string", "format": "date-time"},
            "name": {"type": "string", "minLength": 2},
            "items": {"type": "array", "items": {"type": "string"}}
        }
    }"#;

    fn hex() -> String {
        "0123456789abcdef".repeat(4)
    }

    #[test]
    fn python_semantics_apply_to_whole_documents() {
        let schema = compile("test", SCHEMA).unwrap();
        let ok = json!({"id": format!("sha256:{}\n", hex()), "at": "2026-06-30t04:30:00z\n"});
        assert!(schema.is_valid(&ok));
        assert!(schema.check(&ok, "$").is_empty());
        let leap = json!({"id": format!("sha256:{}", hex()), "at": "2026-06-30T23:59:60Z"});
        let errors = schema.check(&leap, "$");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "$.at");
        assert_eq!(
            errors[0].message,
            "\"2026-06-30T23:59:60Z\" is not a \"date-time\""
        );
    }

    #[test]
    fn every_error_is_reported_with_its_path_and_a_lowercase_message() {
        let schema = compile("test", SCHEMA).unwrap();
        let doc = json!({"id": "x", "name": "é", "items": ["a", 3], "extra\nkey": 1});
        let errors = schema.check(&doc, "restore");
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"restore"), "{errors:#?}");
        assert!(paths.contains(&"restore.id"), "{errors:#?}");
        assert!(paths.contains(&"restore.name"), "{errors:#?}");
        assert!(paths.contains(&"restore.items[1]"), "{errors:#?}");
        for error in &errors {
            let first = error.message.chars().next().unwrap();
            assert!(
                !first.is_uppercase() && !error.message.contains('\n'),
                "{error:?}"
            );
        }
        let missing = errors
            .iter()
            .find(|e| e.message.contains("required"))
            .unwrap();
        assert_eq!(missing.message, "\"at\" is a required property");
    }

    #[test]
    fn long_messages_are_cut() {
        let schema = compile("test", r#"{"type": "string"}"#).unwrap();
        let errors = schema.check(&json!(["x".repeat(1000)]), "$");
        let message = &errors[0].message;
        assert!(message.ends_with('…'));
        assert_eq!(message.chars().count(), MESSAGE_MAX_CHARS + 1);
    }

    #[test]
    fn what_python_would_judge_differently_does_not_compile() {
        for schema in [
            r#"{"pattern": "^a+$"}"#,
            r#"{"pattern": "\\d"}"#,
            r#"{"format": "email"}"#,
            r#"{"format": 3}"#,
            r#"{"required": "a"}"#,
            r#"{"minLength": -1}"#,
            "not json",
        ] {
            let error = compile("bad", schema).unwrap_err();
            assert!(error.to_string().starts_with("cannot compile"), "{error}");
        }
    }

    /// Before the check, the `jsonschema` crate overflowed its stack (aborting the process) on
    /// the first document checked against these.
    #[test]
    fn schemas_that_judge_an_instance_in_a_circle_do_not_compile() {
        for (schema, at) in [
            (
                r##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                     "properties": {"x": {"$ref": "#/$defs/a"}}}"##,
                "/$defs/",
            ),
            (
                r##"{"$defs": {"a": {"type": "object", "allOf": [{"$ref": "#/$defs/a"}]}},
                     "$ref": "#/$defs/a"}"##,
                "/$defs/a",
            ),
        ] {
            let error = compile("cycle", schema).unwrap_err();
            assert!(matches!(error, PySchemaError::Compile { .. }), "{error:?}");
            let message = error.to_string();
            assert!(message.contains(&format!("`#{at}")), "{message}");
            assert!(message.contains("leads back to itself"), "{message}");
        }
        // Recursion one level into the instance at a time compiles and judges.
        let tree = compile(
            "tree",
            r##"{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}"##,
        )
        .unwrap();
        assert!(tree.is_valid(&json!({"children": [{"children": []}, {}]})));
        assert!(!tree.is_valid(&json!({"children": [{"children": 1}]})));
    }
}
