//! User-given text made safe to print: run names, labels, host and profile names, paths
//! and anything else a user (or a colleague sharing the results store) typed can carry
//! control characters that rewrite a terminal (`ESC ]0;…BEL` retitles it, `ESC [2J`
//! clears it) or Unicode bidi controls that make text read in another order than it is
//! stored. `escape` is the one function that makes such characters visible; every
//! terminal printer goes through it, either per cell (where a column's width must be
//! known: `width` measures the escaped text) or as a whole through `Escaped`, a writer
//! that escapes what passes through it and keeps only line breaks.
//!
//! Escaped: C0 controls (U+0000–U+001F: `\t`, `\n`, `\r`, the rest `\xNN`), DEL (`\x7f`),
//! C1 controls (U+0080–U+009F) and the bidi embeddings, overrides and isolates
//! (U+202A–U+202E, U+2066–U+2069), as `\u{NNNN}`. Everything else, backslashes included,
//! is printed as it is: escaping never changes ordinary text. JSON output needs none of
//! this (serde escapes control characters) and does not use it; HTML has its own
//! escaping (`html`).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Whether `c` is printed escaped.
pub fn is_unsafe(c: char) -> bool {
    // C0, DEL and C1 controls; the bidi embeddings, overrides and isolates; and the
    // bidi marks (LRM, RLM, ALM), which reorder what follows them as well.
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{61c}'
    )
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\u{0}'..='\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        _ => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

fn escape_but(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) && !keep(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` with every control and bidi character made visible (`\x1b`, `\n`, `\u{202e}`):
/// one line of plain text, whatever `s` holds.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_but(s, |_| false)
}

/// `escape`, but line breaks are kept: for messages of several lines (errors, tables)
/// that were composed around user-given text.
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    escape_but(s, |c| c == '\n')
}

/// Columns `s` takes once printed escaped (`µ` and `–` are one column, not their byte
/// count; a control character is the length of its escape).
pub fn width(s: &str) -> usize {
    escape(s).chars().count()
}

/// A writer that escapes what passes through it as `escape_lines` does. Text may arrive
/// in any pieces: a character cut between two writes is held until its end arrives, and
/// bytes that are not UTF-8 are written as `\xNN`.
pub struct Escaped<W: Write> {
    inner: W,
    /// The start of a character whose remaining bytes have not arrived yet (≤ 3 bytes).
    pending: Vec<u8>,
}

impl<W: Write> Escaped<W> {
    pub fn new(inner: W) -> Self {
        Escaped {
            inner,
            pending: Vec::new(),
        }
    }

    /// Escape and write out `pending` up to its last complete character.
    fn drain(&mut self, at_end: bool) -> io::Result<()> {
        let mut done = 0;
        let mut text = String::new();
        while done < self.pending.len() {
            match std::str::from_utf8(&self.pending[done..]) {
                Ok(s) => {
                    text.push_str(&escape_lines(s));
                    done = self.pending.len();
                }
                Err(e) => {
                    let valid = &self.pending[done..done + e.valid_up_to()];
                    // The first `valid_up_to` bytes are UTF-8 by definition.
                    let s = std::str::from_utf8(valid).unwrap_or_default();
                    text.push_str(&escape_lines(s));
                    done += e.valid_up_to();
                    match e.error_len() {
                        Some(n) => {
                            for b in &self.pending[done..done + n] {
                                let _ = write!(text, "\\x{b:02x}");
                            }
                            done += n;
                        }
                        // A character cut short: wait for the rest, unless nothing more
                        // is coming.
                        None if !at_end => break,
                        None => {
                            for b in &self.pending[done..] {
                                let _ = write!(text, "\\x{b:02x}");
                            }
                            done = self.pending.len();
                        }
                    }
                }
            }
        }
        self.pending.drain(..done);
        self.inner.write_all(text.as_bytes())
    }
}

impl<W: Write> Write for Escaped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.drain(false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain(true)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Escaped<W> {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let _ = self.drain(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_made_visible() {
        assert_eq!(escape("\u{1b}]0;pwned\u{7}"), "\\x1b]0;pwned\\x07");
        assert_eq!(escape("a\tb\nc\rd\u{7f}"), "a\\tb\\nc\\rd\\x7f");
        assert_eq!(escape("x\u{9b}31m"), "x\\u{9b}31m");
        assert_eq!(escape("abc\u{202e}fed\u{2066}"), "abc\\u{202e}fed\\u{2066}");
        assert_eq!(escape_lines("a\nb\u{1b}"), "a\nb\\x1b");
    }

    #[test]
    fn bidi_marks_are_made_visible() {
        assert_eq!(
            escape("l\u{200e}r\u{200f}a\u{61c}"),
            "l\\u{200e}r\\u{200f}a\\u{61c}"
        );
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        for s in [
            "plain",
            "µs – 4k/60:64k/40",
            "C:\\path\\x1b",
            "名前",
            "\u{200b}",
        ] {
            assert!(matches!(escape(s), Cow::Borrowed(t) if t == s), "{s}");
        }
        assert_eq!(width("µs"), 2);
        assert_eq!(width("a\u{1b}"), 5);
    }

    #[test]
    fn the_writer_escapes_characters_cut_between_writes() {
        let text = "run \u{1b}[2J\u{202e} µ\n\u{9b}end";
        let bytes = text.as_bytes();
        // Every way of cutting the text in two gives the same output.
        for cut in 0..=bytes.len() {
            let mut out = Vec::new();
            {
                let mut w = Escaped::new(&mut out);
                w.write_all(&bytes[..cut]).unwrap();
                w.write_all(&bytes[cut..]).unwrap();
                w.flush().unwrap();
            }
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "run \\x1b[2J\\u{202e} µ\n\\u{9b}end",
                "cut at {cut}"
            );
        }
        // Bytes that are not UTF-8, and a character never finished.
        let mut out = Vec::new();
        {
            let mut w = Escaped::new(&mut out);
            w.write_all(b"a\x9bb\xe2\x80").unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), "a\\x9bb\\xe2\\x80");
    }
}
