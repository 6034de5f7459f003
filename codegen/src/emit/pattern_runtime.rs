// The matcher the generated models use for the `pattern`s that `patterns::compile` can
// prove need no backtracking. This file is emitted into `generated/src/models.rs` as it is
// (inside `mod pattern`), and the codegen's tests run this same source against `regress`.

/// `min..=max` ASCII characters of a set (bit `b` of `set` is byte `b`).
pub struct Step {
    pub set: u128,
    pub min: u32,
    pub max: u32,
    /// A digit run without a leading zero (`(0|[1-9][0-9]*)`): "0" alone, or no leading "0".
    pub canonical: bool,
}

/// An anchored pattern read left to right without backtracking: an optional literal
/// prefix (`^(anon:)?…`), then each step takes as many characters of its set as it may.
/// That is the regex's answer because every step with a range of counts is followed by a
/// step that cannot take the same character, or by the end.
pub struct Ascii {
    /// The literal of a leading `(…)?`; empty when the pattern has none.
    pub optional: &'static [u8],
    pub steps: &'static [Step],
    /// The pattern ends in `$`: the steps must take the whole string.
    pub end: bool,
    /// Some step can take a non-ASCII character (`[^…]`, `\S`): such input goes to the
    /// regex, whose UTF-16 semantics this matcher does not restate.
    pub non_ascii: bool,
}

impl Ascii {
    /// `slow` answers for input this matcher leaves to the regex.
    pub fn is_match(&self, value: &str, slow: impl FnOnce(&str) -> bool) -> bool {
        if self.non_ascii && !value.is_ascii() {
            return slow(value);
        }
        let bytes = value.as_bytes();
        if !self.optional.is_empty()
            && let Some(rest) = bytes.strip_prefix(self.optional)
            && self.steps_match(rest)
        {
            return true;
        }
        self.steps_match(bytes)
    }

    fn steps_match(&self, bytes: &[u8]) -> bool {
        let mut at = 0;
        for step in self.steps {
            let start = at;
            while ((at - start) as u32) < step.max
                && at < bytes.len()
                && bytes[at] < 128
                && (step.set >> bytes[at]) & 1 == 1
            {
                at += 1;
            }
            if ((at - start) as u32) < step.min {
                return false;
            }
            if step.canonical && at - start > 1 && bytes[start] == b'0' {
                return false;
            }
        }
        !self.end || at == bytes.len()
    }
}
