//! rmp_eval_qualify.prom: the latest qualification's answer, per period of its cycle-time sweep — whether the
//! core qualified there, the one-sided 95 % upper bound it proved on cycles outside Great, and the
//! `--confidence` claim it was measured for with whether that held — and the smallest period it qualified at.
//! Written by each monitor pass from the newest result under /var/lib/rmp-eval/qualification, so that a dashboard
//! shows the verdict beside the drift; labels are the core and the period (a closed set: the sweep's periods).

use super::Text;
use crate::report::qualification::Qualification;

pub(crate) fn qualification(q: &Qualification) -> String {
    let core = q.core.to_string();
    let mut t = Text::default();
    t.family(
        "rmp_eval_qualified",
        "gauge",
        "1 when the latest qualification found every cycle Great at this period over a run long enough to judge \
         (and its --confidence claim, if asked, proved), else 0.",
    );
    for p in &q.periods {
        let period = p.period_us.to_string();
        let labels = [("core", core.as_str()), ("period_us", period.as_str())];
        t.sample("rmp_eval_qualified", &labels, f64::from(u8::from(p.passed)));
    }
    t.family(
        "rmp_eval_qualified_outside_great_per_hour_at_most",
        "gauge",
        "The latest qualification's one-sided 95 % upper bound on cycles outside Great per hour at this period.",
    );
    for p in &q.periods {
        if let Some(tail) = &p.outside_great {
            let period = p.period_us.to_string();
            let labels = [("core", core.as_str()), ("period_us", period.as_str())];
            t.sample(
                "rmp_eval_qualified_outside_great_per_hour_at_most",
                &labels,
                tail.per_hour_at_most,
            );
        }
    }
    claims(&mut t, q, &core);
    if let Some(nic) = &q.nic {
        round_trips(&mut t, q, &core, nic);
    }
    t.family(
        "rmp_eval_qualified_smallest_period_seconds",
        "gauge",
        "The smallest period the latest qualification qualified the core at (0: none).",
    );
    let smallest = q
        .smallest_safe_period_us
        .map_or(0.0, |p| f64::from(p) / 1e6);
    t.sample(
        "rmp_eval_qualified_smallest_period_seconds",
        &[("core", core.as_str())],
        smallest,
    );
    t.into_string()
}

/// The --confidence claim of each period (cycles outside Great per hour) and whether the run proved it.
fn claims(t: &mut Text, q: &Qualification, core: &str) {
    let with: Vec<_> = q
        .periods
        .iter()
        .filter_map(|p| p.claim.map(|c| (p.period_us.to_string(), c)))
        .collect();
    if with.is_empty() {
        return;
    }
    t.family(
        "rmp_eval_qualified_claim_per_hour",
        "gauge",
        "The --confidence claim the latest qualification measured this period for: fewer cycles outside Great per \
         hour than this, at 95 %.",
    );
    for (period, c) in &with {
        let labels = [("core", core), ("period_us", period.as_str())];
        t.sample("rmp_eval_qualified_claim_per_hour", &labels, c.per_hour);
    }
    t.family(
        "rmp_eval_qualified_claim_held",
        "gauge",
        "1 when the run proved the --confidence claim at this period, 0 when a cycle outside Great broke it.",
    );
    for (period, c) in &with {
        let labels = [("core", core), ("period_us", period.as_str())];
        t.sample(
            "rmp_eval_qualified_claim_held",
            &labels,
            f64::from(u8::from(c.held)),
        );
    }
}

/// With --nic: per period, the bound proved on cycles missed on the wire and the longest round trip.
fn round_trips(t: &mut Text, q: &Qualification, core: &str, nic: &str) {
    let rows: Vec<_> = q
        .periods
        .iter()
        .filter_map(|p| {
            let rtt = p.result.as_ref()?.rtt.as_ref()?;
            Some((p.period_us.to_string(), p.missed_round_trips.as_ref()?, rtt))
        })
        .collect();
    t.family(
        "rmp_eval_qualified_missed_per_hour_at_most",
        "gauge",
        "The latest qualification's one-sided 95 % upper bound on cycles missed on the wire per hour at this period \
         (a reply later than the period, lost, or with another working counter; --nic).",
    );
    for (period, m, _) in &rows {
        let labels = [("core", core), ("nic", nic), ("period_us", period.as_str())];
        t.sample(
            "rmp_eval_qualified_missed_per_hour_at_most",
            &labels,
            m.per_hour_at_most,
        );
    }
    t.family(
        "rmp_eval_qualified_round_trip_max_seconds",
        "gauge",
        "The longest round trip to the SubDevice the latest qualification measured at this period (--nic).",
    );
    for (period, _, rtt) in &rows {
        let labels = [("core", core), ("nic", nic), ("period_us", period.as_str())];
        t.sample(
            "rmp_eval_qualified_round_trip_max_seconds",
            &labels,
            rtt.max_us / 1e6,
        );
    }
}
