//! docs/profiles.md must be exactly what `reference_markdown()` generates.
//!
//! To refresh it run `cargo run -p iofleet -- profiles reference > docs/profiles.md`, or
//! `IOFLEET_BLESS=1 cargo test -p iofleet-profile --test reference`.

use iofleet_profile::reference_markdown;

#[test]
fn docs_profiles_md_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/profiles.md");
    let expected = reference_markdown();
    if std::env::var_os("IOFLEET_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/profiles.md is out of date with the option table or the built-in profiles; \
         regenerate it with `cargo run -p iofleet -- profiles reference > docs/profiles.md` \
         (or `IOFLEET_BLESS=1 cargo test -p iofleet-profile --test reference`)"
    );
}
