//! JSON values as JSON Schema compares them: numbers by mathematical value (integers exactly,
//! `1 == 1.0`), arrays item by item, objects key by key. Equality never recurses (an instance
//! built in Rust can be deeper than any stack), and reports the work it did so that the
//! validator can charge it to its step budget.

use std::cmp::Ordering;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Number, Value};

/// A JSON number: an exact integer, or a float that is not one.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Num {
    /// Every `i64` and `u64` fits.
    Int(i128),
    /// Any other number serde_json holds (always finite).
    Float(f64),
}

impl Num {
    #[inline]
    pub(crate) fn of(number: &Number) -> Num {
        if let Some(unsigned) = number.as_u64() {
            Num::Int(i128::from(unsigned))
        } else if let Some(signed) = number.as_i64() {
            Num::Int(i128::from(signed))
        } else {
            Num::Float(number.as_f64().unwrap_or(0.0))
        }
    }

    /// True for a number with no fractional part; a float like `1.0` counts only when
    /// `floats_count` (draft 6 and later).
    pub(crate) fn is_integer(self, floats_count: bool) -> bool {
        match self {
            Num::Int(_) => true,
            Num::Float(float) => floats_count && float.is_finite() && float.fract() == 0.0,
        }
    }
}

/// Compares an integer with a float exactly (no rounding of large integers to f64).
fn compare_int_float(integer: i128, float: f64) -> Ordering {
    if float.is_nan() {
        return Ordering::Equal;
    }
    // Beyond ±2^100 no i64/u64 can reach; inside it the floor of the float is exact in i128.
    if float >= 1e30 {
        return Ordering::Less;
    }
    if float <= -1e30 {
        return Ordering::Greater;
    }
    let floor = float.floor();
    let floor_int = floor as i128;
    match integer.cmp(&floor_int) {
        Ordering::Equal if float > floor => Ordering::Less,
        other => other,
    }
}

/// Orders two numbers by value.
#[inline]
pub(crate) fn compare(left: Num, right: Num) -> Ordering {
    match (left, right) {
        (Num::Int(a), Num::Int(b)) => a.cmp(&b),
        (Num::Float(a), Num::Float(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (Num::Int(a), Num::Float(b)) => compare_int_float(a, b),
        (Num::Float(a), Num::Int(b)) => compare_int_float(b, a).reverse(),
    }
}

/// A number as `mantissa * 10^exponent`, from the shortest decimal that reads back as the
/// same f64 (so 0.1 is 1e-1, not 0.1000000000000000055…).
fn decimal(number: Num) -> (u128, i32) {
    match number {
        Num::Int(integer) => (integer.unsigned_abs(), 0),
        Num::Float(float) => {
            let text = format!("{:e}", float.abs());
            let (digits, exponent) = text.split_once('e').unwrap_or((&text, "0"));
            let exponent: i32 = exponent.parse().unwrap_or(0);
            let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
            let mantissa = format!("{whole}{fraction}").parse().unwrap_or(0);
            (mantissa, exponent - fraction.len() as i32)
        }
    }
}

/// `value * 10^power`, or `None` on overflow.
fn scale(value: u128, power: i32) -> Option<u128> {
    let factor = 10u128.checked_pow(u32::try_from(power).ok()?)?;
    value.checked_mul(factor)
}

/// True when `value` is an integer multiple of `divisor` (which is positive). Decimal, so
/// that 0.3 is a multiple of 0.1; a float quotient only past u128 range, where it cannot be
/// an integer unless it is exactly representable anyway.
pub(crate) fn is_multiple_of(value: Num, divisor: Num) -> bool {
    if let (Num::Int(a), Num::Int(b)) = (value, divisor) {
        return b != 0 && a % b == 0;
    }
    let (value_mantissa, value_exponent) = decimal(value);
    let (divisor_mantissa, divisor_exponent) = decimal(divisor);
    if value_mantissa == 0 {
        return true;
    }
    if divisor_mantissa == 0 {
        return false;
    }
    let common = value_exponent.min(divisor_exponent);
    match (
        scale(value_mantissa, value_exponent - common),
        scale(divisor_mantissa, divisor_exponent - common),
    ) {
        (Some(scaled_value), Some(scaled_divisor)) => scaled_value % scaled_divisor == 0,
        _ => {
            let as_float = |number: Num| match number {
                Num::Int(integer) => integer as f64,
                Num::Float(float) => float,
            };
            let quotient = as_float(value) / as_float(divisor);
            quotient.is_finite() && quotient.fract() == 0.0
        }
    }
}

/// JSON Schema equality. Adds to `work` one per value pair compared.
#[inline]
pub(crate) fn equal(left: &Value, right: &Value, work: &mut u64) -> bool {
    match (left, right) {
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            equal_containers(left, right, work)
        }
        (Value::Number(a), Value::Number(b)) => {
            *work += 1;
            compare(Num::of(a), Num::of(b)) == Ordering::Equal
        }
        _ => {
            // Scalars of different types, or of one type that `==` compares as JSON Schema
            // does (strings, booleans, null), need no stack.
            *work += 1;
            left == right
        }
    }
}

/// [`equal`] for two arrays or two objects, with its own stack.
fn equal_containers(left: &Value, right: &Value, work: &mut u64) -> bool {
    let mut pending: Vec<(&Value, &Value)> = vec![(left, right)];
    while let Some((left, right)) = pending.pop() {
        *work += 1;
        match (left, right) {
            (Value::Null, Value::Null) => {}
            (Value::Bool(a), Value::Bool(b)) if a == b => {}
            (Value::String(a), Value::String(b)) if a == b => {}
            (Value::Number(a), Value::Number(b))
                if compare(Num::of(a), Num::of(b)) == Ordering::Equal => {}
            (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
                pending.extend(a.iter().zip(b));
            }
            (Value::Object(a), Value::Object(b)) if a.len() == b.len() => {
                for (key, item) in a {
                    match b.get(key) {
                        Some(other) => pending.push((item, other)),
                        None => return false,
                    }
                }
            }
            _ => return false,
        }
    }
    true
}

/// Below this depth a hash looks at the value's structure; deeper parts all hash alike, which
/// only makes `equal` settle more of the comparisons.
const HASH_DEPTH: usize = 16;

/// A hash consistent with [`equal`]: equal values hash alike (key order and `1` vs `1.0`
/// do not matter). Adds to `work` one per value hashed.
pub(crate) fn hash(value: &Value, work: &mut u64) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_into(value, HASH_DEPTH, work, &mut hasher);
    hasher.finish()
}

fn hash_into(value: &Value, depth: usize, work: &mut u64, hasher: &mut DefaultHasher) {
    *work += 1;
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(flag) => (1u8, flag).hash(hasher),
        Value::Number(number) => {
            2u8.hash(hasher);
            match Num::of(number) {
                Num::Int(integer) => integer.hash(hasher),
                Num::Float(float) if float.fract() == 0.0 && float.abs() < 1e30 => {
                    (float as i128).hash(hasher);
                }
                Num::Float(float) => float.to_bits().hash(hasher),
            }
        }
        Value::String(text) => (3u8, text).hash(hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(hasher);
            if depth > 0 {
                for item in items {
                    hash_into(item, depth - 1, work, hasher);
                }
            }
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(hasher);
            if depth > 0 {
                // Entries are combined by a sum, so that their order never matters.
                let mut sum = 0u64;
                for (key, item) in map {
                    let mut entry = DefaultHasher::new();
                    key.hash(&mut entry);
                    hash_into(item, depth - 1, work, &mut entry);
                    sum = sum.wrapping_add(entry.finish());
                }
                sum.hash(hasher);
            }
        }
    }
}

/// The first pair of equal items `(i, j)`, `i < j`, if any: hashes sorted, then equal hashes
/// compared, so O(n log n) for any array. Adds the work to `work`.
pub(crate) fn first_duplicate(items: &[Value], work: &mut u64) -> Option<(usize, usize)> {
    if items.len() < 2 {
        return None;
    }
    if items.len() <= 8 {
        for later in 1..items.len() {
            for earlier in 0..later {
                if equal(&items[earlier], &items[later], work) {
                    return Some((earlier, later));
                }
            }
        }
        return None;
    }
    let mut hashed: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(index, item)| (hash(item, work), index))
        .collect();
    hashed.sort_unstable();
    *work += items.len() as u64;
    let mut found: Option<(usize, usize)> = None;
    let mut start = 0;
    while start < hashed.len() {
        let mut end = start + 1;
        while end < hashed.len() && hashed[end].0 == hashed[start].0 {
            end += 1;
        }
        for later in start + 1..end {
            for earlier in start..later {
                let (a, b) = (hashed[earlier].1, hashed[later].1);
                if equal(&items[a], &items[b], work) {
                    let pair = (a.min(b), a.max(b));
                    if found.is_none_or(|best| pair < best) {
                        found = Some(pair);
                    }
                }
            }
        }
        start = end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(value: Value) -> Num {
        Num::of(value.as_number().unwrap())
    }

    #[test]
    fn numbers_compare_exactly() {
        assert_eq!(compare(num(json!(1)), num(json!(1.0))), Ordering::Equal);
        assert_eq!(
            compare(
                num(json!(9007199254740993u64)),
                num(json!(9007199254740992.0))
            ),
            Ordering::Greater
        );
        assert_eq!(compare(num(json!(-1)), num(json!(-0.5))), Ordering::Less);
        assert_eq!(compare(num(json!(2.5)), num(json!(2))), Ordering::Greater);
        assert_eq!(
            compare(num(json!(u64::MAX)), num(json!(1e300))),
            Ordering::Less
        );
    }

    #[test]
    fn multiples_are_decimal() {
        assert!(is_multiple_of(num(json!(0.3)), num(json!(0.1))));
        assert!(is_multiple_of(num(json!(4.5)), num(json!(1.5))));
        assert!(!is_multiple_of(num(json!(35)), num(json!(1.5))));
        assert!(is_multiple_of(num(json!(0.0075)), num(json!(0.0001))));
        assert!(!is_multiple_of(num(json!(0.00751)), num(json!(0.0001))));
        assert!(!is_multiple_of(num(json!(1e308)), num(json!(0.123456789))));
        assert!(is_multiple_of(num(json!(12391239123u64)), num(json!(1e-8))));
        assert!(is_multiple_of(num(json!(10)), num(json!(5))));
        assert!(!is_multiple_of(num(json!(7)), num(json!(2))));
        assert!(is_multiple_of(num(json!(-0.6)), num(json!(0.2))));
    }

    #[test]
    fn equality_and_hashes_ignore_key_order_and_number_form() {
        let mut work = 0;
        let a = json!({"a": [1, {"b": null}], "c": "x"});
        let b = json!({"c": "x", "a": [1.0, {"b": null}]});
        assert!(equal(&a, &b, &mut work));
        assert_eq!(hash(&a, &mut work), hash(&b, &mut work));
        assert!(!equal(&json!([1]), &json!([true]), &mut work));
        assert!(!equal(&json!({"a": 1}), &json!({"b": 1}), &mut work));
        assert!(work > 0);
    }

    #[test]
    fn duplicates_are_found_in_any_array() {
        let mut work = 0;
        let mut items: Vec<Value> = (0..1000).map(|index| json!({"n": index})).collect();
        assert_eq!(first_duplicate(&items, &mut work), None);
        items.push(json!({"n": 5.0}));
        assert_eq!(first_duplicate(&items, &mut work), Some((5, 1000)));
        assert_eq!(
            first_duplicate(&[json!(1), json!(1.0)], &mut work),
            Some((0, 1))
        );
    }
}
