//! "Did you mean …?": the known name closest to a name that matched none, when one is close
//! enough to be a typo of it.
//!
//! Closeness is the optimal string alignment distance (insertions, deletions, substitutions
//! and swaps of two neighbours, each 1) over characters, case ignored: a name is suggested
//! when it is at most a third of the longer name's length away (at least 1, at most 3), so
//! `writefile` finds `write_file` and `raed_file` finds `read_file`, while `x` finds nothing
//! in `["search"]`. Names over [`MAX_CHARS`] characters are never compared (the names come
//! from peers: the work stays bounded).

/// The longest name compared, in characters.
pub(crate) const MAX_CHARS: usize = 256;

/// The candidate closest to `name` when one is close enough (the first of equals, in the
/// candidates' order); `None` when none is, or `name` is itself a candidate.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let wanted: Vec<char> = name.chars().flat_map(char::to_lowercase).collect();
    if wanted.is_empty() || wanted.len() > MAX_CHARS {
        return None;
    }
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == name {
            return None;
        }
        let known: Vec<char> = candidate.chars().flat_map(char::to_lowercase).collect();
        if known.is_empty() || known.len() > MAX_CHARS {
            continue;
        }
        let bound = (wanted.len().max(known.len()) / 3).clamp(1, 3);
        if wanted.len().abs_diff(known.len()) > bound {
            continue;
        }
        let distance = distance(&wanted, &known);
        if distance <= bound && best.is_none_or(|(shortest, _)| distance < shortest) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// `" (did you mean \"x\"?)"` for the closest candidate, or nothing.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    closest(name, candidates)
        .map(|known| format!(" (did you mean {}?)", crate::json::quote(known)))
        .unwrap_or_default()
}

/// The optimal string alignment distance of `a` and `b`.
fn distance(a: &[char], b: &[char]) -> usize {
    // Three rows: the one before the previous (for swaps), the previous, the current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_the_name_they_miss_and_strangers_find_nothing() {
        let tools = ["read_file", "write_file", "delete_file", "search"];
        assert_eq!(closest("writefile", tools), Some("write_file"));
        assert_eq!(closest("raed_file", tools), Some("read_file"));
        assert_eq!(closest("Search", tools), Some("search"));
        assert_eq!(closest("serach", tools), Some("search"));
        assert_eq!(closest("teleport", tools), None);
        assert_eq!(closest("x", tools), None);
        assert_eq!(closest("search", tools), None, "a name that matches");
        assert_eq!(closest("fles", ["files", "search"]), Some("files"));
        let long = "a".repeat(MAX_CHARS + 1);
        assert_eq!(closest(&long, [long.as_str()]), None);
        assert_eq!(
            did_you_mean("writefile", tools),
            " (did you mean \"write_file\"?)"
        );
        assert_eq!(did_you_mean("teleport", tools), "");
    }

    #[test]
    fn the_distance_counts_each_edit_once() {
        let chars = |text: &str| text.chars().collect::<Vec<_>>();
        for (a, b, wanted) in [
            ("", "abc", 3),
            ("abc", "abc", 0),
            ("abc", "acb", 1),
            ("kitten", "sitting", 3),
            ("ca", "abc", 3),
        ] {
            assert_eq!(distance(&chars(a), &chars(b)), wanted, "{a} {b}");
        }
    }
}
