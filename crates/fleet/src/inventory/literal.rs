//! Values of INI inventory variables, typed as Ansible types them. Ansible's INI reader
//! hands every value to Python's `ast.literal_eval` and keeps the text when that fails:
//! `8` is a number, `'8'` a string, `['/dev/a', '/dev/b']` a list, `/dev/a` text.
//!
//! This evaluates the literals inventories use: integers (decimal, `0x`/`0o`/`0b`,
//! `_` separators, a sign), floats, `True`/`False`/`None`, quoted strings with the
//! common escapes, lists, tuples and dicts of these. Anything else (names, paths,
//! addresses, Python's rarer forms such as complex numbers or `b''` prefixes) stays
//! text, so the reader never fails on a value. It does not execute anything.

use serde_json::{Map, Number, Value};

/// `text` as Ansible's INI reader types it.
pub fn eval(text: &str) -> Value {
    let mut p = Parser {
        s: text.trim_start_matches([' ', '\t']).as_bytes(),
        i: 0,
        depth: 0,
    };
    match p.value() {
        Some(v) => {
            p.ws();
            // Python reads `#` after a value as a comment.
            if p.i == p.s.len() || p.peek() == Some(b'#') {
                v
            } else {
                Value::String(text.to_string())
            }
        }
        None => Value::String(text.to_string()),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Nesting so far: past `MAX_DEPTH` the value is kept as text, so a pathological
    /// `[[[[…` cannot exhaust the stack.
    depth: u32,
}

const MAX_DEPTH: u32 = 64;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let v = self.value_inner();
        self.depth -= 1;
        v
    }

    fn value_inner(&mut self) -> Option<Value> {
        self.ws();
        match self.peek()? {
            b'\'' | b'"' => {
                // Adjacent literals join, as in Python: 'it''s' is "its".
                let mut text = self.string()?;
                loop {
                    self.ws();
                    match self.peek() {
                        Some(b'\'' | b'"') => text.push_str(&self.string()?),
                        _ => return Some(Value::String(text)),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.sequence(b']').map(Value::Array)
            }
            b'(' => {
                self.i += 1;
                self.sequence(b')').map(Value::Array)
            }
            b'{' => {
                self.i += 1;
                self.dict()
            }
            b'+' | b'-' => {
                let neg = self.peek() == Some(b'-');
                self.i += 1;
                match self.value()? {
                    Value::Number(n) if neg => negate(&n),
                    v @ Value::Number(_) => Some(v),
                    _ => None,
                }
            }
            c if c.is_ascii_digit() || c == b'.' => self.number(),
            _ => self.word(),
        }
    }

    /// Items up to `close`, comma-separated, trailing comma allowed.
    fn sequence(&mut self, close: u8) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Some(items);
            }
            items.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(close).then_some(items);
            }
        }
    }

    fn dict(&mut self) -> Option<Value> {
        let mut map = Map::new();
        loop {
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            let key = match self.value()? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            if !self.eat(b':') {
                return None;
            }
            map.insert(key, self.value()?);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(Value::Object(map));
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.s[self.i];
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            match c {
                c if c == quote => break,
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    let simple = match e {
                        b'n' => Some(b'\n'),
                        b't' => Some(b'\t'),
                        b'r' => Some(b'\r'),
                        b'a' => Some(0x07),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'v' => Some(0x0b),
                        b'\\' | b'\'' | b'"' => Some(e),
                        _ => None,
                    };
                    let code = |p: &mut Self, digits: usize, radix: u32| {
                        let d = p.s.get(p.i..p.i + digits)?;
                        if !d.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        let v = u32::from_str_radix(std::str::from_utf8(d).ok()?, radix).ok()?;
                        p.i += digits;
                        char::from_u32(v)
                    };
                    let ch = match e {
                        _ if simple.is_some() => None,
                        b'x' => Some(code(self, 2, 16)?),
                        b'u' => Some(code(self, 4, 16)?),
                        b'U' => Some(code(self, 8, 16)?),
                        b'0'..=b'7' => {
                            self.i -= 1;
                            let n = self.s[self.i..]
                                .iter()
                                .take(3)
                                .take_while(|c| (b'0'..=b'7').contains(c))
                                .count();
                            Some(code(self, n, 8)?)
                        }
                        // \N{name} needs Unicode's name table: leave the value as text.
                        b'N' => return None,
                        // Python keeps an unknown escape as written.
                        _ => {
                            out.push(b'\\');
                            out.push(e);
                            None
                        }
                    };
                    if let Some(b) = simple {
                        out.push(b);
                    }
                    if let Some(c) = ch {
                        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).ok()
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'))
            || (self.i > start
                && matches!(self.s[self.i - 1], b'e' | b'E')
                && matches!(self.peek(), Some(b'+' | b'-'))
                && !self.s[start..].starts_with(b"0x"))
        {
            self.i += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        if word.starts_with('_') || word.ends_with('_') || word.contains("__") {
            return None;
        }
        let digits = word.replace('_', "");
        let radix = |prefix: &[&str], r: u32| {
            prefix
                .iter()
                .find_map(|p| digits.strip_prefix(p))
                .map(|rest| i64::from_str_radix(rest, r).ok())
        };
        let int = radix(&["0x", "0X"], 16)
            .or_else(|| radix(&["0o", "0O"], 8))
            .or_else(|| radix(&["0b", "0B"], 2));
        if let Some(v) = int {
            return v.map(Value::from);
        }
        if digits.bytes().all(|c| c.is_ascii_digit()) {
            // Python refuses leading zeros in a decimal integer ("007").
            if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|c| c != b'0') {
                return None;
            }
            return digits.parse::<i64>().ok().map(Value::from);
        }
        if digits
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return digits
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number);
        }
        None
    }

    fn word(&mut self) -> Option<Value> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        match &self.s[start..self.i] {
            b"True" => Some(Value::Bool(true)),
            b"False" => Some(Value::Bool(false)),
            b"None" => Some(Value::Null),
            _ => None,
        }
    }
}

fn negate(n: &Number) -> Option<Value> {
    if let Some(i) = n.as_i64() {
        Some(Value::from(-i))
    } else {
        n.as_f64()
            .and_then(|f| Number::from_f64(-f))
            .map(Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::eval;
    use serde_json::json;

    #[test]
    fn literals_are_typed_and_everything_else_stays_text() {
        for (text, want) in [
            ("8", json!(8)),
            ("-3", json!(-3)),
            ("0x1f", json!(31)),
            ("1_000", json!(1000)),
            ("1.5", json!(1.5)),
            ("1e3", json!(1000.0)),
            ("True", json!(true)),
            ("None", json!(null)),
            ("'8'", json!("8")),
            ("\"a b\"", json!("a b")),
            ("['/dev/a', \"/dev/b\",]", json!(["/dev/a", "/dev/b"])),
            ("(1, 2)", json!([1, 2])),
            ("'it''s'", json!("its")),
            ("'\\x41\\u00e9\\101\\q'", json!("AéA\\q")),
            ("{'rack': 'r1', 'n': 2}", json!({"rack": "r1", "n": 2})),
            ("007", json!("007")),
            ("/data", json!("/data")),
            ("10.0.0.1", json!("10.0.0.1")),
            ("root", json!("root")),
            ("true", json!("true")),
            ("'open", json!("'open")),
            ("[1, 2", json!("[1, 2")),
            ("1 2", json!("1 2")),
            ("8   # a number", json!(8)),
            ("/srv # kept", json!("/srv # kept")),
        ] {
            assert_eq!(eval(text), want, "{text}");
        }
    }

    #[test]
    fn deep_nesting_is_kept_as_text_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert_eq!(eval(&deep), serde_json::Value::String(deep.clone()));
        let signs = format!("{}1", "-+".repeat(50_000));
        assert_eq!(eval(&signs), serde_json::Value::String(signs.clone()));
    }
}
