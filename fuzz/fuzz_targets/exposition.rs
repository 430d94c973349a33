//! An exporter's answer as an observer reads it (`iofleet_fleet::scrape`): the HTTP
//! answer taken apart (plain or chunked), its body read as the Prometheus text
//! exposition format, and the samples turned into spans. Anything may be refused; nothing
//! may panic, and a sample read back keeps its name.

#![no_main]

use iofleet_fleet::scrape::{body_of, parse_exposition, ScrapeSpec, Scraper};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = body_of(data);
    let text = iofleet_fuzz::text(data);
    if let Ok(e) = parse_exposition(&text) {
        for s in &e.samples {
            assert!(!s.name.is_empty());
        }
        let mut scraper = Scraper::new(&ScrapeSpec {
            url: "http://127.0.0.1:9283/metrics".into(),
            metrics: e.samples.iter().take(4).map(|s| s.name.clone()).collect(),
        })
        .expect("a sample's name is a metric name");
        let a = scraper.take(&e, 1_000);
        let b = scraper.take(&e, 2_000);
        assert_eq!(a.len(), b.len());
    }
});
