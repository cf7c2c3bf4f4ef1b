//! Checks a tool's input against its JSON Schema before the tool runs.
//!
//! The keywords tool schemas use: `type`, `enum`, `const`, `properties`, `required`,
//! `additionalProperties`, `items`, `minItems`/`maxItems`, `minLength`/`maxLength`, `minimum`/`maximum`
//! (and their exclusive forms), `anyOf`/`oneOf`/`allOf`. Other keywords (`$ref`, `format`, `pattern`, …)
//! are not checked: an input is refused only for a rule this module understands.

use serde_json::{Map, Value};

/// The first place `value` breaks `schema`, as `"<path>: <problem>"` with `path` starting at `root`.
pub(crate) fn check(schema: &Value, value: &Value, root: &str) -> Result<(), String> {
    let mut path = root.to_owned();
    walk(schema, value, &mut path)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_type(v: &Value, ty: &str) -> bool {
    match ty {
        "integer" => match v {
            Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
            _ => false,
        },
        "number" => v.is_number(),
        other => kind(v) == other,
    }
}

fn fail(path: &str, problem: impl AsRef<str>) -> Result<(), String> {
    Err(format!("{path}: {}", problem.as_ref()))
}

fn walk(schema: &Value, value: &Value, path: &mut String) -> Result<(), String> {
    let Value::Object(s) = schema else {
        // `true`/`{}` accept everything; `false` nothing.
        return match schema {
            Value::Bool(false) => fail(path, "no value is allowed here"),
            _ => Ok(()),
        };
    };
    match s.get("type") {
        Some(Value::String(ty)) if !is_type(value, ty) => {
            return fail(path, format!("expected {ty}, got {}", kind(value)));
        }
        Some(Value::Array(types)) if !types.iter().filter_map(Value::as_str).any(|t| is_type(value, t)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            return fail(path, format!("expected {}, got {}", names.join(" or "), kind(value)));
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = s.get("enum") {
        if !allowed.contains(value) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return fail(path, format!("expected one of {}, got {value}", list.join(", ")));
        }
    }
    if let Some(c) = s.get("const") {
        if c != value {
            return fail(path, format!("expected {c}, got {value}"));
        }
    }
    match value {
        Value::Object(o) => object(s, o, path)?,
        Value::Array(items) => array(s, items, path)?,
        Value::String(text) => {
            let n = text.chars().count() as u64;
            if let Some(min) = s.get("minLength").and_then(Value::as_u64).filter(|m| n < *m) {
                return fail(path, format!("expected at least {min} characters, got {n}"));
            }
            if let Some(max) = s.get("maxLength").and_then(Value::as_u64).filter(|m| n > *m) {
                return fail(path, format!("expected at most {max} characters, got {n}"));
            }
        }
        Value::Number(n) => number(s, n.as_f64().unwrap_or(0.0), path)?,
        _ => {}
    }
    combinators(s, value, path)
}

fn object(s: &Map<String, Value>, o: &Map<String, Value>, path: &mut String) -> Result<(), String> {
    if let Some(Value::Array(required)) = s.get("required") {
        if let Some(missing) = required.iter().filter_map(Value::as_str).find(|k| !o.contains_key(*k)) {
            return fail(path, format!("missing required property {missing:?}"));
        }
    }
    let properties = s.get("properties").and_then(Value::as_object);
    for (key, v) in o {
        let len = path.len();
        path.push('.');
        path.push_str(key);
        let checked = match properties.and_then(|p| p.get(key)) {
            Some(sub) => walk(sub, v, path),
            None => match s.get("additionalProperties") {
                Some(Value::Bool(false)) => fail(path, "unexpected property"),
                Some(sub @ Value::Object(_)) => walk(sub, v, path),
                _ => Ok(()),
            },
        };
        checked?;
        path.truncate(len);
    }
    Ok(())
}

fn array(s: &Map<String, Value>, items: &[Value], path: &mut String) -> Result<(), String> {
    let n = items.len() as u64;
    if let Some(min) = s.get("minItems").and_then(Value::as_u64).filter(|m| n < *m) {
        return fail(path, format!("expected at least {min} items, got {n}"));
    }
    if let Some(max) = s.get("maxItems").and_then(Value::as_u64).filter(|m| n > *m) {
        return fail(path, format!("expected at most {max} items, got {n}"));
    }
    if let Some(item_schema) = s.get("items").filter(|i| i.is_object() || i.is_boolean()) {
        for (k, item) in items.iter().enumerate() {
            let len = path.len();
            path.push_str(&format!("[{k}]"));
            walk(item_schema, item, path)?;
            path.truncate(len);
        }
    }
    Ok(())
}

fn number(s: &Map<String, Value>, n: f64, path: &str) -> Result<(), String> {
    let bound = |k: &str| s.get(k).and_then(Value::as_f64);
    if let Some(min) = bound("minimum").filter(|m| n < *m) {
        return fail(path, format!("expected at least {min}, got {n}"));
    }
    if let Some(max) = bound("maximum").filter(|m| n > *m) {
        return fail(path, format!("expected at most {max}, got {n}"));
    }
    if let Some(min) = bound("exclusiveMinimum").filter(|m| n <= *m) {
        return fail(path, format!("expected more than {min}, got {n}"));
    }
    if let Some(max) = bound("exclusiveMaximum").filter(|m| n >= *m) {
        return fail(path, format!("expected less than {max}, got {n}"));
    }
    Ok(())
}

fn combinators(s: &Map<String, Value>, value: &Value, path: &mut String) -> Result<(), String> {
    let list = |k: &str| s.get(k).and_then(Value::as_array);
    if let Some(all) = list("allOf") {
        for sub in all {
            walk(sub, value, path)?;
        }
    }
    if let Some(any) = list("anyOf") {
        let mut first = None;
        if !any.iter().any(|sub| match walk(sub, value, &mut path.clone()) {
            Ok(()) => true,
            Err(e) => {
                first.get_or_insert(e);
                false
            }
        }) {
            return Err(first.unwrap_or_else(|| format!("{path}: matches none of anyOf")));
        }
    }
    if let Some(one) = list("oneOf") {
        let matching = one
            .iter()
            .filter(|sub| walk(sub, value, &mut path.clone()).is_ok())
            .count();
        if matching != 1 {
            return fail(
                path,
                format!("expected to match exactly one of oneOf, matches {matching}"),
            );
        }
    }
    Ok(())
}

/// Every keyword of JSON Schema (2020-12 and draft 7) and OpenAPI's `nullable`: a schema with any other key
/// is a typo (`propertys`) that would silently check nothing.
const KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "definitions",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "nullable",
];
/// Misspellings seen in the wild.
const KEYWORD_HINTS: &[(&str, &str)] = &[
    ("property", "properties"),
    ("propertys", "properties"),
    ("require", "required"),
];
const TYPES: &[&str] = &["string", "number", "integer", "boolean", "object", "array", "null"];

/// Checks that `schema` is a JSON Schema this module can read as its author meant it, when it is defined
/// (a tool's input schema, an agent's output schema): known keywords (and `$…`/`x-…` extensions), type
/// names JSON Schema has, `required` a list of names, subschemas where subschemas go. The problem is named
/// with its path under `root`.
pub(crate) fn check_definition(schema: &Value, root: &str) -> Result<(), String> {
    let s = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(s) => s,
        other => return fail(root, format!("expected a JSON Schema object, got {}", describe(other))),
    };
    for (key, v) in s {
        let at = format!("{root}.{key}");
        if key.starts_with('$') || key.starts_with("x-") {
            continue;
        }
        if !KEYWORDS.contains(&key.as_str()) {
            let hint = crate::options::nearest(key, KEYWORDS, KEYWORD_HINTS)
                .map_or_else(String::new, |k| format!("; did you mean {k:?}?"));
            return fail(&at, format!("unknown JSON Schema keyword{hint}"));
        }
        if key == "type" {
            check_types(v, &at)?;
        }
        if let Some(expected) = value_problem(key, v) {
            return fail(&at, format!("expected {expected}, got {}", describe(v)));
        }
        for (path, sub) in subschemas(key, v, &at) {
            check_definition(sub, &path)?;
        }
    }
    Ok(())
}

fn describe(v: &Value) -> String {
    crate::options::describe(v)
}

/// What the value of keyword `key` must be, when `v` is not that (its subschemas are checked apart).
fn value_problem(key: &str, v: &Value) -> Option<&'static str> {
    let whole = v.as_u64().is_some() || v.as_f64().is_some_and(|f| f >= 0.0 && f.fract() == 0.0);
    let ok = match key {
        "required" => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        "enum" => v.is_array(),
        "properties" | "patternProperties" | "dependentSchemas" | "definitions" => v.is_object(),
        "anyOf" | "oneOf" | "allOf" | "prefixItems" => v.is_array(),
        "minItems" | "maxItems" | "minLength" | "maxLength" | "minProperties" | "maxProperties" | "minContains"
        | "maxContains" => whole,
        // Draft 4 wrote the exclusive bounds as booleans.
        "exclusiveMinimum" | "exclusiveMaximum" => v.is_number() || v.is_boolean(),
        "minimum" | "maximum" | "multipleOf" => v.is_number(),
        _ => true,
    };
    if ok {
        return None;
    }
    Some(match key {
        "required" => "an array of property names",
        "enum" => "an array of values",
        "properties" | "patternProperties" | "dependentSchemas" | "definitions" => "an object of schemas",
        "anyOf" | "oneOf" | "allOf" | "prefixItems" => "an array of schemas",
        "minimum" | "maximum" | "multipleOf" | "exclusiveMinimum" | "exclusiveMaximum" => "a number",
        _ => "a non-negative integer",
    })
}

/// The subschemas in the value of keyword `key`, with their paths.
fn subschemas<'v>(key: &str, v: &'v Value, at: &str) -> Vec<(String, &'v Value)> {
    match (key, v) {
        ("properties" | "patternProperties" | "dependentSchemas" | "definitions", Value::Object(m)) => {
            m.iter().map(|(name, sub)| (format!("{at}.{name}"), sub)).collect()
        }
        // Draft 7 allowed `items` as an array of schemas too.
        ("anyOf" | "oneOf" | "allOf" | "prefixItems" | "items", Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, sub)| (format!("{at}[{i}]"), sub))
            .collect(),
        (
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "additionalItems",
            sub,
        ) => vec![(at.to_owned(), sub)],
        _ => Vec::new(),
    }
}

fn check_types(v: &Value, at: &str) -> Result<(), String> {
    let names: Vec<&Value> = match v {
        Value::Array(list) => list.iter().collect(),
        one => vec![one],
    };
    for name in names {
        match name.as_str() {
            Some(t) if TYPES.contains(&t) => {}
            Some(t) => {
                let hints = [
                    ("str", "string"),
                    ("int", "integer"),
                    ("bool", "boolean"),
                    ("float", "number"),
                    ("list", "array"),
                    ("dict", "object"),
                ];
                let hint = crate::options::nearest(t, TYPES, &hints)
                    .map_or_else(String::new, |n| format!("; did you mean {n:?}?"));
                return fail(
                    at,
                    format!("unknown type {t:?}{hint} (JSON Schema has {})", TYPES.join(", ")),
                );
            }
            None => {
                return fail(
                    at,
                    format!(
                        "expected a type name or an array of them, got {}",
                        crate::options::describe(name)
                    ),
                );
            }
        }
    }
    Ok(())
}

/// An accepted elicitation's `content` against its `requestedSchema` (MCP's flat form schema: an object of
/// strings, numbers, booleans and enums, arrays of strings for a multi-select), with the string formats
/// MCP names (`email`, `uri`, `date`, `date-time`). No content reads as `{}` (a form with nothing
/// required).
pub(crate) fn check_elicited(schema: &Value, content: Option<&Value>, max_depth: usize) -> Result<(), String> {
    let empty = Value::Object(Map::new());
    let content = content.unwrap_or(&empty);
    let Some(o) = content.as_object() else {
        return Err("content: expected an object (the requested schema's properties)".into());
    };
    if crate::limits::value_depth(content) > max_depth.min(3) {
        return Err("content: nested too deep for a form (an object of primitives)".into());
    }
    for (k, v) in o {
        let flat = match v {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
            Value::Array(items) => items.iter().all(Value::is_string),
            _ => false,
        };
        if !flat {
            return Err(format!(
                "content.{k}: expected a string, number, boolean or array of strings, got {}",
                crate::options::describe(v)
            ));
        }
    }
    check(schema, content, "content")?;
    let properties = schema.get("properties").and_then(Value::as_object);
    for (k, p) in properties.into_iter().flatten() {
        if let (Some(format), Some(Value::String(text))) = (p.get("format").and_then(Value::as_str), o.get(k)) {
            if !format_holds(format, text) {
                let what = match format {
                    "email" => "an email address",
                    "uri" => "a URI (scheme:...)",
                    "date" => "a date (YYYY-MM-DD)",
                    _ => "a date-time (RFC 3339, e.g. 2026-11-27T17:00:00Z)",
                };
                return Err(format!("content.{k}: expected {what}, got {text:?}"));
            }
        }
    }
    Ok(())
}

/// Whether `text` is in `format` (those MCP's elicitation schemas name; any other format holds).
fn format_holds(format: &str, text: &str) -> bool {
    match format {
        "email" => email(text),
        "uri" => uri(text),
        "date" => date(text),
        "date-time" => date_time(text),
        _ => true,
    }
}

fn email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `YYYY-MM-DD`, a day that exists.
fn date(text: &str) -> bool {
    let num = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else { return false };
    let (Some(y), Some(m), Some(d)) = (num(y, 4), num(m, 2), num(d, 2)) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339: a date, `T`, `HH:MM:SS` with an optional fraction, and `Z` or an offset `±HH:MM`.
fn date_time(text: &str) -> bool {
    let Some((day, time)) = text.split_once(['T', 't']) else {
        return false;
    };
    let two = |s: &str, max: u32| {
        s.len() == 2 && s.bytes().all(|c| c.is_ascii_digit()) && s.parse::<u32>().is_ok_and(|n| n <= max)
    };
    let clock = |s: &str| {
        let parts: Vec<&str> = s.split(':').collect();
        matches!(parts.as_slice(), [h, m] if two(h, 23) && two(m, 59))
    };
    let (time, zone_ok) = if let Some(t) = time.strip_suffix(['Z', 'z']) {
        (t, true)
    } else if let Some((t, zone)) = time.rsplit_once(['+', '-']) {
        (t, clock(zone))
    } else {
        return false;
    };
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let parts: Vec<&str> = hms.split(':').collect();
    date(day)
        && zone_ok
        && !fraction.is_empty()
        && fraction.bytes().all(|c| c.is_ascii_digit())
        && matches!(parts.as_slice(), [h, m, s] if two(h, 23) && two(m, 59) && two(s, 60))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(schema: Value, value: Value) -> String {
        check(&schema, &value, "input").unwrap_err()
    }

    #[test]
    fn an_elicitation_answer_is_checked_against_mcps_flat_form_schema() {
        let schema = json!({"type": "object", "properties": {
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "seats": {"type": "integer", "minimum": 1, "maximum": 8},
            "name": {"type": "string", "minLength": 2, "maxLength": 5},
            "agree": {"type": "boolean"},
            "size": {"type": "string", "enum": ["s", "m", "l"]},
            "color": {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2}
        }, "required": ["email"]});
        let good = json!({"email": "a@b.co", "site": "https://x.y/z", "day": "2024-02-29", "at": "2026-11-27T17:00:00.5+01:00",
            "seats": 2, "name": "Ada", "agree": true, "size": "m", "color": "#0f0", "tags": ["a", "b"]});
        assert_eq!(check_elicited(&schema, Some(&good), 64), Ok(()));
        assert_eq!(
            check_elicited(
                &schema,
                Some(&json!({"email": "a@b.co", "at": "2026-11-27t17:00:00Z"})),
                64
            ),
            Ok(())
        );
        for (field, bad, says) in [
            ("email", json!("a@b"), "expected an email address"),
            ("email", json!("a b@c.d"), "expected an email address"),
            ("site", json!("not a uri"), "expected a URI"),
            ("day", json!("2023-02-29"), "expected a date (YYYY-MM-DD)"),
            ("day", json!("2026-13-01"), "expected a date (YYYY-MM-DD)"),
            ("at", json!("2026-11-27 17:00:00Z"), "expected a date-time (RFC 3339"),
            ("at", json!("2026-11-27T25:00:00Z"), "expected a date-time (RFC 3339"),
            ("at", json!("2026-11-27T17:00:00"), "expected a date-time (RFC 3339"),
            ("seats", json!(9), "content.seats"),
            ("seats", json!(1.5), "content.seats"),
            ("name", json!("A"), "content.name"),
            ("agree", json!("yes"), "content.agree"),
            ("size", json!("xl"), "content.size"),
            ("color", json!("#00f"), "content.color"),
            ("tags", json!(["c"]), "content.tags"),
            (
                "tags",
                json!([1]),
                "expected a string, number, boolean or array of strings",
            ),
            (
                "name",
                json!({"first": "A"}),
                "expected a string, number, boolean or array of strings",
            ),
        ] {
            let mut v = good.clone();
            v[field] = bad.clone();
            let problem = check_elicited(&schema, Some(&v), 64).expect_err(&format!("{field} = {bad} must be refused"));
            assert!(
                problem.contains(says),
                "{field} = {bad}: {problem:?} should say {says:?}"
            );
        }
        assert!(
            check_elicited(&schema, None, 64)
                .unwrap_err()
                .contains("missing required property \"email\"")
        );
        assert!(
            check_elicited(&schema, Some(&json!("x")), 64)
                .unwrap_err()
                .contains("expected an object")
        );
    }

    #[test]
    fn the_builders_schemas_are_checked() {
        let s = json!({"type": "object", "properties": {
            "q": {"type": "string"}, "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["a", "b"]}, "o": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
        }, "required": ["q"]});
        assert!(
            check(
                &s,
                &json!({"q": "hi", "n": 3, "tags": ["a"], "mode": "a", "o": {"x": 1.5}, "extra": 1}),
                "input"
            )
            .is_ok()
        );
        assert_eq!(err(s.clone(), json!({})), "input: missing required property \"q\"");
        assert_eq!(err(s.clone(), json!({"q": 1})), "input.q: expected string, got integer");
        assert_eq!(
            err(s.clone(), json!({"q": "x", "n": 1.5})),
            "input.n: expected integer, got number"
        );
        assert_eq!(
            err(s.clone(), json!({"q": "x", "tags": ["a", 2]})),
            "input.tags[1]: expected string, got integer"
        );
        assert_eq!(
            err(s.clone(), json!({"q": "x", "mode": "c"})),
            "input.mode: expected one of \"a\", \"b\", got \"c\""
        );
        assert_eq!(
            err(s.clone(), json!({"q": "x", "o": {}})),
            "input.o: missing required property \"x\""
        );
        assert_eq!(err(s, json!("text")), "input: expected object, got string");
    }

    #[test]
    fn bounds_combinators_and_closed_objects() {
        assert!(err(json!({"type": "string", "maxLength": 2}), json!("abc")).contains("at most 2 characters"));
        assert!(err(json!({"type": "number", "minimum": 0}), json!(-1)).contains("at least 0"));
        assert!(
            err(
                json!({"type": "object", "additionalProperties": false}),
                json!({"a": 1})
            )
            .contains("input.a: unexpected property")
        );
        assert!(
            check(
                &json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                &json!(null),
                "x"
            )
            .is_ok()
        );
        assert!(err(json!({"anyOf": [{"type": "string"}, {"type": "null"}]}), json!(1)).contains("expected string"));
        assert!(check(&json!({"type": ["string", "null"]}), &json!(null), "x").is_ok());
        assert!(
            check(&json!({"$ref": "#/defs/x", "format": "email"}), &json!(42), "x").is_ok(),
            "unknown keywords do not refuse"
        );
        assert!(check(&json!({"type": "integer"}), &json!(2.0), "x").is_ok());
    }
}
