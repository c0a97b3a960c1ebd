//! JSON paths in the `$.field[0]["odd key"]` form both formats' messages use.

use std::fmt::Write as _;

use serde_json::Value;

/// Turns the JSON pointer `pointer` into `document` into a path from `root`: `.key` for a
/// plain key, `["key"]` (JSON-quoted) for any other, `[index]` for an array item. The document
/// is walked to tell array indexes from object keys that look like numbers.
#[must_use]
pub fn json_path(root: &str, document: &Value, pointer: &str) -> String {
    let mut path = root.to_owned();
    let mut current = Some(document);
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        match current {
            Some(Value::Array(items)) => match segment.parse::<usize>() {
                Ok(index) => {
                    // Writing to a `String` cannot fail.
                    let _ = write!(path, "[{index}]");
                    current = items.get(index);
                }
                Err(_) => {
                    push_key(&mut path, &segment);
                    current = None;
                }
            },
            Some(Value::Object(map)) => {
                push_key(&mut path, &segment);
                current = map.get(&segment);
            }
            _ => {
                push_key(&mut path, &segment);
                current = None;
            }
        }
    }
    path
}

/// Appends `.key` to a path, or `["key"]` when the key is not a plain identifier.
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        // Writing to a `String` cannot fail.
        let _ = write!(path, "[{}]", Value::String(key.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_tell_indexes_from_keys() {
        let doc = serde_json::json!({"a": [{"b c": 1, "b/c": 2, "0": 3}], "0": {"x/y": 4}});
        assert_eq!(json_path("$", &doc, ""), "$");
        assert_eq!(json_path("$", &doc, "/a/0/b c"), "$.a[0][\"b c\"]");
        assert_eq!(json_path("$", &doc, "/a/0/b~1c"), "$.a[0][\"b/c\"]");
        assert_eq!(json_path("$", &doc, "/a/0/0"), "$.a[0].0");
        assert_eq!(json_path("restore", &doc, "/0/x~1y"), "restore.0[\"x/y\"]");
        assert_eq!(json_path("$", &doc, "/missing/3"), "$.missing.3");
        assert_eq!(json_path("$", &doc, "/a/x"), "$.a.x");
    }
}
