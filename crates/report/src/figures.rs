//! The text of a figure that may be unknown: its value with so many decimals, or `–` when
//! a run did not measure it. The one renderer of that dash for the comparison tables, the
//! conventions' figures, the text table and the reports; a module of its own so that
//! none of them imports another for it.

/// A possibly unknown figure with one decimal, `–` when unknown.
pub fn opt1(v: Option<f64>) -> String {
    opt_fixed(v, 1)
}

/// A possibly unknown figure with `digits` decimals, `–` when unknown.
pub fn opt_fixed(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_figure_has_its_decimals_and_an_unknown_one_a_dash() {
        assert_eq!(opt_fixed(Some(0.6666), 2), "0.67");
        assert_eq!(opt1(Some(12.34)), "12.3");
        assert_eq!(opt1(None), "–");
    }
}
