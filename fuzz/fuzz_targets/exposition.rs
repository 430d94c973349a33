//! An exporter's answer as an observer reads it (`iofleet_fleet::scrape`): the HTTP
//! answer taken apart (plain or chunked), its body read as the Prometheus text
//! exposition format, and the samples turned into spans. Anything may be refused; nothing
//! may panic, and a sample read back keeps its name.

#![no_main]

use iofleet_fleet::scrape::{body_of, parse_exposition, parse_metric, ScrapeSpec, Scraper};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = body_of(data);
    let text = iofleet_fuzz::text(data);
    if let Ok(e) = parse_exposition(&text) {
        for s in &e.samples {
            assert!(!s.name.is_empty());
        }
        let mut scraper = Scraper::new(&ScrapeSpec {
            url: "http://127.0.0.1:9283/metrics".into(),
            // A sample's name read as an entry (`latency:NAME` among them; a
            // `latency_x:` prefix of no known unit is an entry refused, not a panic).
            metrics: e
                .samples
                .iter()
                .map(|s| s.name.clone())
                .filter(|n| parse_metric(n).is_ok())
                .take(4)
                .collect(),
        })
        .expect("an entry parse_metric took is a metric");
        let a = scraper.take(&e, 1_000);
        let b = scraper.take(&e, 2_000);
        assert_eq!(a.len(), b.len());
    }
});
