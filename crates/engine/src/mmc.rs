//! The analytic model of a simulated device under Poisson load: the M/M/c queue (`c`
//! servers, exponential service of rate μ each, first come first served, Poisson
//! arrivals of rate λ). A `sim` device with `dist=exp` fed by open-loop clients issuing
//! at a rate (Poisson arrivals, the default `timing.arrival`) is exactly this queue, and
//! with `shared=NAME` the clients of a whole fleet feed one such queue, so the latency a
//! fleet-size search measures can be checked against these formulas.
//!
//! - Erlang C, the probability that an arrival waits: with offered load a = λ/μ < c,
//!   `C(c, a) = (aᶜ/c! · c/(c−a)) / (Σ_{k<c} aᵏ/k! + aᶜ/c! · c/(c−a))`.
//! - The response (sojourn) time T = wait + service: with probability 1 − C no wait;
//!   with probability C a wait Exp(cμ − λ), then a service Exp(μ). So
//!   `P(T > t) = (1 − C)·e^{−μt} + C·(θe^{−μt} − μe^{−θt})/(θ − μ)` with θ = cμ − λ
//!   (`C·(1 + μt)e^{−μt}` when θ = μ).
//! - For c = 1 this is T ~ Exp(μ − λ): the p99 is `ln(100)/(μ − λ)`.
//!
//! Quantiles are found by bisection on the tail; nothing here measures anything.

/// Erlang C: the probability that an arrival waits in an M/M/c queue with offered load
/// `a` = λ/μ Erlangs (1 when a ≥ c: the queue grows without bound).
pub fn erlang_c(c: u32, a: f64) -> f64 {
    if a >= c as f64 {
        return 1.0;
    }
    // Terms aᵏ/k! built one from the other (no factorial overflows for large c).
    let mut term = 1.0;
    let mut below = 0.0;
    for k in 0..c {
        below += term;
        term *= a / (k + 1) as f64;
    }
    let top = term * c as f64 / (c as f64 - a);
    top / (below + top)
}

/// P(T > `t` s): the response time's tail with arrivals `lambda`/s, `c` servers of
/// `mu`/s each.
pub fn response_tail(t: f64, lambda: f64, c: u32, mu: f64) -> f64 {
    let wait = erlang_c(c, lambda / mu);
    let theta = c as f64 * mu - lambda;
    if theta <= 0.0 {
        return 1.0;
    }
    let both = if (theta - mu).abs() < 1e-9 * mu {
        (1.0 + mu * t) * (-mu * t).exp()
    } else {
        (theta * (-mu * t).exp() - mu * (-theta * t).exp()) / (theta - mu)
    };
    (1.0 - wait) * (-mu * t).exp() + wait * both
}

/// The `q`-quantile of the response time, s (infinite past saturation, λ ≥ cμ).
pub fn response_quantile(q: f64, lambda: f64, c: u32, mu: f64) -> f64 {
    if lambda >= c as f64 * mu {
        return f64::INFINITY;
    }
    let mut hi = 1.0 / mu;
    while response_tail(hi, lambda, c, mu) > 1.0 - q {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let m = (lo + hi) / 2.0;
        if response_tail(m, lambda, c, mu) > 1.0 - q {
            lo = m;
        } else {
            hi = m;
        }
    }
    hi
}

/// The highest arrival rate (/s) whose `q`-quantile response time is at most `limit` s
/// (the quantile grows with λ); 0 when even an idle device misses it.
pub fn max_rate(q: f64, limit: f64, c: u32, mu: f64) -> f64 {
    if response_quantile(q, 0.0, c, mu) > limit {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, c as f64 * mu);
    for _ in 0..200 {
        let m = (lo + hi) / 2.0;
        if response_quantile(q, m, c, mu) <= limit {
            lo = m;
        } else {
            hi = m;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_c_matches_known_values() {
        // c = 1: an arrival waits exactly when the server is busy, with probability ρ.
        assert!((erlang_c(1, 0.7) - 0.7).abs() < 1e-12);
        // c = 2, a = 1: (1/2 · 2) / (1 + 1 + 1) = 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        // c = 3, a = 2: (8/6 · 3) / (1 + 2 + 2 + 4) = 4/9.
        assert!((erlang_c(3, 2.0) - 4.0 / 9.0).abs() < 1e-12);
        // Tables give C(10, 8) = 0.409 (to three places).
        assert!(
            (erlang_c(10, 8.0) - 0.409).abs() < 5e-4,
            "{}",
            erlang_c(10, 8.0)
        );
        assert_eq!(erlang_c(4, 4.0), 1.0);
    }

    #[test]
    fn mm1_p99_is_ln100_over_the_spare_rate() {
        for (lambda, mu) in [(500.0, 1000.0), (2_000.0, 4_000.0), (10.0, 5_000.0)] {
            let p99 = response_quantile(0.99, lambda, 1, mu);
            let want = 100f64.ln() / (mu - lambda);
            assert!(
                (p99 - want).abs() / want < 1e-9,
                "{lambda} {mu}: {p99} {want}"
            );
        }
        // The highest rate whose p99 is 3 ms: μ − ln(100)/0.003.
        let want = 4_000.0 - 100f64.ln() / 0.003;
        assert!((max_rate(0.99, 0.003, 1, 4_000.0) - want).abs() < 1e-6);
    }

    #[test]
    fn an_idle_mmc_answers_with_its_service_alone() {
        // No load: no wait, the response is one exponential service.
        let p99 = response_quantile(0.99, 0.0, 4, 1_000.0);
        assert!((p99 - 100f64.ln() / 1_000.0).abs() < 1e-9, "{p99}");
        // More servers at the same load wait less.
        let two = response_quantile(0.99, 1_500.0, 2, 1_000.0);
        let four = response_quantile(0.99, 1_500.0, 4, 1_000.0);
        assert!(four < two, "{four} {two}");
        // Saturated: no finite quantile; an objective below the bare service: no rate.
        assert!(response_quantile(0.99, 4_000.0, 4, 1_000.0).is_infinite());
        assert_eq!(max_rate(0.99, 0.001, 4, 1_000.0), 0.0);
        // The rate found meets the objective, and a rate 1% higher does not.
        let r = max_rate(0.99, 0.010, 4, 1_000.0);
        assert!(response_quantile(0.99, r, 4, 1_000.0) <= 0.010 + 1e-12);
        assert!(response_quantile(0.99, r * 1.01, 4, 1_000.0) > 0.010);
    }
}
